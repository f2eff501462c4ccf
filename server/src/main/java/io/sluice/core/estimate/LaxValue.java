package io.sluice.core.estimate;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.Locale;
import java.util.Set;

/**
 * A member's value read the way a Python engine reads it (docs/estimation.md, One reading of a
 * body): Python's {@code json} then pydantic in lax mode, as vLLM and SGLang validate a request.
 * Where that reading has no value Sluice also reads ({@code 8.5} for a count, {@code "1_000"}), the
 * value is {@link #INVALID} and the request is refused {@code invalid_request} rather than read
 * differently. Reads only the current token; a container is reported {@link #INVALID} and left for
 * the caller to skip.
 */
final class LaxValue {
  /** The member is {@code null}: absent to pydantic ({@code Optional[...] = None}). */
  static final long ABSENT = Long.MIN_VALUE + 1;

  /** No integer reading Sluice shares with the engine. */
  static final long INVALID = Long.MIN_VALUE;

  /** {@link #bool}: no boolean reading. */
  static final int BOOL_INVALID = -2;

  /** {@link #bool}: {@code null}. */
  static final int BOOL_ABSENT = -1;

  // pydantic's lax str -> bool words, compared lower-cased
  private static final Set<String> TRUE_WORDS = Set.of("1", "on", "t", "true", "y", "yes");
  private static final Set<String> FALSE_WORDS = Set.of("0", "off", "f", "false", "n", "no");

  // 2^63 as a double: at or beyond it a whole number saturates
  private static final double TWO_63 = 0x1p63;

  private LaxValue() {}

  /**
   * An integer member ({@code n}, {@code best_of}, the output caps): a JSON integer as written
   * (saturating at the ends of {@code long}); a float with no fraction as Python's {@code float}
   * holds it ({@code 8.0}, {@code 1e2}); a string of ASCII digits with an optional sign, optional
   * {@code .0…} and surrounding whitespace ({@code " 8 "}, {@code "8.0"}). Everything pydantic
   * reads otherwise or refuses is {@link #INVALID}: fractions, {@code NaN}, {@code ±Infinity},
   * booleans (pydantic reads {@code true} as 1; no count is meant by it), {@code "1_000"}, {@code
   * "0x10"}, containers.
   */
  static long integer(JsonParser p, JsonToken v) throws IOException {
    return switch (v) {
      case VALUE_NULL -> ABSENT;
      case VALUE_NUMBER_INT ->
          p.getNumberType() == JsonParser.NumberType.BIG_INTEGER
              ? (p.getBigIntegerValue().signum() > 0 ? Long.MAX_VALUE : INVALID + 2)
              : Math.max(INVALID + 2, p.getLongValue());
      case VALUE_NUMBER_FLOAT -> whole(p.getDoubleValue());
      case VALUE_STRING -> digits(p.getText());
      default -> INVALID;
    };
  }

  /** A double with no fraction, saturating; {@link #INVALID} for a fraction, NaN or infinity. */
  static long whole(double d) {
    if (Double.isNaN(d) || Double.isInfinite(d) || d != Math.rint(d)) {
      return INVALID;
    }
    if (d >= TWO_63) {
      return Long.MAX_VALUE;
    }
    return Math.max(INVALID + 2, (long) d);
  }

  /** pydantic's str → int, the part of it Sluice shares: {@code [+-]?[0-9]+(\.0+)?}, trimmed. */
  static long digits(String text) {
    int start = 0;
    int end = text.length();
    while (start < end && isSpace(text.charAt(start))) {
      start++;
    }
    while (end > start && isSpace(text.charAt(end - 1))) {
      end--;
    }
    int dot = text.indexOf('.', start);
    if (dot >= 0 && dot < end) {
      if (dot == end - 1) {
        return INVALID; // "8."
      }
      for (int i = dot + 1; i < end; i++) {
        if (text.charAt(i) != '0') {
          return INVALID;
        }
      }
      end = dot;
    }
    boolean negative = false;
    if (start < end && (text.charAt(start) == '+' || text.charAt(start) == '-')) {
      negative = text.charAt(start) == '-';
      start++;
    }
    if (start == end) {
      return INVALID;
    }
    long value = 0;
    for (int i = start; i < end; i++) {
      char c = text.charAt(i);
      if (c < '0' || c > '9') {
        return INVALID;
      }
      if (value > (Long.MAX_VALUE - (c - '0')) / 10) {
        value = Long.MAX_VALUE; // saturate, keep checking the digits
      } else {
        value = value * 10 + (c - '0');
      }
    }
    return negative ? Math.max(INVALID + 2, -value) : value;
  }

  /** The whitespace pydantic strips around a number that Sluice strips too (ASCII only). */
  private static boolean isSpace(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
  }

  /**
   * A boolean member ({@code stream}, {@code parallel_tool_calls}): 1 or 0 for pydantic's lax
   * readings ({@code true}, {@code 0}, {@code 1.0}, {@code "yes"}, {@code "Off"}, ...), {@link
   * #BOOL_ABSENT} for {@code null}, else {@link #BOOL_INVALID} (pydantic refuses it too).
   */
  static int bool(JsonParser p, JsonToken v) throws IOException {
    return switch (v) {
      case VALUE_TRUE -> 1;
      case VALUE_FALSE -> 0;
      case VALUE_NULL -> BOOL_ABSENT;
      case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> {
        long n = v == JsonToken.VALUE_NUMBER_INT ? integer(p, v) : whole(p.getDoubleValue());
        yield n == 0 || n == 1 ? (int) n : BOOL_INVALID;
      }
      case VALUE_STRING -> {
        String s = p.getText().toLowerCase(Locale.ROOT);
        yield TRUE_WORDS.contains(s) ? 1 : FALSE_WORDS.contains(s) ? 0 : BOOL_INVALID;
      }
      default -> BOOL_INVALID;
    };
  }
}
