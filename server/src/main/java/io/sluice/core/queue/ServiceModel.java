package io.sluice.core.queue;

/**
 * Service time of one pool's LLM requests as a fixed term plus prefill plus decode: {@code service
 * ≈ c + a × inputTokens + b × outputReserveTokens}, fitted by exponentially weighted least squares
 * over recent completions (each sample's weight halves every {@code halfLifeSamples} samples).
 *
 * <p>Why three terms: the work units Sluice meters add input and reserved output tokens, but time
 * is spent mostly on output (one decode step per token), little on input (a prefill pass), and some
 * on every request whatever its size (queueing at the upstream, scheduling, the first token: the
 * fixed term {@code c}). With {@code a} and {@code b} apart, a document question with 2,800 prompt
 * tokens and 640 reserved output tokens is predicted from its answer budget, not from its prompt;
 * with {@code c} apart, short answers whose time is mostly the first token do not teach a large
 * time per output token that a long answer would multiply.
 *
 * <p>{@code b} is the time per <em>reserved</em> output token, so the prediction is the expected
 * service of a request that uses its reserve as the pool's requests usually do.
 *
 * <p><b>Kept non-negative, and sound when the samples cannot separate the terms.</b> Every subset
 * of the terms is fitted (the three, each pair, each alone, and input plus output at one shared
 * rate); fits with a negative coefficient or whose samples cannot separate their terms (a column
 * that is, within a relative {@value #SEPARATION}, a combination of the others: every request the
 * same output reserve, say) are dropped, and the one with the least weighted squared error is kept.
 * Among equally good fits the earlier in the order {@code c+a+b, c+b, c+a, a+b, c+shared, shared,
 * b, a, c} wins: when one token count never varies, its time is taken as part of the fixed term (a
 * time per token is kept only where the samples show it), and with every request the same shape the
 * model is one time per token of {@code input + output} (as pessimistic for a larger request as the
 * samples allow).
 *
 * <p><b>Range of evidence.</b> The model also keeps the largest input and reserved output it has
 * seen ({@link #maxInputSeen}, {@link #maxOutputSeen}): a prediction far beyond them is an
 * extrapolation the samples do not support, which callers that refuse on a prediction must not
 * trust ({@link #predictWithinEvidenceNanos}).
 *
 * <p>Not thread-safe; owned by a pool and used under its lock. No clock.
 */
public final class ServiceModel {
  /**
   * How far the fit is trusted beyond the largest input and output seen: {@link
   * #predictWithinEvidenceNanos} predicts a larger request as one of this many times the largest
   * seen.
   */
  public static final double EVIDENCE_FACTOR = 2.0;

  /** A fit is dropped when its normal equations' determinant is below this × their diagonal. */
  static final double SEPARATION = 1e-6;

  private final double decay;
  private final int minSamples;
  // the coefficients of the last solve (the model is used under its pool's lock)
  private final double[] theta = new double[3];
  // decayed sums over samples of the columns (1, x1, x2) and y
  private double w;
  private double s1;
  private double s2;
  private double s11;
  private double s12;
  private double s22;
  private double sy;
  private double s1y;
  private double s2y;
  private double syy;
  private int samples;
  private double c;
  private double a;
  private double b;
  private long maxInput;
  private long maxOutput;

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
    w = w * decay + 1;
    s1 = s1 * decay + x1;
    s2 = s2 * decay + x2;
    s11 = s11 * decay + x1 * x1;
    s12 = s12 * decay + x1 * x2;
    s22 = s22 * decay + x2 * x2;
    sy = sy * decay + y;
    s1y = s1y * decay + x1 * y;
    s2y = s2y * decay + x2 * y;
    syy = syy * decay + y * y;
    maxInput = Math.max(maxInput, inputTokens);
    maxOutput = Math.max(maxOutput, outputTokens);
    samples++;
    fit();
  }

  /**
   * Keeps the fit with the least weighted squared error among those {@link #solve1}, {@link
   * #solve2} and {@link #solve3} accept, tried in the order of preference (the class comment's:
   * {@code c+a+b, c+b, c+a, a+b, c+shared, shared, b, a, c}). Each solve is the Gaussian
   * elimination of its normal equations written out for its size: the same floating-point
   * operations in the same order as the loop over a matrix it replaced (nine solves per completion
   * were a fifth of a microsecond), so every coefficient is the same to the bit ({@code
   * LearningGoldenTest}, {@code ServiceModelTest}).
   */
  private void fit() {
    // the cross products with the column x1 + x2 (input and output at one shared rate)
    double x03 = s1 + s2;
    double x33 = s11 + 2 * s12 + s22;
    double y3 = s1y + s2y;
    double[] t = theta;
    double best = Double.POSITIVE_INFINITY;
    double tolerance = 1e-9 * syy;
    c = 0;
    a = 0;
    b = 0;
    if (solve3(w, s1, s2, s11, s12, s22, sy, s1y, s2y)) { // c + a + b
      best = consider(best, tolerance, 0 + t[0] * sy + t[1] * s1y + t[2] * s2y, t[0], t[1], t[2]);
    }
    if (solve2(w, s2, s22, sy, s2y)) { // c + b
      best = consider(best, tolerance, 0 + t[0] * sy + t[1] * s2y, t[0], 0, t[1]);
    }
    if (solve2(w, s1, s11, sy, s1y)) { // c + a
      best = consider(best, tolerance, 0 + t[0] * sy + t[1] * s1y, t[0], t[1], 0);
    }
    if (solve2(s11, s12, s22, s1y, s2y)) { // a + b
      best = consider(best, tolerance, 0 + t[0] * s1y + t[1] * s2y, 0, t[0], t[1]);
    }
    if (solve2(w, x03, x33, sy, y3)) { // c + shared
      best = consider(best, tolerance, 0 + t[0] * sy + t[1] * y3, t[0], t[1], t[1]);
    }
    if (solve1(x33, y3)) { // shared
      best = consider(best, tolerance, 0 + t[0] * y3, 0, t[0], t[0]);
    }
    if (solve1(s22, s2y)) { // b
      best = consider(best, tolerance, 0 + t[0] * s2y, 0, 0, t[0]);
    }
    if (solve1(s11, s1y)) { // a
      best = consider(best, tolerance, 0 + t[0] * s1y, 0, t[0], 0);
    }
    if (solve1(w, sy)) { // c
      best = consider(best, tolerance, 0 + t[0] * sy, t[0], 0, 0);
    }
  }

  /**
   * A fit that explains {@code explained} of {@code syy}: kept as the model when its error is below
   * {@code best} by more than {@code tolerance}; answers the best error so far.
   */
  private double consider(
      double best, double tolerance, double explained, double fc, double fa, double fb) {
    double error = syy - explained; // at the least-squares solution
    if (error < best - tolerance) {
      c = fc;
      a = fa;
      b = fb;
      return error;
    }
    return best;
  }

  /**
   * One column's least-squares coefficient into {@code theta[0]} ({@code m00 · theta[0] = y0});
   * false when the samples cannot separate it or it is negative.
   */
  private boolean solve1(double m00, double y0) {
    double diagonal = 1 * m00;
    if (!(diagonal > 0)) {
      return false;
    }
    double det = 1 * m00;
    if (!(m00 > 0)) {
      return false;
    }
    if (det <= SEPARATION * diagonal) {
      return false;
    }
    theta[0] = y0 / m00;
    return !(theta[0] < 0);
  }

  /** Two columns' coefficients into {@code theta[0..1]}; as {@link #solve1}. */
  private boolean solve2(double m00, double m01, double m11, double y0, double y1) {
    double diagonal = 1 * m00 * m11;
    if (!(diagonal > 0)) {
      return false;
    }
    double det = 1 * m00;
    if (!(m00 > 0)) {
      return false;
    }
    double f = m01 / m00;
    double e11 = m11 - f * m01;
    double e1 = y1 - f * y0;
    det *= e11;
    if (!(e11 > 0)) {
      return false;
    }
    if (det <= SEPARATION * diagonal) {
      return false;
    }
    theta[1] = e1 / e11;
    if (theta[1] < 0) {
      return false;
    }
    theta[0] = (y0 - m01 * theta[1]) / m00;
    return !(theta[0] < 0);
  }

  /** Three columns' coefficients into {@code theta[0..2]}; as {@link #solve1}. */
  private boolean solve3(
      double m00,
      double m01,
      double m02,
      double m11,
      double m12,
      double m22,
      double y0,
      double y1,
      double y2) {
    double diagonal = 1 * m00 * m11 * m22;
    if (!(diagonal > 0)) {
      return false;
    }
    double det = 1 * m00;
    if (!(m00 > 0)) {
      return false;
    }
    double f = m01 / m00;
    double e11 = m11 - f * m01;
    double e12 = m12 - f * m02;
    double e1 = y1 - f * y0;
    f = m02 / m00;
    double e21 = m12 - f * m01;
    double e22 = m22 - f * m02;
    double e2 = y2 - f * y0;
    det *= e11;
    if (!(e11 > 0)) {
      return false;
    }
    f = e21 / e11;
    e22 -= f * e12;
    e2 -= f * e1;
    det *= e22;
    if (!(e22 > 0)) {
      return false;
    }
    if (det <= SEPARATION * diagonal) {
      return false;
    }
    theta[2] = e2 / e22;
    if (theta[2] < 0) {
      return false;
    }
    theta[1] = (e1 - e12 * theta[2]) / e11;
    if (theta[1] < 0) {
      return false;
    }
    theta[0] = (y0 - m01 * theta[1] - m02 * theta[2]) / m00;
    return !(theta[0] < 0);
  }

  /** True once {@code minSamples} samples were seen and the fit predicts a positive time. */
  public boolean ready() {
    return samples >= minSamples && (c > 0 || a > 0 || b > 0);
  }

  /** Nanos of every request whatever its size ({@code c}: queueing upstream, the first token). */
  public double fixedNanos() {
    return c;
  }

  /** Nanos per input token ({@code a}). */
  public double nanosPerInputToken() {
    return a;
  }

  /** Nanos per reserved output token ({@code b}). */
  public double nanosPerOutputToken() {
    return b;
  }

  /** The largest input (tokens) of a sample so far; 0 before any. */
  public long maxInputSeen() {
    return maxInput;
  }

  /** The largest reserved output (tokens) of a sample so far; 0 before any. */
  public long maxOutputSeen() {
    return maxOutput;
  }

  /** Expected service nanos of a request of this shape (0 before any sample). */
  public double predictNanos(long inputTokens, long outputTokens) {
    return c + a * Math.max(0, inputTokens) + b * Math.max(0, outputTokens);
  }

  /**
   * True when the request's input or reserved output is more than {@link #EVIDENCE_FACTOR} times
   * the largest seen: the model has no evidence for its service time.
   */
  public boolean beyondEvidence(long inputTokens, long outputTokens) {
    return inputTokens > EVIDENCE_FACTOR * maxInput || outputTokens > EVIDENCE_FACTOR * maxOutput;
  }

  /**
   * The prediction for a request no larger than the model has evidence for: input and reserved
   * output each capped at {@link #EVIDENCE_FACTOR} × the largest seen. A lower bound of the
   * request's service time as far as the samples can tell (service grows with tokens), so a
   * deadline check that refuses on it refuses only what the evidence shows cannot finish in time.
   */
  public double predictWithinEvidenceNanos(long inputTokens, long outputTokens) {
    long in = (long) Math.min(Math.max(0, inputTokens), EVIDENCE_FACTOR * maxInput);
    long out = (long) Math.min(Math.max(0, outputTokens), EVIDENCE_FACTOR * maxOutput);
    return predictNanos(in, out);
  }
}
