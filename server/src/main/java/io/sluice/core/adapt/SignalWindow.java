package io.sluice.core.adapt;

import java.util.Arrays;

/**
 * One latency signal's samples in the current generation and its no-load baseline: the minimum over
 * {@code baselineWindow} of the median of its last {@link #RECENT} samples ({@link MinWindow}), and
 * the pool's baseline as the shared store last answered it. Not thread-safe: guarded by the monitor
 * of its {@link AdaptiveLimit}. Time is an argument.
 */
final class SignalWindow {
  private static final int MAX_SAMPLES = 512;
  static final int RECENT = 256;

  final double[] samples = new double[MAX_SAMPLES];
  int count;
  long seen;
  final MinWindow measured;
  double pool = Double.NaN; // the pool's baseline as the shared store last answered it

  SignalWindow(long windowNanos) {
    this.measured = new MinWindow(windowNanos);
  }

  double baseline(long nowNanos) {
    double own = measured.value(nowNanos);
    if (!(pool > 0)) {
      return own;
    }
    return Double.isNaN(own) ? pool : Math.min(own, pool);
  }

  // the last RECENT samples whatever the interval: their median is what the baseline keeps
  final double[] recent = new double[RECENT];
  long recentSeen;

  void add(double v) {
    // the most recent MAX_SAMPLES of the interval are kept
    samples[(int) (seen % MAX_SAMPLES)] = v;
    seen++;
    count = (int) Math.min(MAX_SAMPLES, seen);
    recent[(int) (recentSeen++ % RECENT)] = v;
  }

  /**
   * Offers the median of the last {@link #RECENT} samples (at least {@code 2 × minSamples}) to the
   * baseline: one interval's median of a few samples is noisy, and the minimum of noisy medians
   * sits below the typical no-load latency (an idle pool would read 1.2–1.3 and never grow); a
   * median of many, overlapping from one interval to the next, does not.
   */
  void offerBaseline(int minSamples, long nowNanos) {
    int n = (int) Math.min(RECENT, recentSeen);
    if (n < 2 * minSamples) {
      return;
    }
    double[] c = Arrays.copyOf(recent, n);
    Arrays.sort(c);
    measured.offer(c[n / 2], nowNanos);
  }

  void reset() {
    count = 0;
    seen = 0;
  }

  double median() {
    double[] c = Arrays.copyOf(samples, count);
    Arrays.sort(c);
    return c[c.length / 2];
  }
}
