package io.sluice.core.retry;

/**
 * What the request says about its own attempt, from the signals the policy reads ({@code
 * signals.retryCount}, {@code signals.attemptCount}). Negative: the signal is absent or not a
 * number. Neither can make a request an original: a repeated operation id is a retry whatever these
 * say.
 *
 * @param retryCount an SDK's retry counter ({@code x-stainless-retry-count}: 0 on the first try)
 * @param attemptCount Envoy's attempt count ({@code x-envoy-attempt-count}: 1 on the first try)
 */
public record AttemptSignals(int retryCount, int attemptCount) {
  public static final AttemptSignals NONE = new AttemptSignals(-1, -1);

  /** The largest attempt number these signals claim (1: none claims a retry). */
  public int claimedAttempt() {
    return Math.max(1, Math.max(retryCount + 1, attemptCount));
  }

  /** Parses a signal's value: a non-negative integer (capped at 1000), else -1 (null: absent). */
  public static int parse(@org.jspecify.annotations.Nullable String value) {
    if (value == null) {
      return -1;
    }
    String v = value.trim();
    if (v.isEmpty() || v.length() > 9) {
      return v.length() > 9 && v.chars().allMatch(Character::isDigit) ? 1000 : -1;
    }
    try {
      int n = Integer.parseInt(v);
      return n < 0 ? -1 : Math.min(1000, n);
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
