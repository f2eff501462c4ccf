package io.sluice.core.estimate;

/**
 * Output-token bounds for one request, usually from its priority class.
 *
 * @param defaultOutputTokens reserve used when the body names no output cap (or an invalid one)
 * @param maxOutputTokens upper bound for the reserve; a larger requested cap is clamped to it
 */
public record EstimateLimits(long defaultOutputTokens, long maxOutputTokens) {
  public EstimateLimits {
    if (defaultOutputTokens < 0) {
      throw new IllegalArgumentException(
          "defaultOutputTokens: " + defaultOutputTokens + " (expected: >= 0)");
    }
    if (maxOutputTokens < 0) {
      throw new IllegalArgumentException(
          "maxOutputTokens: " + maxOutputTokens + " (expected: >= 0)");
    }
    if (defaultOutputTokens > maxOutputTokens) {
      throw new IllegalArgumentException(
          "defaultOutputTokens: "
              + defaultOutputTokens
              + " (expected: <= maxOutputTokens "
              + maxOutputTokens
              + ")");
    }
  }
}
