package io.sluice.core.queue;

import java.util.Arrays;

/**
 * A running high quantile of a positive quantity (here: how much longer than predicted one class's
 * requests take), tracking recent samples.
 *
 * <p>Estimate: after {@code warmupSamples} samples, the exact quantile of those samples; then a
 * stochastic approximation in log space, {@code log r <- log r + step * (q - [log x <= log r])} per
 * sample {@code x}, whose fixed point is the {@code q}-quantile of recent samples. O(1) per sample,
 * no clock: every sample moves the estimate, so recent samples dominate.
 *
 * <p>Not thread-safe; owned by a pool and used under its lock.
 */
public final class LogQuantile {
  private final double quantile;
  private final double step;
  private final double[] warmup;
  private int samples;
  private double logValue;
  // exp(logValue) once ready, computed at the first read after logValue moved (a sample costs no
  // exp(); most samples of a pool's tails are never read before the next one)
  private double estimate = Double.NaN;
  private boolean stale;

  /**
   * @param quantile the quantile to track, in (0, 1)
   * @param step log-space step per sample, in (0, 1) (0.05: a sample above the estimate raises it
   *     by about {@code 5 % × q})
   * @param warmupSamples samples before the estimate is {@link #ready()} ({@code >= 1})
   */
  public LogQuantile(double quantile, double step, int warmupSamples) {
    if (!(quantile > 0 && quantile < 1)) {
      throw new IllegalArgumentException("quantile: " + quantile + " (expected: in (0, 1))");
    }
    if (!(step > 0 && step < 1)) {
      throw new IllegalArgumentException("step: " + step + " (expected: in (0, 1))");
    }
    if (warmupSamples < 1) {
      throw new IllegalArgumentException("warmupSamples: " + warmupSamples + " (expected: >= 1)");
    }
    this.quantile = quantile;
    this.step = step;
    this.warmup = new double[warmupSamples];
  }

  /** One observation; values that are not finite and positive are ignored. */
  public void onSample(double value) {
    onLogSample(logOf(value));
  }

  /**
   * The natural log of an observation for {@link #onLogSample}, NaN when it is not finite and
   * positive (ignored): one log for several tails fed the same value.
   */
  public static double logOf(double value) {
    return !(value > 0) || Double.isInfinite(value) ? Double.NaN : Math.log(value);
  }

  /** As {@link #onSample} with the observation's log ({@link #logOf}); NaN is ignored. */
  public void onLogSample(double x) {
    if (Double.isNaN(x)) {
      return;
    }
    if (samples < warmup.length) {
      warmup[samples++] = x;
      if (samples == warmup.length) {
        double[] sorted = warmup.clone();
        Arrays.sort(sorted);
        int index = (int) Math.ceil(quantile * sorted.length) - 1;
        logValue = sorted[Math.max(0, Math.min(sorted.length - 1, index))];
        stale = true;
      }
      return;
    }
    logValue += step * (quantile - (x <= logValue ? 1 : 0));
    stale = true;
  }

  /**
   * A right-censored observation: the true value is at least {@code lowerBound} (a request whose
   * client left before the answer ended ran at least this long). It moves the estimate up when the
   * bound is already above it (then the true value is too) and is ignored otherwise, and during
   * warm-up. Without it, the longest answers, which are the ones cut off at the deadline, would
   * never be counted and the quantile would be too low.
   */
  public void onAtLeast(double lowerBound) {
    if (!ready() || !(lowerBound > 0) || Double.isInfinite(lowerBound)) {
      return;
    }
    if (Math.log(lowerBound) > logValue) {
      logValue += step * quantile;
      stale = true;
    }
  }

  /** True once {@code warmupSamples} samples were seen. */
  public boolean ready() {
    return samples >= warmup.length;
  }

  /** The estimate, or NaN before {@link #ready()}. */
  public double value() {
    if (stale) {
      estimate = Math.exp(logValue);
      stale = false;
    }
    return estimate;
  }
}
