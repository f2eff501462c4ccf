package io.sluice.core.estimate;

/**
 * The token usage Envoy's AI protocol filter extracted from an answer ({@code
 * envoy.data.ai.v3.TokenUsage}, published at a clean end of stream): provider-reported counts read
 * field by field and bounded ({@link #MAX_TOKENS}); an absent or unusable count is -1.
 *
 * @param inputTokens canonical inclusive input tokens (cached and cache writes included), or -1
 * @param outputTokens canonical inclusive output tokens (reasoning included), or -1
 * @param cachedInputTokens the cache-read part of {@code inputTokens}, 0 when not reported
 * @param status the extraction's quality
 */
public record NativeUsage(
    long inputTokens, long outputTokens, long cachedInputTokens, Status status) {
  /** The largest count read (above: ignored as unusable). */
  public static final long MAX_TOKENS = 100_000_000L;

  /**
   * {@code TokenUsage.ExtractionStatus}; {@code EXTRACTION_STATUS_UNSPECIFIED} reads as PARTIAL.
   */
  public enum Status {
    /** Every usage-bearing document was parsed: the counts are the answer's. */
    COMPLETE,
    /** Usable counts, but some usage-bearing input was lost: they may be stale or short. */
    PARTIAL,
    /** Usage was seen but no count could be extracted. */
    FAILED
  }

  public NativeUsage {
    check("inputTokens", inputTokens);
    check("outputTokens", outputTokens);
    if (cachedInputTokens < 0 || cachedInputTokens > MAX_TOKENS) {
      throw new IllegalArgumentException(
          "cachedInputTokens: " + cachedInputTokens + " (expected: 0.." + MAX_TOKENS + ")");
    }
    if (status == null) {
      throw new IllegalArgumentException("status: null (expected: a Status)");
    }
  }

  private static void check(String name, long v) {
    if (v < -1 || v > MAX_TOKENS) {
      throw new IllegalArgumentException(
          name + ": " + v + " (expected: -1 or 0.." + MAX_TOKENS + ")");
    }
  }

  /** Whether both counts are known and the status is not FAILED: usable for a charge. */
  public boolean usable() {
    return status != Status.FAILED && inputTokens >= 0 && outputTokens >= 0;
  }

  /** As the {@link Usage} the reconciliation charges (requires {@link #usable}). */
  public Usage usage() {
    if (!usable()) {
      throw new IllegalStateException("usage of an unusable record: " + this);
    }
    return new Usage(inputTokens, outputTokens, cachedInputTokens, true);
  }
}
