package io.sluice.core.store;

/**
 * A token bucket: holds at most {@code capacity} tokens and refills {@code refillTokens} every
 * {@code refillPeriodMillis}, continuously (fractionally). A bucket starts full.
 */
public record TokenBucketSpec(long capacity, long refillTokens, long refillPeriodMillis) {
  public TokenBucketSpec {
    if (capacity <= 0) {
      throw new IllegalArgumentException("capacity: " + capacity + " (expected: > 0)");
    }
    if (refillTokens <= 0) {
      throw new IllegalArgumentException("refillTokens: " + refillTokens + " (expected: > 0)");
    }
    if (refillPeriodMillis <= 0) {
      throw new IllegalArgumentException(
          "refillPeriodMillis: " + refillPeriodMillis + " (expected: > 0)");
    }
  }

  /** Tokens added per millisecond. */
  public double tokensPerMilli() {
    return (double) refillTokens / refillPeriodMillis;
  }

  /**
   * Milliseconds an idle bucket needs to refill from empty; stores expire idle buckets after it.
   */
  public long fullRefillMillis() {
    return (long) Math.ceil(capacity / tokensPerMilli());
  }
}
