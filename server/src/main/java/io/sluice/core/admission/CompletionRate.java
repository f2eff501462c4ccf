package io.sluice.core.admission;

/**
 * Exponentially decaying completion rate of one pool: {@code rate(t) = Σ w_i e^{-(t - t_i)/τ} / τ}
 * work units per second, plus an EWMA of permit hold time. Not thread-safe: guarded by the pool
 * lock. Time is an argument.
 */
final class CompletionRate {
  private static final double NANOS_PER_SECOND = 1e9;

  private final double tauNanos;
  private double accumulated;
  private long lastNanos;
  private boolean started;
  private double meanHoldNanos;

  CompletionRate(long tauNanos) {
    this.tauNanos = tauNanos;
  }

  void onCompletion(long work, long holdNanos, long nowNanos) {
    decay(nowNanos);
    accumulated += work;
    meanHoldNanos = meanHoldNanos == 0 ? holdNanos : meanHoldNanos * 0.8 + holdNanos * 0.2;
  }

  double workPerSecond(long nowNanos) {
    decay(nowNanos);
    return accumulated / (tauNanos / NANOS_PER_SECOND);
  }

  double meanHoldNanos() {
    return meanHoldNanos;
  }

  private void decay(long nowNanos) {
    if (!started) {
      started = true;
      lastNanos = nowNanos;
      return;
    }
    long dt = nowNanos - lastNanos;
    if (dt > 0) {
      accumulated *= Math.exp(-dt / tauNanos);
      lastNanos = nowNanos;
    }
  }
}
