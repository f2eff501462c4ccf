package io.sluice.core.store;

/**
 * Outcome of a bucket operation.
 *
 * @param granted whether the tokens were taken (always true for {@link TokenBucketStore#charge})
 * @param tokens tokens left after the operation, may be negative after a charge (debt)
 * @param retryAfterMillis when not granted: time until the requested tokens are available (the full
 *     refill time if they can never fit); when granted: 0
 * @param fullAfterMillis time until the bucket is full again
 */
public record TokenBucketResult(
    boolean granted, double tokens, long retryAfterMillis, long fullAfterMillis) {}
