package io.sluice.core.estimate;

/**
 * Upper confidence bounds on a quantile from few samples (docs/estimation.md, "How fast it
 * learns"). With {@code n} samples of an unknown distribution, the {@code k}-th smallest is at
 * least its {@code q}-quantile with probability {@code P(Binomial(n, q) <= k - 1)}: the smallest
 * such {@code k} whose probability reaches the confidence {@code c} gives a bound that holds
 * whatever the distribution ({@link #rank}). It exists only from {@code n >= log(1 - c) / log(q)}
 * samples (22 for q = c = 0.9); below that, the one-sided normal tolerance bound on the logarithms
 * ({@link #toleranceFactor}) is used, which assumes a log-normal shape and widens as {@code n}
 * shrinks. Plain functions, no state.
 */
final class ReserveBounds {
  private ReserveBounds() {}

  /** Above this many samples the binomial is replaced by its normal approximation. */
  private static final int EXACT_UP_TO = 1000;

  /**
   * The smallest rank {@code k} (1-based) whose order statistic bounds the {@code q}-quantile of
   * {@code n} samples from above with confidence {@code c}, or {@code n + 1} when no rank does.
   */
  static long rank(long n, double q, double c) {
    if (n <= 0) {
      return 1;
    }
    if (n > EXACT_UP_TO) {
      double z = inverseNormal(c);
      double k = Math.ceil(n * q + z * Math.sqrt(n * q * (1 - q)) + 0.5);
      return Math.max(1, Math.min(n + 1, (long) k));
    }
    // P(Bin(n, q) <= j) summed in log space: the terms that matter do not underflow
    double logQ = Math.log(q);
    double logP = Math.log1p(-q);
    double logPmf = n * logP; // j = 0
    double cdf = 0;
    for (long j = 0; j < n; j++) {
      cdf += Math.exp(logPmf);
      if (cdf >= c) {
        return j + 1;
      }
      logPmf += Math.log((double) (n - j) / (j + 1)) + logQ - logP;
    }
    return n + 1;
  }

  /**
   * The factor {@code K} of the one-sided normal tolerance bound {@code mean + K sd}: with
   * confidence {@code c}, at least a fraction {@code q} of a normal population lies below it, from
   * {@code n} samples (Natrella's approximation). Infinite when {@code n} is too small for one.
   */
  static double toleranceFactor(double n, double q, double c) {
    if (!(n > 1)) {
      return Double.POSITIVE_INFINITY;
    }
    double zq = inverseNormal(q);
    double zc = inverseNormal(c);
    double a = 1 - zc * zc / (2 * (n - 1));
    double b = zq * zq - zc * zc / n;
    if (!(a > 0)) {
      return Double.POSITIVE_INFINITY;
    }
    return (zq + Math.sqrt(Math.max(0, zq * zq - a * b))) / a;
  }

  /** The standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9). */
  static double inverseNormal(double p) {
    if (!(p > 0 && p < 1)) {
      throw new IllegalArgumentException("p: " + p + " (expected: 0 < p < 1)");
    }
    double[] a = {
      -3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
      1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00
    };
    double[] b = {
      -5.447609879822406e+01,
      1.615858368580409e+02,
      -1.556989798598866e+02,
      6.680131188771972e+01,
      -1.328068155288572e+01
    };
    double[] c = {
      -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
      -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00
    };
    double[] d = {
      7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00
    };
    double low = 0.02425;
    if (p < low) {
      double q = Math.sqrt(-2 * Math.log(p));
      return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
          / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    if (p > 1 - low) {
      return -inverseNormal(1 - p);
    }
    double q = p - 0.5;
    double r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5])
        * q
        / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
}
