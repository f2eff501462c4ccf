package io.sluice.core.estimate;

import org.jspecify.annotations.Nullable;

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
 * accept. Nothing outside the root's {@code usage} objects is interpreted: the rest is stepped over
 * by {@link JsonSubset}, and nothing is allocated when {@code into} is blank.
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

  private static final int MAX_COUNT_DIGITS = 18; // a long, surely

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
    long[] blank = into.blankFields();
    if (scan(b, offset, offset + length, into, blank)) {
      return true;
    }
    if (blank != null) {
      java.util.Arrays.fill(blank, -1); // blank again: untouched
    }
    return false;
  }

  /**
   * {@link #read}, the first usage object read in place into {@code blank} ({@code into}'s fields
   * when nothing was merged into them yet, else null), later ones merged into it: no array per
   * answer.
   */
  private static boolean scan(
      byte[] b, int offset, int end, UsageFields into, long @Nullable [] blank) {
    int p = JsonSubset.ws(b, offset, end);
    if (p >= end || b[p] != '{') {
      return false;
    }
    p = JsonSubset.ws(b, p + 1, end);
    if (p < end && b[p] == '}') {
      return true; // an empty root
    }
    long[] read = null; // the usage objects read, merged (blank itself when given)
    long[] current = null; // a usage object read apart, to merge into read
    while (p < end) {
      int nameEnd = JsonSubset.name(b, p, end, false); // a name of the root: it matters
      if (nameEnd < 0) {
        return false;
      }
      boolean usage =
          nameEnd - p == 6
              && b[p + 1] == 'u'
              && b[p + 2] == 's'
              && b[p + 3] == 'a'
              && b[p + 4] == 'g'
              && b[p + 5] == 'e';
      p = JsonSubset.colon(b, nameEnd + 1, end);
      if (p < 0) {
        return false;
      }
      if (!usage || b[p] != '{') {
        p = JsonSubset.value(b, p, end, 1);
      } else if (read == null && blank != null) {
        p = usage(b, p, end, blank);
        read = blank;
      } else {
        if (current == null) {
          current = UsageFields.newFields();
        } else {
          java.util.Arrays.fill(current, -1);
        }
        p = usage(b, p, end, current);
        if (read == null) {
          read = current;
          current = null;
        } else {
          merge(read, current);
        }
      }
      p = p < 0 ? -1 : JsonSubset.next(b, p, end);
      if (p < -1) { // the root closed: nothing after it is read
        if (read != null && read != blank) {
          into.merge(read);
        }
        return true;
      }
      if (p < 0) {
        return false;
      }
    }
    return false; // truncated
  }

  /** After the usage object at {@code b[p]} (its opening brace, depth 2), read into {@code f}. */
  private static int usage(byte[] b, int p, int end, long[] f) {
    p = JsonSubset.ws(b, p + 1, end);
    if (p < end && b[p] == '}') {
      return p + 1;
    }
    while (p >= 0 && p < end) {
      int nameStart = p + 1;
      int nameEnd = JsonSubset.name(b, p, end, false);
      if (nameEnd < 0) {
        return -1;
      }
      int field = field(b, nameStart, nameEnd);
      boolean details =
          field < 0
              && (equals(b, nameStart, nameEnd, PROMPT_DETAILS)
                  || equals(b, nameStart, nameEnd, INPUT_DETAILS));
      p = JsonSubset.colon(b, nameEnd + 1, end);
      if (p < 0) {
        return -1;
      }
      if (details && b[p] == '{') {
        p = details(b, p, end, f);
      } else if (field >= 0) {
        p = count(b, p, end, f, field, 2);
      } else {
        p = JsonSubset.value(b, p, end, 2);
      }
      p = p < 0 ? -1 : JsonSubset.next(b, p, end);
      if (p < -1) {
        return ~p;
      }
    }
    return -1;
  }

  /** After the details object at {@code b[p]} (depth 3), its {@code cached_tokens} read. */
  private static int details(byte[] b, int p, int end, long[] f) {
    p = JsonSubset.ws(b, p + 1, end);
    if (p < end && b[p] == '}') {
      return p + 1;
    }
    while (p >= 0 && p < end) {
      int nameEnd = JsonSubset.name(b, p, end, false);
      if (nameEnd < 0) {
        return -1;
      }
      boolean cached = equals(b, p + 1, nameEnd, CACHED);
      p = JsonSubset.colon(b, nameEnd + 1, end);
      if (p < 0) {
        return -1;
      }
      p = cached ? count(b, p, end, f, UsageFields.CACHED, 3) : JsonSubset.value(b, p, end, 3);
      p = p < 0 ? -1 : JsonSubset.next(b, p, end);
      if (p < -1) {
        return ~p;
      }
    }
    return -1;
  }

  /**
   * After the value at {@code b[p]} of a token count member (inside {@code depth} containers), read
   * into {@code f[field]}: a number its count, a string, boolean or null not seen, an object or
   * array ignored; -1 when not in the subset or the count is unsure.
   */
  private static int count(byte[] b, int p, int end, long[] f, int field, int depth) {
    int c = b[p];
    if (c == '-' || (c >= '0' && c <= '9')) {
      int q = JsonSubset.number(b, p, end);
      long count = q < 0 ? UNSURE : count(b, p, q);
      if (count == UNSURE) {
        return -1;
      }
      f[field] = count;
      return q;
    }
    if (c != '{' && c != '[') {
      f[field] = NOT_A_COUNT; // the parser's -1
    }
    return JsonSubset.value(b, p, end, depth);
  }

  private static void merge(long[] into, long[] fields) {
    for (int i = 0; i < fields.length; i++) {
      if (fields[i] >= 0) {
        into[i] = fields[i];
      }
    }
  }

  private static long count(byte[] b, int from, int to) {
    boolean negative = b[from] == '-';
    int p = negative ? from + 1 : from;
    if (to - p > MAX_COUNT_DIGITS) {
      return UNSURE;
    }
    long v = 0;
    for (int i = p; i < to; i++) {
      if (!JsonSubset.isDigit(b[i])) {
        return UNSURE; // a fraction or an exponent
      }
      v = v * 10 + (b[i] - '0');
    }
    return negative ? 0 : v;
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
