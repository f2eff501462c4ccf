package io.sluice.rls.config;

import java.util.Locale;

/** What a limit does when the store cannot answer. */
public enum FailureMode {
  /** Report OK (let traffic through); counted. */
  OPEN,
  /** Report OVER_LIMIT; counted. */
  CLOSED,
  /** Count in process memory against {@code ceil(limit / expected replicas)}; counted. */
  LOCAL,
  /**
   * Fail the call with gRPC UNKNOWN like envoyproxy/ratelimit (Envoy's failure_mode_deny decides).
   */
  ERROR;

  public static FailureMode parse(String field, String text) {
    try {
      return valueOf(text.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          field + ": " + text + " (expected: open, closed, local or error)");
    }
  }
}
