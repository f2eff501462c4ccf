package io.sluice.core.queue;

import java.util.Objects;
import java.util.function.DoubleSupplier;
import java.util.random.RandomGenerator;

/**
 * Turns a predicted duration (queue drain for 503, bucket refill for 429) into a {@code
 * Retry-After} value in whole seconds: {@code ceil(ceil(nanos / 1e9) * (1 + jitter * (2u - 1)))},
 * clamped to {@code [minSeconds, maxSeconds]}, where {@code u} is uniform in [0, 1). Jitter spreads
 * refused clients so they do not return in one wave. Never below 1 second.
 *
 * <p>Thread-safe if the supplied random source is (for example {@code
 * ThreadLocalRandom::nextDouble} via {@link #withRandom}).
 */
public final class RetryAfter {
  public static final long DEFAULT_MIN_SECONDS = 1;
  public static final long DEFAULT_MAX_SECONDS = 300;
  public static final double DEFAULT_JITTER = 0.2;

  private final long minSeconds;
  private final long maxSeconds;
  private final double jitter;
  private final DoubleSupplier uniform;

  /**
   * @param minSeconds lower clamp, {@code >= 1}
   * @param maxSeconds upper clamp, {@code >= minSeconds}
   * @param jitter relative jitter in [0, 1): 0.2 means ±20%
   * @param uniform source of values in [0, 1)
   */
  public RetryAfter(long minSeconds, long maxSeconds, double jitter, DoubleSupplier uniform) {
    if (minSeconds < 1) {
      throw new IllegalArgumentException("minSeconds: " + minSeconds + " (expected: >= 1)");
    }
    if (maxSeconds < minSeconds) {
      throw new IllegalArgumentException(
          "maxSeconds: " + maxSeconds + " (expected: >= minSeconds " + minSeconds + ")");
    }
    if (!(jitter >= 0 && jitter < 1)) {
      throw new IllegalArgumentException("jitter: " + jitter + " (expected: >= 0 and < 1)");
    }
    this.minSeconds = minSeconds;
    this.maxSeconds = maxSeconds;
    this.jitter = jitter;
    this.uniform = Objects.requireNonNull(uniform, "uniform");
  }

  /** Defaults: [1 s, 300 s], ±20% jitter, drawing from {@code random}. */
  public static RetryAfter withRandom(RandomGenerator random) {
    Objects.requireNonNull(random, "random");
    return new RetryAfter(
        DEFAULT_MIN_SECONDS, DEFAULT_MAX_SECONDS, DEFAULT_JITTER, random::nextDouble);
  }

  /** {@code ceil(nanos / 1e9)}, 0 for non-positive input. */
  public static long ceilSeconds(long nanos) {
    if (nanos <= 0) {
      return 0;
    }
    return nanos / 1_000_000_000L + (nanos % 1_000_000_000L == 0 ? 0 : 1);
  }

  /** The Retry-After value for a predicted wait of {@code nanos}. */
  public long seconds(long nanos) {
    long base = Math.max(minSeconds, ceilSeconds(nanos));
    double u = uniform.getAsDouble();
    double factor = 1 + jitter * (2 * Math.min(Math.max(u, 0), 1) - 1);
    double jittered = Math.ceil(Math.min(base, maxSeconds) * factor);
    return Math.max(minSeconds, Math.min(maxSeconds, (long) jittered));
  }

  public long minSeconds() {
    return minSeconds;
  }

  public long maxSeconds() {
    return maxSeconds;
  }

  public double jitter() {
    return jitter;
  }
}
