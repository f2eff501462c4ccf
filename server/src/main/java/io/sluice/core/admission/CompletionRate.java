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
  private boolean seen; // a completion was seen
  private long sinceNanos; // the first completed request's admission: the rate's observed start

  CompletionRate(long tauNanos) {
    this.tauNanos = tauNanos;
  }

  void onCompletion(long work, long holdNanos, long nowNanos) {
    decay(nowNanos);
    if (!seen) {
      seen = true;
      sinceNanos = nowNanos - Math.max(0, holdNanos);
    }
    accumulated += work;
    meanHoldNanos = meanHoldNanos == 0 ? holdNanos : meanHoldNanos * 0.8 + holdNanos * 0.2;
  }

  double workPerSecond(long nowNanos) {
    decay(nowNanos);
    return accumulated / (tauNanos / NANOS_PER_SECOND);
  }

  /**
   * {@link #workPerSecond} corrected for a young rate: the decaying sum starts at zero, so for its
   * first time constants it reads low (about {@code T/τ} of the truth after {@code T}). Divided by
   * {@code 1 - e^{-T/τ}}, {@code T} the time since the first completed request was admitted, it
   * reads the mean rate observed so far; the same as {@link #workPerSecond} once {@code T} is a few
   * {@code τ}. 0 before any completion.
   */
  double startedWorkPerSecond(long nowNanos) {
    double rate = workPerSecond(nowNanos);
    if (!seen) {
      return 0;
    }
    double t = Math.max(1.0, nowNanos - sinceNanos);
    return rate / -Math.expm1(-t / tauNanos);
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
