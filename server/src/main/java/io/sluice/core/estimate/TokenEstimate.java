package io.sluice.core.estimate;

import org.jspecify.annotations.Nullable;

/**
 * The estimated work of one request.
 *
 * @param inputTokens estimated prompt tokens, {@code >= 0}
 * @param outputReserveTokens tokens reserved for the output, within {@code [0,
 *     limits.maxOutputTokens]}
 * @param method how {@code inputTokens} was computed: {@link #METHOD_BPE_O200K}, {@link
 *     #METHOD_BPE_CL100K}, {@link #METHOD_BYTES} or {@link #METHOD_CONTENT_LENGTH}
 * @param fallbackCause why the body could not be read and the whole-body byte heuristic was used
 *     (one of {@link FallbackCause}), or {@code null}
 * @param model the body's {@code model} string, or {@code null}
 * @param stream the body's {@code stream} flag
 * @param outputClamped true when the requested output cap was above the maximum or invalid
 * @param fanOut the tools, forced tool choice and parallel tool calls the body declares ({@link
 *     FanOut#NONE} when it declares none or was not read)
 * @param contentLengthBytes the body's size an estimate at the headers divided ({@link
 *     #METHOD_CONTENT_LENGTH}, and the native request info's refinement of it), or -1: what the
 *     learned bytes-per-token learns from once the answer's input is known ({@link
 *     LearnedBytesPerToken})
 */
public record TokenEstimate(
    long inputTokens,
    long outputReserveTokens,
    String method,
    @Nullable String fallbackCause,
    @Nullable String model,
    boolean stream,
    boolean outputClamped,
    FanOut fanOut,
    long contentLengthBytes) {

  public static final String METHOD_BPE_O200K = "bpe:o200k_base";
  public static final String METHOD_BPE_CL100K = "bpe:cl100k_base";
  public static final String METHOD_BYTES = "bytes";
  public static final String METHOD_CONTENT_LENGTH = "content-length";
  public static final String METHOD_DEFAULT = "default";

  public TokenEstimate {
    if (fanOut == null) {
      throw new IllegalArgumentException("fanOut: null (expected: FanOut.NONE or a value)");
    }
    if (inputTokens < 0) {
      throw new IllegalArgumentException("inputTokens: " + inputTokens + " (expected: >= 0)");
    }
    if (outputReserveTokens < 0) {
      throw new IllegalArgumentException(
          "outputReserveTokens: " + outputReserveTokens + " (expected: >= 0)");
    }
    if (method == null) {
      throw new IllegalArgumentException("method: null (expected: a method name)");
    }
    if (contentLengthBytes < -1) {
      throw new IllegalArgumentException(
          "contentLengthBytes: " + contentLengthBytes + " (expected: -1 or >= 0)");
    }
  }

  /** This estimate with another output reserve (the learned one: {@code OutputReserves}). */
  public TokenEstimate withOutputReserve(long outputReserveTokens) {
    return with(outputReserveTokens, model);
  }

  /** This estimate for another model (a reroute rung's: its price, its usage's tokenizer). */
  public TokenEstimate withModel(String model) {
    return with(outputReserveTokens, model);
  }

  private TokenEstimate with(long outputReserveTokens, @Nullable String model) {
    return new TokenEstimate(
        inputTokens,
        outputReserveTokens,
        method,
        fallbackCause,
        model,
        stream,
        outputClamped,
        fanOut,
        contentLengthBytes);
  }

  /** Input plus output reserve, saturating. */
  public long totalTokens() {
    long sum = inputTokens + outputReserveTokens;
    return sum < 0 ? Long.MAX_VALUE : sum;
  }
}
