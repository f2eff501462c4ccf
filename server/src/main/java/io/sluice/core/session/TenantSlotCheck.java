package io.sluice.core.session;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Reason;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.TenantQuotas;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * A capped tenant's slot across replicas ({@link TenantCaps}: a shared store and a tier {@code
 * maxInFlight}), after the token reservation: one store round trip; refused {@code
 * tenant_concurrency} when the tenant holds its cap across replicas (or, failure mode closed, the
 * store did not answer). The pool's own per-replica check still runs after it. A slot granted is
 * given back exactly once; a shadow pass holds none. In the chain only with a shared store.
 */
final class TenantSlotCheck implements AdmissionCheck<TenantCaps.SlotCheck> {
  private final TenantCaps caps;
  private final TenantQuotas quotas;
  private final AdmissionController controller;
  private final SessionListener listener;

  TenantSlotCheck(
      TenantCaps caps, TenantQuotas quotas, AdmissionController controller, SessionListener l) {
    this.caps = caps;
    this.quotas = quotas;
    this.controller = controller;
    this.listener = l;
  }

  @Override
  public Stage stage() {
    return Stage.ESTIMATE;
  }

  @Override
  public boolean applies(Request r) {
    return caps.applies(r.subject().tenant().tier());
  }

  @Override
  public CompletionStage<TenantCaps.SlotCheck> ask(Request r) {
    Subject s = r.subject();
    return caps.acquire(s.pool().name(), s.tenant(), quotas.failureMode());
  }

  @Override
  public Verdict answered(TenantCaps.SlotCheck c, Request r) {
    Subject s = r.subject();
    String pool = s.pool().name();
    listener.on(
        new SessionEvent.TenantSlot(
            pool,
            c.storeFailed()
                ? SessionEvent.TenantSlot.STORE_FAILED
                : c.granted() ? SessionEvent.TenantSlot.GRANTED : SessionEvent.TenantSlot.DENIED));
    if (c.storeFailed()) {
      listener.on(
          c.allowed() ? SessionEvent.QuotaStoreFailed.OPEN : SessionEvent.QuotaStoreFailed.CLOSED);
    }
    Refusal refusal = c.allowed() ? null : refusal(c, s, pool);
    if (c.granted()) {
      return new Slot(caps, pool, s.tenant().id(), refusal);
    }
    return refusal != null ? refusal : Continue.INSTANCE;
  }

  private Refusal refusal(TenantCaps.SlotCheck c, Subject s, String pool) {
    int cap = s.tenant().tier().maxInFlight();
    return new Refusal(
        Reason.TENANT_CONCURRENCY,
        429,
        c.storeFailed() ? 1 : controller.tenantRetryAfterSeconds(pool),
        c.storeFailed()
            ? "tenant concurrency cap across replicas: the store did not answer"
                + " (quotas.failureMode closed)"
            : s.tenant()
                .capRefusal(
                    "tenant has "
                        + c.total()
                        + " requests in flight or waiting across replicas (cap "
                        + cap
                        + ")"));
  }

  /** One of the tenant's slots in the pool, granted by the store. */
  static final class Slot extends Held {
    private final TenantCaps caps;
    private final String pool;
    private final String tenant;
    private final @Nullable Refusal refusal;

    Slot(TenantCaps caps, String pool, String tenant, @Nullable Refusal refusal) {
      this.caps = caps;
      this.pool = pool;
      this.tenant = tenant;
      this.refusal = refusal;
    }

    @Override
    public @Nullable Refusal refusal() {
      return refusal;
    }

    @Override
    protected void release(Release how) {
      caps.release(pool, tenant);
    }
  }
}
