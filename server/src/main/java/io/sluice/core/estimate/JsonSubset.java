package io.sluice.core.estimate;

/**
 * The strict subset of JSON {@link UsageScan} is sure of, read from bytes: JSON whitespace; strings
 * of strict UTF-8 without control characters and with only JSON's escapes (member names of at most
 * {@link #MAX_NAME} bytes); numbers of JSON's grammar of at most {@link #MAX_NUMBER} bytes; {@code
 * true}/{@code false}/{@code null}; containers at most {@link #MAX_DEPTH} deep, without a trailing
 * comma. Each method gives the index after what it read, or -1 when the bytes are not in the subset
 * (or end too soon). Values are stepped over without interpreting them: strings eight bytes at a
 * time ({@link Utf8#plainRun}), containers by one loop over a bit mask of their kinds.
 */
final class JsonSubset {
  private JsonSubset() {}

  static final int MAX_DEPTH = 64; // the bit mask of containers
  static final int MAX_NAME = 1000; // bytes of a member name the parser surely accepts
  static final int MAX_NUMBER = 100; // bytes of a number the parser surely accepts

  /**
   * The closing quote of the member name whose opening quote is at {@code b[p]} ({@code p < end}),
   * or -1: not a string of the subset, longer than {@link #MAX_NAME} bytes, or with an escape
   * unless {@code escapes}.
   */
  static int name(byte[] b, int p, int end, boolean escapes) {
    return b[p] == '"' ? string(b, p + 1, Math.min(end, p + 2 + MAX_NAME), escapes) : -1;
  }

  /** After the colon at or after {@code p} and the whitespace after it: at a value, or -1. */
  static int colon(byte[] b, int p, int end) {
    p = ws(b, p, end);
    if (p >= end || b[p] != ':') {
      return -1;
    }
    p = ws(b, p + 1, end);
    return p < end ? p : -1;
  }

  /**
   * What follows a member of an object whose members are read one by one: the first byte of the
   * next member's name after a comma (>= 0); the end of the object, as the bitwise complement of
   * the index after its closing brace (below -1); -1 for anything else.
   */
  static int next(byte[] b, int p, int end) {
    p = ws(b, p, end);
    if (p >= end) {
      return -1;
    }
    if (b[p] == ',') {
      p = ws(b, p + 1, end);
      return p < end ? p : -1; // a trailing comma: '}' is not a name
    }
    return b[p] == '}' ? ~(p + 1) : -1;
  }

  /**
   * After the value at {@code b[p]} ({@code p < end}, not whitespace) inside {@code depth}
   * containers, nothing in it interpreted; -1 when it is not in the subset.
   */
  static int value(byte[] b, int p, int end, int depth) {
    int c = b[p];
    return c == '{' || c == '[' ? container(b, p, end, depth) : scalar(b, p, end);
  }

  /** After the string, number or literal at {@code b[p]}, or -1. */
  private static int scalar(byte[] b, int p, int end) {
    int c = b[p];
    if (c == '"') {
      int q = string(b, p + 1, end, true);
      return q < 0 ? -1 : q + 1;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      return number(b, p, end);
    }
    return literal(b, p, end);
  }

  /**
   * After the container at {@code b[p]} inside {@code depth} containers, with all it holds; -1 when
   * it is not in the subset (nested deeper than {@link #MAX_DEPTH}, truncated, a trailing comma).
   */
  private static int container(byte[] b, int p, int end, int depth) {
    long objects = 0; // bit k set: the k-th container open here is an object
    int open = 0;
    while (true) {
      int c = b[p]; // a value
      if (c == '{' || c == '[') {
        if (depth + open == MAX_DEPTH) {
          return -1;
        }
        if (c == '{') {
          objects |= 1L << open;
        } else {
          objects &= ~(1L << open);
        }
        open++;
        p = ws(b, p + 1, end);
        if (p >= end) {
          return -1;
        }
        if (b[p] != c + 2) { // '{' + 2 is '}', '[' + 2 is ']'
          if (c == '{') {
            p = member(b, p, end);
            if (p < 0) {
              return -1;
            }
          }
          continue; // its first value
        }
        p++; // empty
        if (--open == 0) {
          return p;
        }
      } else {
        p = scalar(b, p, end);
        if (p < 0) {
          return -1;
        }
      }
      // after a value: a comma, or the end of one container or more
      while (true) {
        p = ws(b, p, end);
        if (p >= end) {
          return -1;
        }
        boolean object = (objects & (1L << (open - 1))) != 0;
        c = b[p];
        if (c == ',') {
          p = ws(b, p + 1, end);
          if (p >= end) {
            return -1;
          }
          if (object) {
            p = member(b, p, end); // a trailing comma: '}' is not a name
            if (p < 0) {
              return -1;
            }
          } else if (b[p] == ']') {
            return -1; // a trailing comma
          }
          break;
        }
        if (c != (object ? '}' : ']')) {
          return -1;
        }
        p++;
        if (--open == 0) {
          return p;
        }
      }
    }
  }

  /** At the value of the member whose name starts at {@code b[p]} (not interpreted), or -1. */
  private static int member(byte[] b, int p, int end) {
    int nameEnd = name(b, p, end, true);
    return nameEnd < 0 ? -1 : colon(b, nameEnd + 1, end);
  }

  /** The first index at or after {@code p} that is not JSON whitespace. */
  static int ws(byte[] b, int p, int end) {
    if (p < end && b[p] > ' ') {
      return p; // JSON whitespace is at most ' '
    }
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
   * The index of the closing quote of the string whose content starts at {@code p} and ends before
   * {@code limit}, or -1 (not in the subset: a control character, an escape JSON does not have,
   * UTF-8 that is not strict, no closing quote before the limit; any escape unless {@code
   * escapes}).
   */
  private static int string(byte[] b, int p, int limit, boolean escapes) {
    while (true) {
      p = Utf8.plainRun(b, p, limit); // eight bytes at a time, to the first that is not plain
      if (p >= limit) {
        return -1;
      }
      int c = b[p];
      if (c == '"') {
        return p;
      }
      if (c == '\\') {
        if (!escapes) {
          return -1;
        }
        p = escape(b, p, limit);
        if (p < 0) {
          return -1;
        }
      } else if (c >= 0x20) {
        p++; // one of the last seven bytes before the limit
      } else if (c >= 0) {
        return -1; // a control character
      } else {
        do { // a run of characters outside ASCII
          p = utf8(b, p, limit);
        } while (p > 0 && p < limit && b[p] < 0);
        if (p < 0) {
          return -1;
        }
      }
    }
  }

  /** After the escape at {@code b[p]} (a backslash), or -1. */
  private static int escape(byte[] b, int p, int limit) {
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
      return p + 6;
    }
    if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r'
        || e == 't') {
      return p + 2;
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

  /** After the number at {@code p} (JSON's grammar, at most {@link #MAX_NUMBER} bytes), or -1. */
  static int number(byte[] b, int p, int end) {
    int start = p;
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
    return p - start > MAX_NUMBER ? -1 : p;
  }

  private static int digits(byte[] b, int p, int end) {
    while (p < end && isDigit(b[p])) {
      p++;
    }
    return p;
  }

  static boolean isDigit(byte c) {
    return c >= '0' && c <= '9';
  }

  /** After {@code true}, {@code false} or {@code null} at {@code p}, or -1. */
  private static int literal(byte[] b, int p, int end) {
    byte c = b[p];
    if (c == 't' || c == 'n') {
      return p + 4 <= end
              && b[p + 1] == (c == 't' ? 'r' : 'u')
              && b[p + 2] == (c == 't' ? 'u' : 'l')
              && b[p + 3] == (c == 't' ? 'e' : 'l')
          ? p + 4
          : -1;
    }
    return c == 'f'
            && p + 5 <= end
            && b[p + 1] == 'a'
            && b[p + 2] == 'l'
            && b[p + 3] == 's'
            && b[p + 4] == 'e'
        ? p + 5
        : -1;
  }
}
