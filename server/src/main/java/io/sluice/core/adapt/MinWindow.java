package io.sluice.core.adapt;

/**
 * The minimum of the values offered over a sliding window of time (a no-load latency baseline):
 * {@code BUCKETS} buckets of {@code window / BUCKETS} each hold their own minimum, and a bucket
 * older than the window is forgotten, so a baseline that rose for good (a larger model, longer
 * prompts) is learned within one window. Not thread-safe. Time is an argument.
 */
final class MinWindow {
  private static final int BUCKETS = 8;

  private final long bucketNanos;
  private final double[] min = new double[BUCKETS];
  private final long[] start = new long[BUCKETS];
  private int current = -1;

  MinWindow(long windowNanos) {
    this.bucketNanos = Math.max(1, windowNanos / BUCKETS);
  }

  /** Offers {@code value} (> 0) seen at {@code now}. */
  void offer(double value, long now) {
    if (!(value > 0) || Double.isInfinite(value)) {
      return;
    }
    if (current < 0 || now - start[current] >= bucketNanos) {
      current = (current + 1) % BUCKETS;
      start[current] = now;
      min[current] = value;
      return;
    }
    min[current] = Math.min(min[current], value);
  }

  /** The minimum over the window ending at {@code now}, or NaN when nothing recent was offered. */
  double value(long now) {
    double m = Double.NaN;
    if (current < 0) {
      return m;
    }
    long window = bucketNanos * BUCKETS;
    for (int i = 0; i < BUCKETS; i++) {
      if (min[i] > 0 && now - start[i] < window) {
        m = Double.isNaN(m) ? min[i] : Math.min(m, min[i]);
      }
    }
    return m;
  }
}
