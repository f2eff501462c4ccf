package io.sluice.rls.config;

import java.util.Locale;
import java.util.Optional;

/**
 * Rate limit units with envoyproxy/ratelimit's lengths; "month" is 30 days and "year" 365 days,
 * windows are aligned to the Unix epoch. {@link #protoNumber()} is the value of {@code
 * RateLimitResponse.RateLimit.Unit}.
 */
public enum RateLimitUnit {
  SECOND(1, 1),
  MINUTE(2, 60),
  HOUR(3, 3_600),
  DAY(4, 86_400),
  MONTH(5, 2_592_000),
  YEAR(6, 31_536_000),
  WEEK(7, 604_800);

  private final int protoNumber;
  private final long seconds;

  RateLimitUnit(int protoNumber, long seconds) {
    this.protoNumber = protoNumber;
    this.seconds = seconds;
  }

  public int protoNumber() {
    return protoNumber;
  }

  public long seconds() {
    return seconds;
  }

  /** Case-insensitive lookup of a YAML unit name. */
  public static Optional<RateLimitUnit> parse(String name) {
    try {
      return Optional.of(valueOf(name.toUpperCase(Locale.ROOT)));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  /**
   * Lookup by the number of {@code envoy.type.v3.RateLimitUnit} (override units: SECOND=1 to
   * YEAR=6; 7 is accepted as WEEK).
   */
  public static Optional<RateLimitUnit> forProtoNumber(int n) {
    for (RateLimitUnit u : values()) {
      if (u.protoNumber == n) {
        return Optional.of(u);
      }
    }
    return Optional.empty();
  }
}
