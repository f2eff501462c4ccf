package io.sluice.config;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parsing of environment-variable settings (the rate limit service's, the stores'), with the
 * reference's syntax: Go-style durations, {@code true/false/1/0}, sizes with {@code KiB/MiB/GiB}.
 * Every error names the variable and the expected value.
 */
public final class EnvValues {
  private EnvValues() {}

  private static final Pattern DURATION_PART =
      Pattern.compile("(\\d+(?:\\.\\d+)?)(ns|us|µs|ms|s|m|h)");

  private static final Pattern SIZE =
      Pattern.compile("(\\d+)\\s*([KMG]i?B)?", Pattern.CASE_INSENSITIVE);

  /**
   * Parses Go-style durations ({@code 50ms}, {@code 1m30s}, {@code 10s}); a bare number is seconds.
   */
  public static Duration duration(String name, String text) {
    String t = text.trim();
    if (t.matches("\\d+")) {
      return Duration.ofSeconds(Long.parseLong(t));
    }
    Matcher m = DURATION_PART.matcher(t);
    long nanos = 0;
    int end = 0;
    while (m.find() && m.start() == end) {
      double v = Double.parseDouble(m.group(1));
      long unit =
          switch (m.group(2)) {
            case "ns" -> 1L;
            case "us", "µs" -> 1_000L;
            case "ms" -> 1_000_000L;
            case "s" -> 1_000_000_000L;
            case "m" -> 60_000_000_000L;
            default -> 3_600_000_000_000L;
          };
      nanos += (long) (v * unit);
      end = m.end();
    }
    if (end != t.length() || t.isEmpty()) {
      throw new IllegalArgumentException(
          name + ": " + text + " (expected: a duration like 50ms or 10s)");
    }
    return Duration.ofNanos(nanos);
  }

  public static boolean bool(String name, String text) {
    return switch (text.trim().toLowerCase(Locale.ROOT)) {
      case "true", "1", "t", "yes" -> true;
      case "false", "0", "f", "no", "" -> false;
      default ->
          throw new IllegalArgumentException(name + ": " + text + " (expected: true or false)");
    };
  }

  /** {@code env[name]} as a boolean, {@code dflt} when unset. */
  public static boolean bool(Map<String, String> env, String name, boolean dflt) {
    String v = env.get(name);
    return v == null ? dflt : bool(name, v);
  }

  /** {@code env[name]} as an integer, {@code dflt} when unset or blank. */
  public static long integer(Map<String, String> env, String name, long dflt) {
    String v = env.get(name);
    if (v == null || v.isBlank()) {
      return dflt;
    }
    try {
      return Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + ": " + v + " (expected: an integer)");
    }
  }

  /** {@code env[name]} as a number, {@code dflt} when unset or blank. */
  public static double number(Map<String, String> env, String name, double dflt) {
    String v = env.get(name);
    if (v == null || v.isBlank()) {
      return dflt;
    }
    try {
      return Double.parseDouble(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + ": " + v + " (expected: a number)");
    }
  }

  /** A size: bytes, or a number with a KiB, MiB or GiB suffix (KB/MB/GB read the same). */
  public static long bytes(Map<String, String> env, String name, long dflt) {
    String v = env.get(name);
    if (v == null || v.isBlank()) {
      return dflt;
    }
    Matcher m = SIZE.matcher(v.trim());
    if (!m.matches()) {
      throw new IllegalArgumentException(
          name + ": " + v + " (expected: a number of bytes, or with a KiB, MiB or GiB suffix)");
    }
    try {
      long n = Long.parseLong(m.group(1));
      int shift =
          m.group(2) == null
              ? 0
              : switch (Character.toUpperCase(m.group(2).charAt(0))) {
                case 'K' -> 10;
                case 'M' -> 20;
                default -> 30;
              };
      if (n > (Long.MAX_VALUE >> shift)) {
        throw new NumberFormatException();
      }
      return n << shift;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + ": " + v + " (expected: a size below 2^63 bytes)");
    }
  }
}
