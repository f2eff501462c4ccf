package io.sluice.core.estimate;

/**
 * Tuning of {@link TokenEstimator}; immutable. Build with {@link #builder()}; {@link #defaults()}
 * gives the documented defaults (see docs/estimation.md for the calibration).
 */
public final class EstimatorSettings {
  /** Default UTF-8 bytes of prompt text per token for the heuristic (measured, see docs). */
  public static final double DEFAULT_BYTES_PER_TOKEN = 4.0;

  public static final long DEFAULT_IMAGE_TOKENS = 765;
  public static final long DEFAULT_ATTACHMENT_TOKENS = 1000;
  public static final long DEFAULT_TOOL_DEFINITION_OVERHEAD_TOKENS = 10;
  public static final long DEFAULT_PER_MESSAGE_OVERHEAD_TOKENS = 4;
  public static final long DEFAULT_REPLY_PRIMING_TOKENS = 3;
  public static final int DEFAULT_MAX_JSON_DEPTH = 64;
  public static final long DEFAULT_MAX_TOKENIZE_CHARS = 16_384;

  /** Upper bound of {@code maxJsonDepth} (Jackson's own default limit is 1000). */
  public static final int MAX_JSON_DEPTH_LIMIT = 512;

  private static final EstimatorSettings DEFAULTS = builder().build();

  private final double bytesPerToken;
  private final long imageTokens;
  private final long attachmentTokens;
  private final long toolDefinitionOverheadTokens;
  private final long perMessageOverheadTokens;
  private final long replyPrimingTokens;
  private final int maxJsonDepth;
  private final long maxTokenizeChars;

  private EstimatorSettings(Builder b) {
    this.bytesPerToken = b.bytesPerToken;
    this.imageTokens = b.imageTokens;
    this.attachmentTokens = b.attachmentTokens;
    this.toolDefinitionOverheadTokens = b.toolDefinitionOverheadTokens;
    this.perMessageOverheadTokens = b.perMessageOverheadTokens;
    this.replyPrimingTokens = b.replyPrimingTokens;
    this.maxJsonDepth = b.maxJsonDepth;
    this.maxTokenizeChars = b.maxTokenizeChars;
  }

  public static EstimatorSettings defaults() {
    return DEFAULTS;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder initialised with this instance's values. */
  public Builder toBuilder() {
    return new Builder()
        .bytesPerToken(bytesPerToken)
        .imageTokens(imageTokens)
        .attachmentTokens(attachmentTokens)
        .toolDefinitionOverheadTokens(toolDefinitionOverheadTokens)
        .perMessageOverheadTokens(perMessageOverheadTokens)
        .replyPrimingTokens(replyPrimingTokens)
        .maxJsonDepth(maxJsonDepth)
        .maxTokenizeChars(maxTokenizeChars);
  }

  /** UTF-8 bytes of text per token when no BPE encoding is known for the model. */
  public double bytesPerToken() {
    return bytesPerToken;
  }

  /** Fixed cost per image part ({@code image_url}, {@code input_image}, {@code image}). */
  public long imageTokens() {
    return imageTokens;
  }

  /**
   * Fixed cost per non-image attachment ({@code input_audio}, {@code file}, {@code input_file},
   * {@code document}, {@code container_upload}).
   */
  public long attachmentTokens() {
    return attachmentTokens;
  }

  /** Added per tool or function definition, on top of the tokens of its JSON text. */
  public long toolDefinitionOverheadTokens() {
    return toolDefinitionOverheadTokens;
  }

  /** Added per message (chat, Anthropic, Responses items, system, instructions). */
  public long perMessageOverheadTokens() {
    return perMessageOverheadTokens;
  }

  /** Added once per conversational request (chat, Responses, Anthropic) for the reply header. */
  public long replyPrimingTokens() {
    return replyPrimingTokens;
  }

  /** Maximum JSON nesting depth; deeper bodies fall back with cause {@code too_deep}. */
  public int maxJsonDepth() {
    return maxJsonDepth;
  }

  /**
   * Maximum characters per request passed to the BPE tokenizer; the rest is extrapolated with the
   * tokens-per-char ratio of the tokenized part, which bounds CPU per request.
   */
  public long maxTokenizeChars() {
    return maxTokenizeChars;
  }

  @Override
  public String toString() {
    return "EstimatorSettings{bytesPerToken="
        + bytesPerToken
        + ", imageTokens="
        + imageTokens
        + ", attachmentTokens="
        + attachmentTokens
        + ", toolDefinitionOverheadTokens="
        + toolDefinitionOverheadTokens
        + ", perMessageOverheadTokens="
        + perMessageOverheadTokens
        + ", replyPrimingTokens="
        + replyPrimingTokens
        + ", maxJsonDepth="
        + maxJsonDepth
        + ", maxTokenizeChars="
        + maxTokenizeChars
        + '}';
  }

  /** Builder with validating setters and {@link #build()}. */
  public static final class Builder {
    private double bytesPerToken = DEFAULT_BYTES_PER_TOKEN;
    private long imageTokens = DEFAULT_IMAGE_TOKENS;
    private long attachmentTokens = DEFAULT_ATTACHMENT_TOKENS;
    private long toolDefinitionOverheadTokens = DEFAULT_TOOL_DEFINITION_OVERHEAD_TOKENS;
    private long perMessageOverheadTokens = DEFAULT_PER_MESSAGE_OVERHEAD_TOKENS;
    private long replyPrimingTokens = DEFAULT_REPLY_PRIMING_TOKENS;
    private int maxJsonDepth = DEFAULT_MAX_JSON_DEPTH;
    private long maxTokenizeChars = DEFAULT_MAX_TOKENIZE_CHARS;

    private Builder() {}

    public Builder bytesPerToken(double value) {
      if (!(value >= 0.5 && value <= 64.0)) {
        throw new IllegalArgumentException(
            "bytesPerToken: " + value + " (expected: 0.5 <= value <= 64)");
      }
      this.bytesPerToken = value;
      return this;
    }

    public Builder imageTokens(long value) {
      this.imageTokens = nonNegative("imageTokens", value);
      return this;
    }

    public Builder attachmentTokens(long value) {
      this.attachmentTokens = nonNegative("attachmentTokens", value);
      return this;
    }

    public Builder toolDefinitionOverheadTokens(long value) {
      this.toolDefinitionOverheadTokens = nonNegative("toolDefinitionOverheadTokens", value);
      return this;
    }

    public Builder perMessageOverheadTokens(long value) {
      this.perMessageOverheadTokens = nonNegative("perMessageOverheadTokens", value);
      return this;
    }

    public Builder replyPrimingTokens(long value) {
      this.replyPrimingTokens = nonNegative("replyPrimingTokens", value);
      return this;
    }

    public Builder maxJsonDepth(int value) {
      if (value < 1 || value > MAX_JSON_DEPTH_LIMIT) {
        throw new IllegalArgumentException(
            "maxJsonDepth: " + value + " (expected: 1 <= value <= " + MAX_JSON_DEPTH_LIMIT + ")");
      }
      this.maxJsonDepth = value;
      return this;
    }

    public Builder maxTokenizeChars(long value) {
      this.maxTokenizeChars = nonNegative("maxTokenizeChars", value);
      return this;
    }

    public EstimatorSettings build() {
      return new EstimatorSettings(this);
    }

    private static long nonNegative(String field, long value) {
      if (value < 0) {
        throw new IllegalArgumentException(field + ": " + value + " (expected: >= 0)");
      }
      return value;
    }
  }
}
