package io.sluice.core.retry;

import io.sluice.core.admission.Reason;
import org.jspecify.annotations.Nullable;

/**
 * One request's attempt as retry control classified it (the decision record's {@code attempt}).
 *
 * @param number the attempt number: 1 for an original, else the largest of the operation's count in
 *     its window and what the signals claim
 * @param retry whether it is a retry
 * @param signal what made it a retry: {@link #OPERATION} (its operation id seen again), {@link
 *     #SDK} ({@code retryCount}), {@link #ENVOY} ({@code attemptCount}); {@link #NONE} for an
 *     original
 * @param retryAfter {@link #HONOURED} or {@link #EARLY} when a refusal was remembered for it (a
 *     retry), else {@link #NONE}
 * @param previousReason the remembered refusal's reason code, {@code unknown} for a retry with none
 *     (an upstream error, a timeout, a refusal elsewhere), {@code none} for an original
 * @param budgetTokens tokens left in its budget bucket (NaN: none touched)
 * @param duplicate {@link #NONE}, {@link #IN_FLIGHT} or {@link #REPLAY}: another attempt of its
 *     operation runs, or completed within the replay window
 * @param claimKey the in-flight claim it holds, to give back once ({@link RetryControl#complete}),
 *     or null
 * @param refusal the refusal retry control asks for, or null to go on
 * @param storeFailed the store did not answer (then {@code quotas.failureMode} decided)
 */
public record Attempt(
    int number,
    boolean retry,
    String signal,
    String retryAfter,
    String previousReason,
    double budgetTokens,
    String duplicate,
    @Nullable String claimKey,
    String owner,
    long replayMillis,
    @Nullable Refusal refusal,
    boolean storeFailed) {
  public static final String NONE = "none";
  public static final String OPERATION = "operation";
  public static final String SDK = "sdk";
  public static final String ENVOY = "envoy";
  public static final String HONOURED = "honoured";
  public static final String EARLY = "early";
  public static final String IN_FLIGHT = "in_flight";
  public static final String REPLAY = "replay";
  public static final String UNKNOWN = "unknown";

  /** Not classified (retry control off, or the request never got that far). */
  public static final Attempt UNCLASSIFIED =
      new Attempt(0, false, NONE, NONE, NONE, Double.NaN, NONE, null, "", 0, null, false);

  /**
   * An original with no operation id and no retry header that retry control did not send to a
   * shared store ({@link AttemptStore#shared}): nothing to claim, refuse or read; its budget refill
   * goes with a later call, so no bucket level is known here.
   */
  public static final Attempt ORIGINAL_UNSENT =
      new Attempt(1, false, NONE, NONE, NONE, Double.NaN, NONE, null, "", 0, null, false);

  /** Whether retry control classified this request. */
  public boolean classified() {
    return number > 0;
  }

  /** {@code original} or {@code retry}. */
  public String kind() {
    return retry ? "retry" : "original";
  }

  /** The refusal retry control asks for. */
  public record Refusal(Reason reason, int status, long retryAfterSeconds, String message) {}
}
