package io.sluice.bootstrap;

import io.grpc.BindableService;
import io.sluice.config.PermitsSection;
import io.sluice.config.SluiceConfig;
import io.sluice.core.permit.PermitDesk;
import io.sluice.core.permit.PermitsPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.session.CheckChain;
import io.sluice.observability.PermitMetrics;
import io.sluice.permit.PermitService;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The permit API ({@code sluice.v1.Permits}, docs/permits.md) when {@code permits.enabled} at
 * start: one {@link PermitDesk} on the process's controller (the pools' own decisions, shares and
 * tier caps) and the snapshot's pre-decision checks in force, its leases recorded in the stores'
 * {@code permitLeases} (memory, or Redis: renewed and released at any replica), expired every
 * {@link #EXPIRY_MILLIS} on the housekeeping thread, its service bound on the gRPC port, every
 * lease given back at shutdown. A caller's tenant gets its tier as a request's would ({@code
 * tenants.known}, else {@code tenants.unknownTier}) in the config in force.
 */
final class PermitApi implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(PermitApi.class);

  /** How often leases past their time are expired (the lease's slack). */
  static final long EXPIRY_MILLIS = 500;

  private final @Nullable PermitDesk desk;

  private PermitApi(@Nullable PermitDesk desk) {
    this.desk = desk;
  }

  /** The API of {@code config}'s {@code permits} section: none when it is off. */
  static PermitApi of(
      SluiceConfig config,
      Supplier<SluiceConfig> current,
      ProcessServices s,
      Supplier<@Nullable CheckChain> checks) {
    PermitsPolicy p = config.section(PermitsSection.SECTION);
    if (!p.enabled()) {
      return new PermitApi(null);
    }
    PermitMetrics metrics = new PermitMetrics(s.registry);
    PermitDesk desk =
        new PermitDesk(
            s.controller,
            id -> tenant(current.get(), id),
            s.ticker,
            p.lease().toNanos(),
            p.maxLeases(),
            new PermitDesk.Shared(
                s.store.stores.permitLeases(), config.quotas().keyPrefix(), checks, metrics));
    metrics.held(desk::leases);
    var unused =
        s.housekeeping.scheduleWithFixedDelay(
            () -> {
              try {
                var unusedExpiry =
                    desk.expireDue()
                        .whenComplete(
                            (n, e) -> {
                              if (e != null) {
                                LOG.warn("permits: lease expiry: {}", e.toString());
                              }
                            });
              } catch (RuntimeException e) {
                LOG.warn("permits: lease expiry: {}", e.toString());
              }
            },
            EXPIRY_MILLIS,
            EXPIRY_MILLIS,
            TimeUnit.MILLISECONDS);
    return new PermitApi(desk);
  }

  /** {@code id}'s tenant, its tier as a request of {@code config} would get. */
  static Tenant tenant(SluiceConfig config, String id) {
    SluiceConfig.Tenants t = config.tenants();
    String tier = t.known().getOrDefault(id, t.unknownTier());
    TierPolicy tp = config.tiers().get(tier);
    return new Tenant(id, tp != null ? tp : TierPolicy.defaults(tier));
  }

  /** The gRPC services to bind: the permit service, or none. */
  List<BindableService> services() {
    return desk == null ? List.of() : List.of(new PermitService(desk));
  }

  /** Leases held now (0 when off). */
  int leases() {
    return desk == null ? 0 : desk.leases();
  }

  /** Every lease back to its pool (shutdown). */
  @Override
  public void close() {
    if (desk != null) {
      desk.close();
    }
  }
}
