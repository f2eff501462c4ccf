package io.sluice.core.estimate;

import org.jspecify.annotations.Nullable;

/**
 * What Envoy's request-info AI filter declares of a request before ext_proc's first message ({@code
 * envoy.data.ai.v3.RequestInfo}, docs/envoy.md "Envoy's native AI metadata"): client-declared,
 * parsed by Envoy, read by Sluice field by field and bounded ({@link #MAX_COUNT}, {@link
 * #MAX_OUTPUT_TOKENS}); an absent or unusable field is {@code null} / -1.
 *
 * @param model the requested model, or null
 * @param stream whether a streamed answer was asked for, or null when not declared
 * @param maxOutputTokens the requested output cap, {@code [0, MAX_OUTPUT_TOKENS]}, or -1
 * @param messageCount messages in the conversation, {@code [0, MAX_COUNT]}, or -1
 * @param toolCount tools declared, {@code [0, MAX_COUNT]}, or -1
 */
public record NativeRequestInfo(
    @Nullable String model,
    @Nullable Boolean stream,
    long maxOutputTokens,
    int messageCount,
    int toolCount) {
  /** The largest output cap read (above: ignored as unusable). */
  public static final long MAX_OUTPUT_TOKENS = 100_000_000L;

  /** The largest message or tool count read. */
  public static final int MAX_COUNT = 1_000_000;

  /** The longest model name read (Envoy's own bound on a string it publishes). */
  public static final int MAX_MODEL_CHARS = 256;

  public NativeRequestInfo {
    if (maxOutputTokens < -1 || maxOutputTokens > MAX_OUTPUT_TOKENS) {
      throw new IllegalArgumentException(
          "maxOutputTokens: "
              + maxOutputTokens
              + " (expected: -1 or 0.."
              + MAX_OUTPUT_TOKENS
              + ")");
    }
    if (messageCount < -1 || messageCount > MAX_COUNT) {
      throw new IllegalArgumentException(
          "messageCount: " + messageCount + " (expected: -1 or 0.." + MAX_COUNT + ")");
    }
    if (toolCount < -1 || toolCount > MAX_COUNT) {
      throw new IllegalArgumentException(
          "toolCount: " + toolCount + " (expected: -1 or 0.." + MAX_COUNT + ")");
    }
    if (model != null && (model.isEmpty() || model.length() > MAX_MODEL_CHARS)) {
      model = null;
    }
  }

  /** Nothing declared (every field absent). */
  public static final NativeRequestInfo NONE = new NativeRequestInfo(null, null, -1, -1, -1);

  /** Whether any field was declared. */
  public boolean any() {
    return model != null
        || stream != null
        || maxOutputTokens >= 0
        || messageCount >= 0
        || toolCount >= 0;
  }
}
