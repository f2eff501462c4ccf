package io.sluice.core.admission;

import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.queue.RetryAfter;
import java.util.function.DoubleSupplier;

/**
 * The Retry-After values one pool gives its refusals, in whole seconds, clamped to the pool's
 * {@code retryAfter} bounds and jittered ({@link RetryAfter}). Three bases:
 *
 * <ul>
 *   <li>{@link #seconds(long)}: a predicted duration (a queue drain, a wait) from the wait
 *       predictor;
 *   <li>{@link #forWork}: {@code work} units at the pool's recent completion rate (capacity and
 *       class-share refusals);
 *   <li>{@link #forHold}: the mean permit hold time (a tenant's concurrency cap frees one slot when
 *       one of its requests ends).
 * </ul>
 *
 * <p>Owns the pool's {@link CompletionRate}, fed on every release. Not thread-safe: guarded by the
 * pool lock. Time is an argument.
 */
final class RetryAdvice {
  private static final long NANOS_PER_SECOND = 1_000_000_000L;

  private final CompletionRate completionRate;
  private final DoubleSupplier uniform;
  private RetryAfter retryAfter;
  private long minNanos;
  private long floorNanos; // the rest of an upstream pause: no Retry-After of the pool is shorter

  /** With the clamps and jitter of {@code policy}; no completion seen yet. */
  RetryAdvice(long rateTauNanos, DoubleSupplier uniform, PoolPolicy policy) {
    this.completionRate = new CompletionRate(rateTauNanos);
    this.uniform = uniform;
    this.retryAfter = retryAfter(policy, uniform);
    this.minNanos = policy.retryAfterMin().toNanos();
  }

  /** Takes the pool's clamps and jitter. */
  void reconfigure(PoolPolicy policy) {
    this.retryAfter = retryAfter(policy, uniform);
    this.minNanos = policy.retryAfterMin().toNanos();
  }

  private static RetryAfter retryAfter(PoolPolicy policy, DoubleSupplier uniform) {
    long min = Math.max(1, ceilSeconds(policy.retryAfterMin().toNanos()));
    return new RetryAfter(
        min, Math.max(min, policy.retryAfterMax().toSeconds()), policy.retryAfterJitter(), uniform);
  }

  /** A permit of {@code work} units was held {@code holdNanos} and released at {@code nowNanos}. */
  void onRelease(long work, long holdNanos, long nowNanos) {
    completionRate.onCompletion(work, holdNanos, nowNanos);
  }

  /**
   * No Retry-After is shorter than {@code nanos} from now on (the rest of a pause an upstream's
   * Retry-After started; 0: none), until the next call.
   */
  void floor(long nanos) {
    this.floorNanos = Math.max(0, nanos);
  }

  /** Retry-After for a predicted duration. */
  long seconds(long nanos) {
    return floored(retryAfter.seconds(Math.max(nanos, floorNanos)));
  }

  /** Jitter and the pool's upper clamp never take a Retry-After below an upstream pause. */
  private long floored(long seconds) {
    return floorNanos > 0 ? Math.max(seconds, ceilSeconds(floorNanos)) : seconds;
  }

  /** Seconds until {@code work} units should have drained at the recent completion rate. */
  long forWork(long work, long nowNanos) {
    return seconds(workNanos(work, nowNanos));
  }

  /** Nanoseconds until {@code work} units should have drained (before clamping and jitter). */
  long workNanos(long work, long nowNanos) {
    double rate = completionRate.workPerSecond(nowNanos);
    double seconds = rate > 0 ? work / rate : minNanos / (double) NANOS_PER_SECOND;
    return (long) Math.min(MAX_RETRY_NANOS, seconds * NANOS_PER_SECOND);
  }

  /** Seconds until a typical in-flight request completes (per-tenant caps). */
  long forHold() {
    return seconds(holdNanos());
  }

  /** Nanoseconds a typical in-flight request is held (before clamping and jitter). */
  long holdNanos() {
    double holdNanos = completionRate.meanHoldNanos();
    return holdNanos > 0 ? (long) Math.min(MAX_RETRY_NANOS, holdNanos) : minNanos;
  }

  double completedWorkPerSecond(long nowNanos) {
    return completionRate.workPerSecond(nowNanos);
  }

  double startedWorkPerSecond(long nowNanos) {
    return completionRate.startedWorkPerSecond(nowNanos);
  }

  double meanHoldNanos() {
    return completionRate.meanHoldNanos();
  }

  private static final long MAX_RETRY_NANOS = Long.MAX_VALUE / 2;

  private static long ceilSeconds(long nanos) {
    return (nanos + NANOS_PER_SECOND - 1) / NANOS_PER_SECOND;
  }
}
