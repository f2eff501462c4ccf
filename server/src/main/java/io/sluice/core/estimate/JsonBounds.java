package io.sluice.core.estimate;

import com.fasterxml.jackson.core.StreamReadConstraints;

/**
 * The nesting depth every body parse stops at: a body nested deeper is not read further (the parse
 * fails as for malformed JSON, and its caller falls back as it does for that), so no client or
 * upstream body can drive a parser into deep recursion or unbounded state. The request estimate has
 * its own configurable bound ({@code estimation.maxJsonDepth}, {@link EstimatorSettings}); the
 * parsers after it (the rewrite of an admitted body, intake's reads) use the estimator's upper
 * limit; responses and each SSE event use {@link #RESPONSE_MAX_DEPTH}.
 */
public final class JsonBounds {
  /**
   * Deepest nesting of a response body or one SSE event's data that is read. Usage sits at depth 2
   * ({@code {"usage": {...}}}, Anthropic's {@code message.usage} at 3); an answer's own content is
   * JSON strings, so a real response stays far below this.
   */
  public static final int RESPONSE_MAX_DEPTH = 128;

  /** Deepest nesting of a request body read after the estimate (rewrite, intake). */
  public static final int REQUEST_MAX_DEPTH = EstimatorSettings.MAX_JSON_DEPTH_LIMIT;

  private JsonBounds() {}

  /**
   * Jackson's read constraints for a parse that stops at {@code maxDepth} levels (Jackson counts
   * the open containers; at {@code maxDepth + 1} it fails with a constraints exception).
   */
  public static StreamReadConstraints depth(int maxDepth) {
    return StreamReadConstraints.builder().maxNestingDepth(maxDepth).build();
  }
}
