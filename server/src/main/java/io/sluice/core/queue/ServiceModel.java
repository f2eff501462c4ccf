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

  // the fitted subsets, in order of preference among equally good fits: bit 0 = c (fixed), bit 1 =
  // a (input), bit 2 = b (output); SHARED = a and b one rate on input + output (with c or without)
  private static final int C = 1;
  private static final int A = 2;
  private static final int B = 4;
  private static final int SHARED = 8;
  private static final int[] FITS = {C | A | B, C | B, C | A, A | B, C | SHARED, SHARED, B, A, C};

  /** Each fit's columns ({@link #columns}), indexed by the fit. */
  private static final int[][] COLUMNS = new int[2 * SHARED][];

  static {
    for (int fit : FITS) {
      COLUMNS[fit] = columns(fit);
    }
  }

  // scratch of fit(), reused for every sample (the model is used under its pool's lock): up to
  // three rows of normal equations plus the right-hand side, then the solution from THETA
  private static final int STRIDE = 4;
  private static final int THETA = 3 * STRIDE;

  private final double decay;
  private final int minSamples;
  private final double[] scratch = new double[THETA + 3];
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

  private void fit() {
    double bestError = Double.POSITIVE_INFINITY;
    double bestC = 0;
    double bestA = 0;
    double bestB = 0;
    double tolerance = 1e-9 * syy;
    for (int fit : FITS) {
      int[] cols = COLUMNS[fit];
      if (!solve(cols)) {
        continue;
      }
      double explained = 0;
      for (int i = 0; i < cols.length; i++) {
        explained += scratch[THETA + i] * crossY(cols[i]);
      }
      double error = syy - explained; // at the least-squares solution
      if (error < bestError - tolerance) {
        bestError = error;
        bestC = 0;
        bestA = 0;
        bestB = 0;
        for (int i = 0; i < cols.length; i++) {
          double t = scratch[THETA + i];
          switch (cols[i]) {
            case 0 -> bestC = t;
            case 1 -> bestA = t;
            case 2 -> bestB = t;
            default -> {
              bestA = t;
              bestB = t;
            }
          }
        }
      }
    }
    c = bestC;
    a = bestA;
    b = bestB;
  }

  /** The columns of {@code fit}: 0 = 1, 1 = x1, 2 = x2, 3 = x1 + x2. */
  private static int[] columns(int fit) {
    int n = Integer.bitCount(fit);
    int[] cols = new int[n];
    int i = 0;
    if ((fit & C) != 0) {
      cols[i++] = 0;
    }
    if ((fit & A) != 0) {
      cols[i++] = 1;
    }
    if ((fit & B) != 0) {
      cols[i++] = 2;
    }
    if ((fit & SHARED) != 0) {
      cols[i++] = 3;
    }
    return cols;
  }

  private double cross(int i, int j) {
    if (i > j) {
      return cross(j, i);
    }
    return switch (i * 4 + j) {
      case 0 -> w;
      case 1 -> s1;
      case 2 -> s2;
      case 3 -> s1 + s2;
      case 5 -> s11;
      case 6 -> s12;
      case 7 -> s11 + s12;
      case 10 -> s22;
      case 11 -> s12 + s22;
      case 15 -> s11 + 2 * s12 + s22;
      default -> throw new IllegalStateException();
    };
  }

  private double crossY(int i) {
    return switch (i) {
      case 0 -> sy;
      case 1 -> s1y;
      case 2 -> s2y;
      default -> s1y + s2y;
    };
  }

  /**
   * The least-squares coefficients of the columns {@code cols} into {@link #scratch} from {@link
   * #THETA}; false when the samples cannot separate them or one is negative.
   */
  private boolean solve(int[] cols) {
    int n = cols.length;
    double[] m = scratch; // the augmented normal equations, row r at r * STRIDE, rhs in column n
    double diagonal = 1;
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        m[i * STRIDE + j] = cross(cols[i], cols[j]);
      }
      m[i * STRIDE + n] = crossY(cols[i]);
      diagonal *= m[i * STRIDE + i];
    }
    if (!(diagonal > 0)) {
      return false;
    }
    // Gaussian elimination without pivoting: the matrix is symmetric positive semi-definite, and
    // the pivots' product is its determinant, checked against the diagonal's product
    double det = 1;
    for (int p = 0; p < n; p++) {
      double pivot = m[p * STRIDE + p];
      det *= pivot;
      if (!(pivot > 0)) {
        return false;
      }
      for (int r = p + 1; r < n; r++) {
        double f = m[r * STRIDE + p] / pivot;
        for (int col = p; col <= n; col++) {
          m[r * STRIDE + col] -= f * m[p * STRIDE + col];
        }
      }
    }
    if (det <= SEPARATION * diagonal) {
      return false;
    }
    for (int r = n - 1; r >= 0; r--) {
      double v = m[r * STRIDE + n];
      for (int col = r + 1; col < n; col++) {
        v -= m[r * STRIDE + col] * m[THETA + col];
      }
      m[THETA + r] = v / m[r * STRIDE + r];
      if (m[THETA + r] < 0) {
        return false;
      }
    }
    return true;
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
