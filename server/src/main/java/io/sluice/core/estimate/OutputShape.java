package io.sluice.core.estimate;

import org.jspecify.annotations.Nullable;

/**
 * What the body asked of the output, beside the estimate's reserve (filled by {@link
 * TokenEstimator#estimate(RequestFormat, byte[], int, int, EstimateLimits, OutputShape)}): how many
 * answers ({@code n}, {@code best_of}) and whether the client set a valid output cap; and whether
 * Sluice's reading of the body is the engine's (docs/estimation.md, One reading of a body). The
 * learned output reserve ({@link OutputReserves}) learns per answer and tells a cap from the class
 * default. Mutable, one per request; not thread-safe.
 */
public final class OutputShape {
  private int answers = 1;
  private boolean capSet;
  private @Nullable String invalid;
  private boolean jsonObject;

  /** Answers the request asks for, {@code >= 1} (1 when the body could not be read). */
  public int answers() {
    return answers;
  }

  /** Whether the body set a valid output cap (false: the class default applies). */
  public boolean capSet() {
    return capSet;
  }

  /**
   * Why the body must be refused {@code invalid_request}: a member the format uses that a Python
   * engine reads but Sluice cannot read the same way ({@code n: 8.5}, {@code max_tokens: NaN}), or
   * a body such an engine reads that Sluice cannot read at all (nested deeper than {@code
   * maxJsonDepth}, JSON in UTF-16); a fixed text naming the member, never the client's value. Null
   * when Sluice's reading is the engine's, or the body is one no engine reads either (then it is
   * estimated as before and the upstream answers it).
   */
  public @Nullable String invalid() {
    return invalid;
  }

  /**
   * Whether the body was read whole as one JSON object (what a rewrite of its members needs); false
   * for an empty body, one that is not JSON or not an object, or one Sluice could not read.
   */
  public boolean jsonObject() {
    return jsonObject;
  }

  void set(int answers, boolean capSet) {
    this.answers = Math.max(1, answers);
    this.capSet = capSet;
  }

  void reset() {
    set(1, false);
    invalid = null;
    jsonObject = false;
  }

  void read(@Nullable String invalid, boolean jsonObject) {
    this.invalid = invalid;
    this.jsonObject = jsonObject;
  }
}
