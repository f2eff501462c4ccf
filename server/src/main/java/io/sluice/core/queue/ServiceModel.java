package io.sluice.core.queue;

/**
 * Service time of one pool's LLM requests as prefill plus decode: {@code service ≈ a × inputTokens
 * + b × outputReserveTokens}, fitted by exponentially weighted least squares over recent
 * completions (each sample's weight halves every {@code halfLifeSamples} samples).
 *
 * <p>Why two coefficients: the work units Sluice meters add input and reserved output tokens, but
 * time is spent mostly on output (one decode step per token) and little on input (a prefill pass),
 * so a time per work unit makes a long prompt look slow and a long answer look fast. With {@code a}
 * and {@code b} apart, a document question with 2,800 prompt tokens and 640 reserved output tokens
 * is predicted from its answer budget, not from its prompt.
 *
 * <p>{@code b} is the time per <em>reserved</em> output token, so the prediction is the expected
 * service of a request that uses its reserve as the pool's requests usually do. Coefficients are
 * kept non-negative (a negative one is dropped and the other refitted alone); when the samples
 * cannot separate them (every request the same shape) both are the time per token of {@code input +
 * output}.
 *
 * <p>Not thread-safe; owned by a pool and used under its lock. No clock.
 */
public final class ServiceModel {
  private final double decay;
  private final int minSamples;
  private double s11;
  private double s12;
  private double s22;
  private double s1y;
  private double s2y;
  private int samples;
  private double a;
  private double b;

  /**
   * @param halfLifeSamples samples after which a sample's weight has halved ({@code >= 1})
   * @param minSamples samples before the model is {@link #ready()} ({@code >= 1})
   */
  public ServiceModel(int halfLifeSamples, int minSamples) {
    if (halfLifeSamples < 1 || minSamples < 1) {
      throw new IllegalArgumentException(
          "halfLifeSamples/minSamples: "
              + halfLifeSamples
              + "/"
              + minSamples
              + " (expected: >= 1)");
    }
    this.decay = Math.pow(0.5, 1.0 / halfLifeSamples);
    this.minSamples = minSamples;
  }

  /**
   * A request with {@code inputTokens} estimated input and {@code outputTokens} reserved output
   * took {@code serviceNanos} from start to response end. Negative token counts (unknown) are
   * ignored.
   */
  public void onSample(long inputTokens, long outputTokens, long serviceNanos) {
    if (inputTokens < 0 || outputTokens < 0 || inputTokens + outputTokens == 0) {
      return;
    }
    if (serviceNanos <= 0) {
      return;
    }
    double x1 = inputTokens;
    double x2 = outputTokens;
    double y = serviceNanos;
    s11 = s11 * decay + x1 * x1;
    s12 = s12 * decay + x1 * x2;
    s22 = s22 * decay + x2 * x2;
    s1y = s1y * decay + x1 * y;
    s2y = s2y * decay + x2 * y;
    samples++;
    fit();
  }

  private void fit() {
    double det = s11 * s22 - s12 * s12;
    if (det > 1e-9 * s11 * s22 && s11 > 0 && s22 > 0) {
      a = (s1y * s22 - s2y * s12) / det;
      b = (s2y * s11 - s1y * s12) / det;
      if (a < 0) {
        a = 0;
        b = s2y / s22;
      } else if (b < 0) {
        b = 0;
        a = s1y / s11;
      }
    } else {
      double sxx = s11 + 2 * s12 + s22;
      double c = sxx > 0 ? (s1y + s2y) / sxx : 0;
      a = c;
      b = c;
    }
    a = Math.max(0, a);
    b = Math.max(0, b);
  }

  /** True once {@code minSamples} samples were seen and the fit predicts a positive time. */
  public boolean ready() {
    return samples >= minSamples && (a > 0 || b > 0);
  }

  /** Nanos per input token ({@code a}). */
  public double nanosPerInputToken() {
    return a;
  }

  /** Nanos per reserved output token ({@code b}). */
  public double nanosPerOutputToken() {
    return b;
  }

  /** Expected service nanos of a request of this shape (0 before any sample). */
  public double predictNanos(long inputTokens, long outputTokens) {
    return a * Math.max(0, inputTokens) + b * Math.max(0, outputTokens);
  }
}
