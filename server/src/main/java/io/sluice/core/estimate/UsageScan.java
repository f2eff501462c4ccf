package io.sluice.core.estimate;

/**
 * The {@code usage} of a JSON answer that arrived whole, read by one byte scan instead of Jackson's
 * parser (no parser, no symbol table, no String): what {@link UsageExtractor}'s token handling
 * reads of the same bytes, for a strict subset of JSON the parser reads the same way.
 *
 * <p>The scan is sure only of a body that is one well-formed object in that subset: JSON
 * whitespace, strings of strict UTF-8 without control characters and with only JSON's escapes,
 * numbers of JSON's grammar, {@code true}/{@code false}/{@code null}, at most 64 levels deep, no
 * trailing comma, the root object closed (anything after it is never read, as the parser stops
 * there). It is unsure (and changes nothing; the caller parses) of anything else, and of what it
 * cannot read as the parser would: an escaped member name where the name matters, a token count
 * that is not a plain integer of at most 18 digits, a name or number longer than the parser might
 * accept. Nothing outside the root's {@code usage} objects is interpreted.
 *
 * <p>Read as the parser's token handling reads it: each top-level {@code usage} object (the later
 * of duplicates winning field by field) gives its token counts ({@link UsageFields#fieldIndex}), a
 * count that is a string, boolean or null reading as not seen, a count that is an object or array
 * ignored, and {@code cached_tokens} of a {@code prompt_tokens_details} / {@code
 * input_tokens_details} object. {@code UsageScanTest} checks it against the parser on seeded random
 * answers.
 */
final class UsageScan {
  private UsageScan() {}

  private static final int MAX_DEPTH = 64; // the bit mask of containers
  private static final int MAX_NAME = 1000; // bytes of a member name the parser surely accepts
  private static final int MAX_NUMBER = 100; // bytes of a number the parser surely accepts
  private static final int MAX_COUNT_DIGITS = 18; // a long, surely

  private static final byte[] USAGE = ascii("usage");
  private static final byte[] CACHED = ascii("cached_tokens");
  private static final byte[][] FIELDS = {
    ascii("prompt_tokens"),
    ascii("completion_tokens"),
    ascii("input_tokens"),
    ascii("output_tokens"),
    ascii("cache_creation_input_tokens"),
    ascii("cache_read_input_tokens")
  };
  private static final byte[] PROMPT_DETAILS = ascii("prompt_tokens_details");
  private static final byte[] INPUT_DETAILS = ascii("input_tokens_details");

  // a scalar read as a token count: not a number (-1, "not seen"), or unsure
  private static final long NOT_A_COUNT = -1;
  private static final long UNSURE = -2;

  private static byte[] ascii(String s) {
    return s.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
  }

  /**
   * Reads {@code b[offset, offset + length)}: true when sure, the usage objects then merged into
   * {@code into} (the root object closed: the answer is complete); false when unsure, {@code into}
   * untouched.
   */
  static boolean read(byte[] b, int offset, int length, UsageFields into) {
    int end = offset + length;
    int p = ws(b, offset, end);
    if (p >= end || b[p] != '{') {
      return false;
    }
    long objects = 1; // bit d-1 set: the container at depth d is an object
    int depth = 1;
    p++;
    long[] current = null; // the usage object being read
    long[] read = null; // the usage objects read, merged
    int usageDepth = 0; // 2 inside a usage object (its members), else 0
    boolean inDetails = false; // inside a usage object's details object (depth 3)
    boolean first = true; // just after an opening bracket
    while (true) {
      p = ws(b, p, end);
      if (p >= end) {
        return false; // truncated
      }
      boolean object = (objects & (1L << (depth - 1))) != 0;
      int c = b[p];
      if (!(first && c == (object ? '}' : ']'))) { // else an empty container: closed below
        int field = -1; // the usage member this value is (UsageFields index), or -1
        boolean details = false;
        boolean usage = false;
        if (object) {
          if (c != '"') {
            return false;
          }
          int nameStart = p + 1;
          int nameEnd = string(b, nameStart, end, true);
          if (nameEnd < 0 || nameEnd - nameStart > MAX_NAME) {
            return false;
          }
          boolean inUsage = depth == 2 && usageDepth == 2;
          boolean matters = depth == 1 || inUsage || (inDetails && depth == 3);
          if (matters && escaped(b, nameStart, nameEnd)) {
            return false; // the parser decodes it: unsure
          }
          if (depth == 1) {
            usage = equals(b, nameStart, nameEnd, USAGE);
          } else if (inUsage) {
            field = field(b, nameStart, nameEnd);
            details =
                equals(b, nameStart, nameEnd, PROMPT_DETAILS)
                    || equals(b, nameStart, nameEnd, INPUT_DETAILS);
          } else if (matters) { // a member of the details object
            field = equals(b, nameStart, nameEnd, CACHED) ? UsageFields.CACHED : -1;
          }
          p = ws(b, nameEnd + 1, end);
          if (p >= end || b[p] != ':') {
            return false;
          }
          p = ws(b, p + 1, end);
          if (p >= end) {
            return false;
          }
          c = b[p];
        }
        // the value
        if (c == '{' || c == '[') {
          if (depth == MAX_DEPTH) {
            return false;
          }
          if (c == '{') {
            objects |= 1L << depth;
          } else {
            objects &= ~(1L << depth);
          }
          depth++;
          if (usage && c == '{') {
            usageDepth = 2;
            if (current == null) {
              current = UsageFields.newFields();
            } else {
              java.util.Arrays.fill(current, -1);
            }
          } else if (details && c == '{') {
            inDetails = true;
          }
          p++;
          first = true;
          continue;
        }
        long count;
        if (c == '"') {
          p = string(b, p + 1, end, false);
          if (p < 0) {
            return false;
          }
          p++;
          count = NOT_A_COUNT;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
          int start = p;
          p = number(b, p, end);
          if (p < 0 || p - start > MAX_NUMBER) {
            return false;
          }
          count = field >= 0 ? count(b, start, p) : NOT_A_COUNT;
          if (count == UNSURE) {
            return false;
          }
        } else {
          int n = literal(b, p, end);
          if (n < 0) {
            return false;
          }
          p = n;
          count = NOT_A_COUNT;
        }
        if (field >= 0 && current != null) {
          current[field] = count; // a string, boolean or null: not seen (the parser's -1)
        }
      }
      // after a value (or an empty container): a comma, or the container's end
      while (true) {
        p = ws(b, p, end);
        if (p >= end) {
          return false;
        }
        object = (objects & (1L << (depth - 1))) != 0;
        c = b[p];
        if (c == ',') {
          p++;
          first = false;
          int q = ws(b, p, end);
          if (q >= end || b[q] == '}' || b[q] == ']') {
            return false; // truncated, or a trailing comma
          }
          break;
        }
        if (c != (object ? '}' : ']')) {
          return false;
        }
        p++;
        depth--;
        if (depth == 0) {
          if (read != null) {
            into.merge(read);
          }
          return true; // the root closed: nothing after it is read
        }
        if (inDetails && depth == 2) {
          inDetails = false;
        } else if (usageDepth == 2 && depth == 1) {
          usageDepth = 0;
          if (read == null) {
            read = current;
            current = null;
          } else if (current != null) {
            merge(read, current);
          }
        }
      }
    }
  }

  private static void merge(long[] into, long[] fields) {
    for (int i = 0; i < fields.length; i++) {
      if (fields[i] >= 0) {
        into[i] = fields[i];
      }
    }
  }

  /** The first index at or after {@code p} that is not JSON whitespace. */
  private static int ws(byte[] b, int p, int end) {
    while (p < end) {
      int c = b[p];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
        return p;
      }
      p++;
    }
    return p;
  }

  /**
   * The index of the closing quote of the string whose content starts at {@code p}, or -1 (not in
   * the subset: a control character, an escape JSON does not have, UTF-8 that is not strict, the
   * end of the input; with {@code name}, longer than {@link #MAX_NAME}).
   */
  private static int string(byte[] b, int p, int end, boolean name) {
    int limit = name ? Math.min(end, p + MAX_NAME + 1) : end;
    while (p < limit) {
      if (p + 8 <= limit) { // eight bytes at a time, each of which the steps below pass with p++
        long special = Utf8.specials(b, p);
        if (special == 0) {
          p += 8;
          continue;
        }
        p += Long.numberOfTrailingZeros(special) >>> 3; // to the first byte that is not plain
      }
      int c = b[p];
      if (c == '"') {
        return p;
      }
      if (c == '\\') {
        if (p + 1 >= limit) {
          return -1;
        }
        int e = b[p + 1];
        if (e == 'u') {
          if (p + 6 > limit) {
            return -1;
          }
          for (int i = p + 2; i < p + 6; i++) {
            if (Character.digit(b[i], 16) < 0) {
              return -1;
            }
          }
          p += 6;
        } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r'
            || e == 't') {
          p += 2;
        } else {
          return -1;
        }
      } else if (c >= 0x20) {
        p++;
      } else if (c >= 0) {
        return -1; // a control character
      } else {
        int n = utf8(b, p, limit);
        if (n < 0) {
          return -1;
        }
        p = n;
      }
    }
    return -1;
  }

  /** After the strict UTF-8 sequence at {@code p} (lead byte >= 0x80), or -1. */
  private static int utf8(byte[] b, int p, int end) {
    int c = b[p] & 0xFF;
    if (c < 0xC2 || c > 0xF4) {
      return -1;
    }
    int n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (p + n > end) {
      return -1;
    }
    for (int i = p + 1; i < p + n; i++) {
      if ((b[i] & 0xC0) != 0x80) {
        return -1;
      }
    }
    int c1 = b[p + 1] & 0xFF;
    if ((c == 0xE0 && c1 < 0xA0)
        || (c == 0xED && c1 >= 0xA0)
        || (c == 0xF0 && c1 < 0x90)
        || (c == 0xF4 && c1 >= 0x90)) {
      return -1; // overlong, a surrogate, above U+10FFFF
    }
    return p + n;
  }

  private static boolean escaped(byte[] b, int from, int to) {
    for (int i = from; i < to; i++) {
      if (b[i] == '\\') {
        return true;
      }
    }
    return false;
  }

  /** After the number at {@code p} (JSON's grammar), or -1. */
  private static int number(byte[] b, int p, int end) {
    if (b[p] == '-') {
      p++;
    }
    if (p >= end) {
      return -1;
    }
    if (b[p] == '0') {
      p++;
      if (p < end && isDigit(b[p])) {
        return -1; // a leading zero
      }
    } else if (isDigit(b[p])) {
      p = digits(b, p, end);
    } else {
      return -1;
    }
    if (p < end && b[p] == '.') {
      int q = digits(b, p + 1, end);
      if (q == p + 1) {
        return -1;
      }
      p = q;
    }
    if (p < end && (b[p] == 'e' || b[p] == 'E')) {
      p++;
      if (p < end && (b[p] == '+' || b[p] == '-')) {
        p++;
      }
      int q = digits(b, p, end);
      if (q == p) {
        return -1;
      }
      p = q;
    }
    return p;
  }

  private static int digits(byte[] b, int p, int end) {
    while (p < end && isDigit(b[p])) {
      p++;
    }
    return p;
  }

  private static boolean isDigit(byte c) {
    return c >= '0' && c <= '9';
  }

  /**
   * A token count as the parser reads the number in {@code [from, to)}: a negative integer 0, a
   * plain integer its value; {@link #UNSURE} for a fraction, an exponent or more than 18 digits.
   */
  private static long count(byte[] b, int from, int to) {
    boolean negative = b[from] == '-';
    int p = negative ? from + 1 : from;
    if (to - p > MAX_COUNT_DIGITS) {
      return UNSURE;
    }
    long v = 0;
    for (int i = p; i < to; i++) {
      if (!isDigit(b[i])) {
        return UNSURE; // a fraction or an exponent
      }
      v = v * 10 + (b[i] - '0');
    }
    return negative ? 0 : v;
  }

  /** After {@code true}, {@code false} or {@code null} at {@code p}, or -1. */
  private static int literal(byte[] b, int p, int end) {
    byte c = b[p];
    String word = c == 't' ? "true" : c == 'f' ? "false" : c == 'n' ? "null" : null;
    if (word == null || p + word.length() > end) {
      return -1;
    }
    for (int i = 1; i < word.length(); i++) {
      if (b[p + i] != word.charAt(i)) {
        return -1;
      }
    }
    return p + word.length();
  }

  private static int field(byte[] b, int from, int to) {
    for (int i = 0; i < FIELDS.length; i++) {
      if (equals(b, from, to, FIELDS[i])) {
        return i; // the order of UsageFields' indices
      }
    }
    return -1;
  }

  private static boolean equals(byte[] b, int from, int to, byte[] name) {
    return to - from == name.length && java.util.Arrays.equals(b, from, to, name, 0, name.length);
  }
}
