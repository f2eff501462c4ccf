package io.sluice.core.quota;

import io.sluice.core.admission.Reason;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.store.TokenBucketResult;
import io.sluice.core.store.TokenBucketSpec;
import io.sluice.core.store.TokenBucketStore;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Per-tenant request and token budgets (RPM, input TPM, output TPM from the tenant's tier) on a
 * shared {@link TokenBucketStore}, so they hold across replicas.
 *
 * <p>Reserve, then reconcile: the request's RPM token is taken at request headers; its estimated
 * input tokens and output reserve are taken at the body, atomically per bucket, so concurrent
 * requests cannot overshoot a budget by reading stale counters; when the response ends, the
 * difference between actual usage and the reservation is charged (or refunded). A request refused
 * later (pool saturated, queue timeout) gets its token reservation back.
 *
 * <p>Store failures follow {@link FailureMode}: {@code OPEN} lets the request through, {@code
 * CLOSED} refuses it (429 with a short Retry-After). Both are counted by the adapter.
 */
public final class TenantQuotas {
  /** What to do when the store does not answer. */
  public enum FailureMode {
    OPEN,
    CLOSED
  }

  private static final long MINUTE_MILLIS = 60_000L;

  private final TokenBucketStore store;
  private final String keyPrefix;
  private final FailureMode failureMode;

  public TenantQuotas(TokenBucketStore store, String keyPrefix, FailureMode failureMode) {
    this.store = store;
    this.keyPrefix = keyPrefix;
    this.failureMode = failureMode;
  }

  /** What a store failure does ({@code quotas.failureMode}); the tenant slots follow it too. */
  public FailureMode failureMode() {
    return failureMode;
  }

  /** True when the tier has any budget (so adapters can skip the store entirely). */
  public static boolean hasRequestBudget(TierPolicy tier) {
    return tier.requestsPerMinute() > 0;
  }

  public static boolean hasTokenBudget(TierPolicy tier) {
    return tier.inputTokensPerMinute() > 0 || tier.outputTokensPerMinute() > 0;
  }

  private static TokenBucketSpec perMinute(long budget) {
    return new TokenBucketSpec(budget, budget, MINUTE_MILLIS);
  }

  private String key(Tenant t, String kind) {
    return keyPrefix + "tenant_" + t.id() + "_" + kind;
  }

  /** Takes one request from the tenant's RPM bucket. */
  public CompletionStage<QuotaCheck> takeRequest(Tenant tenant, long nowMillis) {
    long rpm = tenant.tier().requestsPerMinute();
    if (rpm <= 0) {
      return CompletableFuture.completedFuture(QuotaCheck.ALLOWED);
    }
    return guard(
        store
            .take(key(tenant, "rpm"), perMinute(rpm), 1, nowMillis)
            .thenApply(r -> verdict(r, Reason.TENANT_RATE)));
  }

  /**
   * Reserves the estimate in the input and output TPM buckets. If the output bucket refuses after
   * the input bucket granted, the input reservation is refunded.
   */
  public CompletionStage<QuotaCheck> reserveTokens(
      Tenant tenant, long inputTokens, long outputTokens, long nowMillis) {
    TierPolicy tier = tenant.tier();
    CompletionStage<QuotaCheck> input =
        tier.inputTokensPerMinute() > 0 && inputTokens > 0
            ? store
                .take(
                    key(tenant, "itpm"),
                    perMinute(tier.inputTokensPerMinute()),
                    Math.min(inputTokens, tier.inputTokensPerMinute()),
                    nowMillis)
                .thenApply(r -> verdict(r, Reason.TENANT_TOKENS))
            : CompletableFuture.completedFuture(QuotaCheck.ALLOWED);
    return guard(
        input.thenCompose(
            in -> {
              if (!in.allowed() || tier.outputTokensPerMinute() <= 0 || outputTokens <= 0) {
                return CompletableFuture.completedFuture(in);
              }
              return store
                  .take(
                      key(tenant, "otpm"),
                      perMinute(tier.outputTokensPerMinute()),
                      Math.min(outputTokens, tier.outputTokensPerMinute()),
                      nowMillis)
                  .thenApply(r -> verdict(r, Reason.TENANT_TOKENS))
                  .thenApply(
                      out -> {
                        if (!out.allowed() && tier.inputTokensPerMinute() > 0 && inputTokens > 0) {
                          refund(
                              tenant, "itpm", tier.inputTokensPerMinute(), inputTokens, nowMillis);
                        }
                        return out;
                      });
            }));
  }

  /**
   * Charges the difference between actual usage and the reservation (negative = refund). With no
   * reported usage ({@code reported = false}) the reservation stands.
   */
  public CompletionStage<Reconciliation> reconcile(
      Tenant tenant,
      long reservedInput,
      long reservedOutput,
      long actualInput,
      long actualOutput,
      boolean reported,
      long nowMillis) {
    if (!reported) {
      return CompletableFuture.completedFuture(Reconciliation.NONE);
    }
    TierPolicy tier = tenant.tier();
    long dIn = actualInput - reservedInput;
    long dOut = actualOutput - reservedOutput;
    CompletableFuture<Void> a = CompletableFuture.completedFuture(null);
    if (tier.inputTokensPerMinute() > 0 && dIn != 0) {
      a =
          store
              .charge(key(tenant, "itpm"), perMinute(tier.inputTokensPerMinute()), dIn, nowMillis)
              .thenAccept(r -> {})
              .toCompletableFuture();
    }
    CompletableFuture<Void> b = CompletableFuture.completedFuture(null);
    if (tier.outputTokensPerMinute() > 0 && dOut != 0) {
      b =
          store
              .charge(key(tenant, "otpm"), perMinute(tier.outputTokensPerMinute()), dOut, nowMillis)
              .thenAccept(r -> {})
              .toCompletableFuture();
    }
    Reconciliation result =
        new Reconciliation(dIn + dOut < 0 ? -(dIn + dOut) : 0, Math.max(0, dIn + dOut));
    return CompletableFuture.allOf(a, b).handle((v, e) -> result);
  }

  /** Gives a whole token reservation back (the request was refused or never started). */
  public void release(Tenant tenant, long reservedInput, long reservedOutput, long nowMillis) {
    TierPolicy tier = tenant.tier();
    if (tier.inputTokensPerMinute() > 0 && reservedInput > 0) {
      refund(tenant, "itpm", tier.inputTokensPerMinute(), reservedInput, nowMillis);
    }
    if (tier.outputTokensPerMinute() > 0 && reservedOutput > 0) {
      refund(tenant, "otpm", tier.outputTokensPerMinute(), reservedOutput, nowMillis);
    }
  }

  private void refund(Tenant tenant, String kind, long budget, long tokens, long nowMillis) {
    store.charge(key(tenant, kind), perMinute(budget), -Math.min(tokens, budget), nowMillis);
  }

  /** Tokens refunded and overcharged by a reconciliation (for the reconciliation metrics). */
  public record Reconciliation(long refunded, long overcharged) {
    public static final Reconciliation NONE = new Reconciliation(0, 0);
  }

  private static QuotaCheck verdict(TokenBucketResult r, Reason reason) {
    return r.granted()
        ? QuotaCheck.ALLOWED
        : new QuotaCheck(false, reason, r.retryAfterMillis(), false);
  }

  private CompletionStage<QuotaCheck> guard(CompletionStage<QuotaCheck> stage) {
    return stage.handle(
        (r, e) -> {
          if (e == null) {
            return r;
          }
          return failureMode == FailureMode.OPEN
              ? new QuotaCheck(true, Reason.ADMITTED, 0, true)
              : new QuotaCheck(false, Reason.TENANT_RATE, 1000, true);
        });
  }
}
