package io.sluice.bootstrap.replay;

import io.sluice.config.SluiceConfig;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.session.Signals;
import io.sluice.core.session.Subject;
import org.jspecify.annotations.Nullable;

/**
 * The {@link Subject} a policy gives a request named by its pool, class, tenant and route, as a
 * replay and a recorded run build it: the tenant's tier as the policy's {@code tenants} say, the
 * deadline the class's or the client's (the earlier), the hold the pool's {@code
 * maxMessageTimeout}, shadow as the pool's mode.
 */
final class Subjects {
  private final SluiceConfig config;

  Subjects(SluiceConfig config) {
    this.config = config;
  }

  /**
   * The subject, or null when the tenant is unknown and the policy refuses unknown tenants.
   *
   * @param clientDeadlineNanos the client's own deadline after arrival (0: none)
   */
  @Nullable Subject of(
      PoolPolicy pool,
      ClassPolicy cls,
      String tenantId,
      String route,
      String format,
      long arrivalNanos,
      long clientDeadlineNanos) {
    Tenant tenant = tenant(tenantId);
    if (tenant == null) {
      return null;
    }
    long deadline = cls.deadline().toNanos();
    if (clientDeadlineNanos > 0) {
      deadline = Math.min(deadline, clientDeadlineNanos);
    }
    return new Subject(
        route,
        pool,
        cls,
        format(format),
        tenant,
        arrivalNanos,
        arrivalNanos + deadline,
        null,
        pool.maxMessageTimeout().toNanos(),
        config.poolModes().get(pool.name()) == SluiceConfig.Mode.SHADOW,
        0,
        null,
        Signals.NONE);
  }

  private @Nullable Tenant tenant(String id) {
    SluiceConfig.Tenants tc = config.tenants();
    if (id.isEmpty() || id.equals(Tenant.ANONYMOUS)) {
      return new Tenant(Tenant.ANONYMOUS, tier(tc.anonymousTier()));
    }
    String known = tc.known().get(id);
    if (known != null) {
      return new Tenant(id, tier(known));
    }
    return tc.unknown() == SluiceConfig.UnknownAction.REJECT
        ? null
        : new Tenant(id, tier(tc.unknownTier()));
  }

  private TierPolicy tier(String name) {
    TierPolicy t = config.tiers().get(name);
    return t != null ? t : config.tiers().values().iterator().next();
  }

  private static RequestFormat format(String name) {
    try {
      return name.isEmpty() ? RequestFormat.OPENAI_CHAT : RequestFormat.fromConfigName(name);
    } catch (IllegalArgumentException e) {
      return RequestFormat.OPENAI_CHAT;
    }
  }
}
