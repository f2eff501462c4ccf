package io.sluice.core.estimate;

/**
 * Stable values of {@link TokenEstimate#fallbackCause()}: why a body was estimated with the
 * whole-body byte heuristic. Never renamed (metrics and logs use them).
 */
public final class FallbackCause {
  /** The body is empty or only whitespace. */
  public static final String EMPTY = "empty";

  /** The body is not valid UTF-8. */
  public static final String NOT_UTF8 = "not_utf8";

  /** The body is not JSON (syntax error). */
  public static final String NOT_JSON = "not_json";

  /** The JSON ends before the root value is complete. */
  public static final String TRUNCATED = "truncated";

  /** The JSON nests deeper than {@code maxJsonDepth}. */
  public static final String TOO_DEEP = "too_deep";

  /** The root or a prompt-bearing field has the wrong JSON type (e.g. {@code "messages": 3}). */
  public static final String WRONG_TYPE = "wrong_type";

  /** The format's prompt field ({@code messages}, {@code prompt}, {@code input}) is absent. */
  public static final String MISSING_INPUT = "missing_input";

  /** Format {@code auto} and neither the path nor the JSON keys identify the format. */
  public static final String UNKNOWN_FORMAT = "unknown_format";

  /** A Jackson read constraint other than depth was exceeded (e.g. a 1000-digit number). */
  public static final String TOO_LARGE = "too_large";

  /** An unexpected internal error; a bug, reported rather than thrown. */
  public static final String INTERNAL_ERROR = "internal_error";

  private FallbackCause() {}
}
