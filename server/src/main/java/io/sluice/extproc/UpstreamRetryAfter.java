package io.sluice.extproc;

import java.time.Clock;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The pause an upstream asked for in its response headers (or a gRPC upstream's trailers): {@code
 * retry-after-ms} (milliseconds, as some providers send), else gRPC's {@code
 * grpc-retry-pushback-ms} (milliseconds; a negative one, "do not retry", is not read), else {@code
 * retry-after} in seconds or as an HTTP date. Nanoseconds, or -1 when there is none or it cannot be
 * read (an unreadable value is ignored, never trusted).
 */
final class UpstreamRetryAfter {
  private static final long MAX_NANOS = 86_400L * 1_000_000_000L; // a day: anything longer is odd

  private UpstreamRetryAfter() {}

  static long nanos(Inbound h, Clock clock) {
    return nanos(h::header, clock);
  }

  /** As {@link #nanos(Inbound, Clock)}, from the headers (or trailers) {@code header} reads. */
  static long nanos(Function<String, @Nullable String> header, Clock clock) {
    long ms = number(header.apply("retry-after-ms"), 1_000_000L);
    if (ms < 0) {
      ms = number(header.apply("grpc-retry-pushback-ms"), 1_000_000L);
    }
    if (ms >= 0) {
      return ms;
    }
    String ra = header.apply("retry-after");
    long s = number(ra, 1_000_000_000L);
    if (s >= 0 || ra == null) {
      return s;
    }
    try {
      ZonedDateTime at = ZonedDateTime.parse(ra.trim(), DateTimeFormatter.RFC_1123_DATE_TIME);
      long millis = at.toInstant().toEpochMilli() - clock.millis();
      return Math.min(MAX_NANOS, Math.max(0, millis) * 1_000_000L);
    } catch (DateTimeParseException e) {
      return -1;
    }
  }

  /** {@code value} (a non-negative decimal) × {@code unitNanos}, or -1. */
  private static long number(@Nullable String value, long unitNanos) {
    if (value == null) {
      return -1;
    }
    try {
      double v = Double.parseDouble(value.trim());
      if (!(v >= 0) || Double.isInfinite(v)) {
        return -1;
      }
      return (long) Math.min(MAX_NANOS, v * unitNanos);
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
