package io.sluice.core.budget;

/**
 * The tokens of one request, as a budget counts them: {@code input} all prompt tokens, of which
 * {@code cachedInput} were read from the provider's prompt cache (OpenAI's {@code
 * prompt_tokens_details.cached_tokens}, Anthropic's cache reads), and {@code output}.
 */
public record TokenUse(long input, long output, long cachedInput) {
  public static final TokenUse NONE = new TokenUse(0, 0, 0);

  public TokenUse {
    if (input < 0 || output < 0 || cachedInput < 0) {
      throw new IllegalArgumentException(
          "token use " + input + "/" + output + "/" + cachedInput + " (expected: >= 0)");
    }
    cachedInput = Math.min(cachedInput, input);
  }

  /** Prompt tokens not read from the cache. */
  public long uncachedInput() {
    return input - cachedInput;
  }

  /** Every token, cached input included. */
  public long total() {
    return input + output;
  }
}
