package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link DecayedLogHistogram} reads its quantiles and fractions only between the lowest and the
 * highest bucket it holds: the answers are exactly (bit for bit) those of a walk over every bucket,
 * through samples of every size and weight, the rescale that may empty a tiny bucket, a stored
 * state's weights added, and a clear.
 */
class DecayedLogHistogramSpanTest {
  private static final double[] QUANTILES = {0, 1e-9, 0.01, 0.1, 0.5, 0.9, 0.93, 0.99, 1, 1.5};

  @Test
  void quantilesAndFractions_areThoseOfTheWholeWalk_throughAddsRescalesAndStoredStates() {
    Random random = new Random(7);
    for (int run = 0; run < 40; run++) {
      double max = run % 2 == 0 ? 1 << 20 : 4096;
      DecayedLogHistogram h = new DecayedLogHistogram(max);
      Walk w = new Walk(h.bucketCount());
      assertSame(h, w, random);
      // fast growth reaches the rescale within the run; a few runs are narrow, a few wide
      double growth = run % 4 == 0 ? 1.5 : Math.pow(2, 1.0 / (1 + random.nextInt(300)));
      double centre = Math.exp(random.nextDouble() * Math.log(max * 2));
      for (int i = 0; i < 600; i++) {
        double v =
            switch (random.nextInt(20)) {
              case 0 -> 0;
              case 1 -> random.nextDouble(); // (0, 1]
              case 2 -> max * (1 + random.nextDouble()); // the last bucket
              default -> centre * Math.exp(random.nextGaussian() * (run % 3) * 0.3);
            };
        double factor = random.nextInt(4) == 0 ? Math.max(1e-3, random.nextDouble()) : 1;
        h.add(v, growth, factor);
        w.add(v, growth, factor);
        if (random.nextInt(50) == 0) {
          double[] stored = h.weights();
          h.clear();
          w.clear();
          assertSame(h, w, random);
          h.addWeights(stored);
          w.addWeights(stored);
        }
        assertSame(h, w, random);
      }
    }
  }

  private static void assertSame(DecayedLogHistogram h, Walk w, Random random) {
    for (double q : QUANTILES) {
      assertThat(Double.doubleToRawLongBits(h.quantile(q)))
          .as("quantile %s", q)
          .isEqualTo(Double.doubleToRawLongBits(w.quantile(q)));
    }
    for (int k = 0; k < 4; k++) {
      double v = Math.exp(random.nextDouble() * 16) - 1;
      assertThat(Double.doubleToRawLongBits(h.fractionAtMost(v)))
          .as("fraction at most %s", v)
          .isEqualTo(Double.doubleToRawLongBits(w.fractionAtMost(v)));
    }
  }

  /** The histogram as it read before: every bucket from the first, the last found from the top. */
  private static final class Walk {
    private static final double LOG_BASE = Math.log(DecayedLogHistogram.BASE);
    private final float[] buckets;
    private double weight = 1;
    private double total;

    Walk(int n) {
      buckets = new float[n];
    }

    void add(double value, double growth, double factor) {
      buckets[index(value)] += (float) (weight * factor);
      total += weight * factor;
      weight *= factor == 1 ? growth : Math.pow(growth, factor);
      if (weight > 1e30) {
        double f = 1 / weight;
        for (int i = 0; i < buckets.length; i++) {
          buckets[i] = (float) (buckets[i] * f);
        }
        total *= f;
        weight = 1;
      }
    }

    int index(double value) {
      if (!(value > 0)) {
        return 0;
      }
      if (value <= 1) {
        return 1;
      }
      return Math.min(buckets.length - 1, 2 + (int) (Math.log(value) / LOG_BASE));
    }

    void addWeights(double[] w) {
      for (int i = 0; i < Math.min(w.length, buckets.length); i++) {
        if (w[i] > 0 && Double.isFinite(w[i])) {
          buckets[i] += (float) (w[i] * weight);
          total += w[i] * weight;
        }
      }
    }

    void clear() {
      java.util.Arrays.fill(buckets, 0f);
      total = 0;
      weight = 1;
    }

    double quantile(double q) {
      if (!(total > 0)) {
        return Double.NaN;
      }
      double target = Math.min(1, q) * total;
      double seen = 0;
      int last = buckets.length - 1;
      while (last > 0 && buckets[last] <= 0) {
        last--;
      }
      for (int i = 0; i < last; i++) {
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
      if (last <= 1) {
        return last;
      }
      double w = buckets[last];
      double within = w > 0 ? Math.max(0, Math.min(1, (target - seen) / w)) : 1;
      return Math.exp((last - 2 + within) * LOG_BASE);
    }

    double fractionAtMost(double value) {
      if (!(total > 0)) {
        return Double.NaN;
      }
      int at = index(value);
      double below = 0;
      for (int i = 0; i < at; i++) {
        below += buckets[i];
      }
      double within = 1;
      if (at >= 2 && at < buckets.length - 1) {
        within = Math.max(0, Math.min(1, Math.log(value) / LOG_BASE - (at - 2)));
      }
      return Math.min(1, (below + buckets[at] * within) / total);
    }
  }
}
