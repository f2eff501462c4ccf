package io.sluice.core.session;

import io.sluice.core.admission.Reason;
import io.sluice.core.quota.QuotaCheck;
import io.sluice.core.quota.TenantQuotas;
import java.time.Clock;
import java.util.concurrent.CompletionStage;

/**
 * The tenant's request budget (requests per minute), first, at the request headers: one token per
 * request, never given back; refused {@code tenant_rate} when the budget is used up.
 */
final class TenantRateCheck implements AdmissionCheck<QuotaCheck> {
  private final TenantQuotas quotas;
  private final Clock clock;
  private final SessionListener listener;

  TenantRateCheck(TenantQuotas quotas, Clock clock, SessionListener listener) {
    this.quotas = quotas;
    this.clock = clock;
    this.listener = listener;
  }

  @Override
  public Stage stage() {
    return Stage.HEADERS;
  }

  @Override
  public boolean applies(Request r) {
    return TenantQuotas.hasRequestBudget(r.subject().tenant().tier());
  }

  @Override
  public CompletionStage<QuotaCheck> ask(Request r) {
    return quotas.takeRequest(r.subject().tenant(), clock.millis());
  }

  @Override
  public Verdict answered(QuotaCheck check, Request r) {
    countStoreFailure(listener, check);
    if (check.allowed()) {
      return Continue.INSTANCE;
    }
    return new Refusal(
        Reason.TENANT_RATE,
        429,
        retryAfterSeconds(check.retryAfterMillis()),
        "tenant request budget (requests per minute) is used up");
  }

  /** A tenant bucket's store did not answer: counted by how the failure mode answered. */
  static void countStoreFailure(SessionListener listener, QuotaCheck check) {
    if (check.storeFailed()) {
      listener.on(
          check.allowed()
              ? SessionEvent.QuotaStoreFailed.OPEN
              : SessionEvent.QuotaStoreFailed.CLOSED);
    }
  }

  /** A bucket's refill time as a Retry-After: whole seconds, at least 1. */
  static long retryAfterSeconds(long millis) {
    return Math.max(1, (millis + 999) / 1000);
  }
}
