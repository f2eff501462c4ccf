package io.sluice.core.session;

/**
 * What the tenant was charged when the request ended.
 *
 * @param rule {@link #REPORTED}, {@link #STREAMED}, {@link #NO_ANSWER}, {@link #UPSTREAM_ERROR},
 *     {@link #RESERVE}, or {@code none} before the end (or for a request that never ran)
 * @param meteredOutputTokens output tokens counted from the streamed text
 * @param cachedInputTokens the part of {@code inputTokens} the upstream reported read from its
 *     prompt cache (0 when it reported none, or when the input is the estimate's)
 */
public record Charge(
    String rule,
    long inputTokens,
    long outputTokens,
    long meteredOutputTokens,
    long cachedInputTokens) {
  /** A complete answer's reported usage. */
  public static final String REPORTED = "reported";

  /** An answer cut short: what it streamed (reported so far, or metered from its text). */
  public static final String STREAMED = "streamed";

  /** No answer began (cancel, reset or shutdown before response headers): the input only. */
  public static final String NO_ANSWER = "no_answer";

  /** The upstream answered an error without usage: nothing. */
  public static final String UPSTREAM_ERROR = "upstream_error";

  /** Nothing of the answer could be seen: the reservation stands. */
  public static final String RESERVE = "reserve";

  public static final Charge NONE = new Charge("none", 0, 0, 0, 0);
}
