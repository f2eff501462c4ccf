package io.sluice.core.estimate;

/**
 * Token usage reported by the upstream in its response.
 *
 * @param inputTokens prompt tokens, including cached ones ({@code prompt_tokens}, or Anthropic's
 *     {@code input_tokens + cache_creation_input_tokens + cache_read_input_tokens})
 * @param outputTokens completion tokens ({@code completion_tokens} / {@code output_tokens})
 * @param reported false when the response carried no usage
 */
public record Usage(long inputTokens, long outputTokens, boolean reported) {
  public static final Usage NONE = new Usage(0, 0, false);

  public Usage {
    if (inputTokens < 0) {
      throw new IllegalArgumentException("inputTokens: " + inputTokens + " (expected: >= 0)");
    }
    if (outputTokens < 0) {
      throw new IllegalArgumentException("outputTokens: " + outputTokens + " (expected: >= 0)");
    }
  }
}
