package io.sluice.core.store;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * One store backend holding both fixed-window counters and token buckets (the in-memory store, or
 * Redis). The bootstrap builds it once per process and hands the same instance to the rate limit
 * service and to the tenant quotas, so both see the same counters.
 */
public interface KeyValueStore extends CounterStore, TokenBucketStore {
  @Override
  StoreHealth health();

  /** Whether the store lives in this process (its stages are complete when a call returns). */
  @Override
  default boolean inProcess() {
    return false;
  }

  /**
   * Completes when the store is ready for real calls: for a networked store, connected and {@code
   * rounds} throwaway calls answered on keys under {@code keyPrefix} (so the first real calls do
   * not pay for class loading and connection set-up); fails with the first error. At once for a
   * store in this process.
   */
  default CompletionStage<Void> warmUp(String keyPrefix, int rounds) {
    return CompletableFuture.completedFuture(null);
  }

  /**
   * How long one command may take before the store fails it ({@link Duration#ZERO} for a store in
   * this process, which answers at once). Callers size their own safety nets from it.
   */
  default Duration commandTimeout() {
    return Duration.ZERO;
  }

  /** How long to wait before retrying a failed warm-up or connection. */
  default Duration retryInterval() {
    return Duration.ofSeconds(1);
  }
}
