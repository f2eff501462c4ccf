package io.sluice.core.store;

import java.util.concurrent.CompletionStage;

/**
 * Token buckets keyed by string, for per-tenant RPM/TPM budgets and the RLS token-bucket algorithm.
 * The caller passes wall time ({@code nowMillis}) so that replicas agree on refill when the store
 * is shared and tests control time.
 *
 * <p>Reserve-then-reconcile: {@link #take} the estimate before the work (denied when not enough
 * tokens, nothing taken), then {@link #charge} the difference once the actual usage is known
 * (positive = overcharge the bucket, may go into debt; negative = refund, capped at capacity). Each
 * operation is atomic per key, so concurrent callers cannot overshoot by reading stale values.
 */
public interface TokenBucketStore {
  /**
   * Takes {@code tokens} if available. {@code tokens == 0} is a check: granted when at least one
   * token is available, nothing taken.
   */
  CompletionStage<TokenBucketResult> take(
      String key, TokenBucketSpec spec, long tokens, long nowMillis);

  /** Adds {@code tokens} to the usage unconditionally (negative refunds). Always granted. */
  CompletionStage<TokenBucketResult> charge(
      String key, TokenBucketSpec spec, long tokens, long nowMillis);

  StoreHealth health();

  /** Whether the buckets live in this process (see {@link CounterStore#inProcess}). */
  default boolean inProcess() {
    return false;
  }
}
