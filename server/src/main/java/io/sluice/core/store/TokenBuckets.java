package io.sluice.core.store;

/**
 * The token-bucket arithmetic shared by every store (the Redis Lua script mirrors it). A state is
 * {@code (tokens, updatedAtMillis)}; time going backwards refills nothing.
 */
public final class TokenBuckets {
  private TokenBuckets() {}

  /** Tokens after refilling from {@code updatedAtMillis} to {@code nowMillis}. */
  public static double refill(
      TokenBucketSpec spec, double tokens, long updatedAtMillis, long nowMillis) {
    long elapsed = nowMillis - updatedAtMillis;
    if (elapsed <= 0) {
      return tokens;
    }
    return Math.min(spec.capacity(), tokens + elapsed * spec.tokensPerMilli());
  }

  /** Whether {@code requested} tokens can be taken now (0 = check: at least one token). */
  public static boolean fits(double tokens, long requested) {
    return tokens >= Math.max(1, requested);
  }

  /** Milliseconds until {@code requested} tokens are available (full refill time if never). */
  public static long retryAfterMillis(TokenBucketSpec spec, double tokens, long requested) {
    long need = Math.max(1, requested);
    if (need > spec.capacity()) {
      return fullAfterMillis(spec, tokens);
    }
    return Math.max(0, (long) Math.ceil((need - tokens) / spec.tokensPerMilli()));
  }

  /** Milliseconds until the bucket is full again. */
  public static long fullAfterMillis(TokenBucketSpec spec, double tokens) {
    return Math.max(0, (long) Math.ceil((spec.capacity() - tokens) / spec.tokensPerMilli()));
  }
}
