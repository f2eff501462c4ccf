package io.sluice.core.estimate;

/**
 * What the body asked of the output, beside the estimate's reserve (filled by {@link
 * TokenEstimator#estimate(RequestFormat, byte[], int, int, EstimateLimits, OutputShape)}): how many
 * answers ({@code n}, {@code best_of}) and whether the client set a valid output cap. The learned
 * output reserve ({@link OutputReserves}) learns per answer and tells a cap from the class default.
 * Mutable, one per request; not thread-safe.
 */
public final class OutputShape {
  private int answers = 1;
  private boolean capSet;

  /** Answers the request asks for, {@code >= 1} (1 when the body could not be read). */
  public int answers() {
    return answers;
  }

  /** Whether the body set a valid output cap (false: the class default applies). */
  public boolean capSet() {
    return capSet;
  }

  void set(int answers, boolean capSet) {
    this.answers = Math.max(1, answers);
    this.capSet = capSet;
  }
}
