package io.sluice.core.estimate;

/**
 * Token usage reported by the upstream in its response.
 *
 * @param inputTokens prompt tokens, including cached ones ({@code prompt_tokens}, or Anthropic's
 *     {@code input_tokens + cache_creation_input_tokens + cache_read_input_tokens})
 * @param outputTokens completion tokens ({@code completion_tokens} / {@code output_tokens})
 * @param cachedInputTokens the part of {@code inputTokens} read from the provider's prompt cache
 *     (OpenAI {@code prompt_tokens_details.cached_tokens}, Responses {@code
 *     input_tokens_details.cached_tokens}, Anthropic {@code cache_read_input_tokens}); at most
 *     {@code inputTokens}
 * @param reported false when the response carried no usage
 */
public record Usage(long inputTokens, long outputTokens, long cachedInputTokens, boolean reported) {
  public static final Usage NONE = new Usage(0, 0, 0, false);

  public Usage {
    if (inputTokens < 0) {
      throw new IllegalArgumentException("inputTokens: " + inputTokens + " (expected: >= 0)");
    }
    if (outputTokens < 0) {
      throw new IllegalArgumentException("outputTokens: " + outputTokens + " (expected: >= 0)");
    }
    if (cachedInputTokens < 0) {
      throw new IllegalArgumentException(
          "cachedInputTokens: " + cachedInputTokens + " (expected: >= 0)");
    }
    cachedInputTokens = Math.min(cachedInputTokens, inputTokens);
  }
}
