package io.sluice.core.retry;

import org.jspecify.annotations.Nullable;

/**
 * What the request says about its own attempt, from the signals the policy reads ({@code
 * signals.retryCount}, {@code signals.attemptCount}), and where it came from ({@code
 * signals.client}). Negative: the signal is absent or not a number. Neither count can make a
 * request an original: a repeated operation id is a retry whatever these say.
 *
 * @param retryCount an SDK's retry counter ({@code x-stainless-retry-count}: 0 on the first try)
 * @param attemptCount Envoy's attempt count ({@code x-envoy-attempt-count}: 1 on the first try)
 * @param client the downstream client's address as Envoy reports it (the {@code client} signal, by
 *     default the {@code source.address} attribute), read for the anonymous tenant only: its
 *     retries are counted per client address, not in one bucket for every client without a tenant;
 *     null when absent (or the request has a tenant)
 */
public record AttemptSignals(int retryCount, int attemptCount, @Nullable String client) {
  public static final AttemptSignals NONE = new AttemptSignals(-1, -1, null);

  /** The largest attempt number these signals claim (1: none claims a retry). */
  public int claimedAttempt() {
    return Math.max(1, Math.max(retryCount + 1, attemptCount));
  }

  /** Parses a signal's value: a non-negative integer (capped at 1000), else -1 (null: absent). */
  public static int parse(@Nullable String value) {
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

  /**
   * The host of a client address: Envoy's {@code source.address} is {@code host:port} ({@code
   * [v6]:port} for IPv6), and a client's next connection has another port, so the port is dropped;
   * anything else (a bare address, a header's value) is kept as it is, trimmed. Null or empty:
   * null.
   */
  public static @Nullable String clientHost(@Nullable String address) {
    if (address == null) {
      return null;
    }
    String a = address.trim();
    if (a.isEmpty()) {
      return null;
    }
    int colon = a.lastIndexOf(':');
    if (colon > 0 && colon < a.length() - 1 && digits(a, colon + 1)) {
      String host = a.substring(0, colon);
      if (host.startsWith("[") && host.endsWith("]")) {
        return host.substring(1, host.length() - 1); // [v6]:port
      }
      if (host.indexOf(':') < 0) {
        return host; // v4 or a name, with a port
      }
    }
    return a; // no port, or a bare IPv6 address (its last group is not a port)
  }

  private static boolean digits(String s, int from) {
    if (s.length() - from > 5) {
      return false;
    }
    for (int i = from; i < s.length(); i++) {
      if (s.charAt(i) < '0' || s.charAt(i) > '9') {
        return false;
      }
    }
    return true;
  }
}
