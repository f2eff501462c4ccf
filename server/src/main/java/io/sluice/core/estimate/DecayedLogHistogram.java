package io.sluice.core.estimate;

/**
 * A histogram of non-negative values in log-spaced buckets (each {@link #BASE} times the one
 * before, from 1 to {@code max}), in which older samples weigh less: each new sample weighs {@code
 * growth} times the one before, so a sample's weight halves every {@code halfLife} samples when
 * {@code growth = 2^(1/halfLife)}. Its quantiles are those of the recent samples. One bucket holds
 * the zeros, one everything in (0, 1], the last everything from {@code max} up.
 *
 * <p>O(1) per sample: instead of shrinking the old weights, the new weight grows; when it grows
 * large every bucket is scaled down at once (O(buckets), rarely). A quantile reads the buckets once
 * and interpolates in log space within its bucket, so with {@code BASE} 1.1 its error from
 * bucketing alone is a few percent.
 *
 * <p>Not thread-safe: its owner locks it.
 */
final class DecayedLogHistogram {
  static final double BASE = 1.1;
  private static final double LOG_BASE = Math.log(BASE);
  private static final double RESCALE_AT = 1e30;

  // [0]: zeros; [1]: (0, 1]; [i >= 2]: (B^(i-2), B^(i-1)]; the last also everything above
  private final float[] buckets;
  private double weight = 1; // the next sample's weight
  private double total;
  // the lowest and highest bucket above 0 (the bucket count and 0 with none): a quantile walks
  // only between them (answers fill a few of ~150 buckets: the walk up to the lowest and the scan
  // down from the last were most of a read, twice per answer and per reserve)
  private int low;
  private int high;

  /**
   * @param max values above it count in the last bucket ({@code > 1})
   */
  DecayedLogHistogram(double max) {
    this.buckets = new float[2 + (int) Math.ceil(Math.log(Math.max(BASE, max)) / LOG_BASE)];
    this.low = buckets.length;
  }

  /**
   * One sample; the next one weighs {@code growth} ({@code >= 1}) times as much.
   *
   * @param value the sample ({@code >= 0}; NaN counts as 0)
   */
  void add(double value, double growth) {
    add(value, growth, 1);
  }

  /**
   * One sample weighing {@code factor} ({@code (0, 1]}) of a full one; then the next weighs {@code
   * growth^factor} times as much (a part of a sample ages the others by that part).
   */
  void add(double value, double growth, double factor) {
    addAt(index(value), growth, factor);
  }

  /**
   * As {@link #add(double, double, double)} for a sample whose bucket, {@link #index}, is {@code
   * i}.
   */
  void addAt(int i, double growth, double factor) {
    addAtStep(i, factor, factor == 1 ? growth : Math.pow(growth, factor));
  }

  /**
   * As {@link #addAt} with the next sample's weight growth given: {@code step} is {@code factor ==
   * 1 ? growth : Math.pow(growth, factor)} (the caller's, computed once for its histograms).
   */
  void addAtStep(int i, double factor, double step) {
    buckets[i] += (float) (weight * factor);
    total += weight * factor;
    weight *= step;
    if (weight > RESCALE_AT) {
      double f = 1 / weight;
      for (int j = 0; j < buckets.length; j++) {
        buckets[j] = (float) (buckets[j] * f);
      }
      total *= f;
      weight = 1;
      span(); // a tiny bucket may have become 0
    } else if (buckets[i] > 0) {
      low = Math.min(low, i);
      high = Math.max(high, i);
    }
  }

  /** Finds {@link #low} and {@link #high} again by reading every bucket. */
  private void span() {
    int lo = 0;
    while (lo < buckets.length && !(buckets[lo] > 0)) {
      lo++;
    }
    int hi = buckets.length - 1;
    while (hi > 0 && !(buckets[hi] > 0)) {
      hi--;
    }
    low = lo;
    high = hi;
  }

  /** The bucket {@code value} counts in. */
  int index(double value) {
    return value > 1 ? index(value, Math.log(value)) : index(value, 0);
  }

  /**
   * The bucket {@code value} counts in, given {@code log = Math.log(Math.max(1, value))} (the
   * caller's, reused): the same bucket as {@link #index(double)}.
   */
  int index(double value, double log) {
    if (!(value > 0)) {
      return 0;
    }
    if (value <= 1) {
      return 1;
    }
    int i = 2 + (int) (log / LOG_BASE);
    return Math.min(buckets.length - 1, i);
  }

  /** The {@code q}-quantile of the weighted samples (NaN with none). */
  double quantile(double q) {
    if (!(total > 0)) {
      return Double.NaN;
    }
    double target = Math.min(1, q) * total;
    double seen = 0;
    int last = high; // the highest bucket held (0 with none above the zeros)
    for (int i = Math.min(low, last); i < last; i++) { // nothing below the lowest held
      double w = buckets[i];
      if (w <= 0) {
        continue;
      }
      if (seen + w >= target) {
        if (i == 0) {
          return 0;
        }
        if (i == 1) {
          return 1;
        }
        double within = Math.max(0, Math.min(1, (target - seen) / w));
        return Math.exp((i - 2 + within) * LOG_BASE);
      }
      seen += w;
    }
    // the highest bucket held (also where float sums fall short of the double total)
    if (last <= 1) {
      return last;
    }
    double w = buckets[last];
    double within = w > 0 ? Math.max(0, Math.min(1, (target - seen) / w)) : 1;
    return Math.exp((last - 2 + within) * LOG_BASE);
  }

  /**
   * Each bucket's weight in units of the next sample's (what {@link #addWeights} takes back): the
   * form the replicas exchange.
   */
  double[] weights() {
    double[] w = new double[buckets.length];
    for (int i = 0; i < w.length; i++) {
      w[i] = buckets[i] / weight;
    }
    return w;
  }

  /**
   * Adds weights in units of the next sample's (another replica's, or a stored state), bucket by
   * bucket; extra buckets are ignored.
   */
  void addWeights(double[] w) {
    for (int i = 0; i < Math.min(w.length, buckets.length); i++) {
      if (w[i] > 0 && Double.isFinite(w[i])) {
        buckets[i] += (float) (w[i] * weight);
        total += w[i] * weight;
      }
    }
    span();
  }

  /** Forgets every sample (the weights of a stored state follow with {@link #addWeights}). */
  void clear() {
    java.util.Arrays.fill(buckets, 0f);
    total = 0;
    weight = 1;
    low = buckets.length;
    high = 0;
  }

  /** The weighted fraction of the samples at or below {@code value} (NaN with none). */
  double fractionAtMost(double value) {
    if (!(total > 0)) {
      return Double.NaN;
    }
    int at = index(value);
    double below = 0;
    for (int i = Math.min(low, at); i < at; i++) { // nothing below the lowest held
      below += buckets[i];
    }
    double within = 1; // the share of value's own bucket at or below it (log-uniform within)
    if (at >= 2 && at < buckets.length - 1) {
      within = Math.max(0, Math.min(1, Math.log(value) / LOG_BASE - (at - 2)));
    }
    return Math.min(1, (below + buckets[at] * within) / total);
  }

  /** Buckets held (the memory of one histogram is 4 bytes each). */
  int bucketCount() {
    return buckets.length;
  }
}
