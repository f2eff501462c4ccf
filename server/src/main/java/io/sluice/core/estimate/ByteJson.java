package io.sluice.core.estimate;

import com.fasterxml.jackson.core.StreamReadConstraints;

/**
 * A cursor over the bytes of one JSON document that accepts only plain, strict JSON: RFC 8259's
 * grammar, strict UTF-8 ({@link Utf8#isValid}'s rules) inside strings, nothing but ASCII outside
 * them, no byte order mark, no {@code NaN} or {@code Infinity}, no leading zeros, member names
 * without escapes, nesting up to {@code maxDepth} (the root at 1, as Jackson counts), numbers and
 * names far below Jackson's limits. Whatever it does not accept it refuses with {@link #BAIL}, and
 * the caller reads the body the usual way ({@link RequestBodyReader}); so a body it reads to the
 * end is valid UTF-8 and one Jackson's parser (the estimator's factory) reads the same. One per
 * request; not thread-safe.
 */
final class ByteJson {
  /** Not read here: read the body with Jackson. Preallocated and stackless, as ReadFailure. */
  @SuppressWarnings("StaticAssignmentOfThrowable")
  static final Bail BAIL = new Bail();

  /** See {@link #BAIL}. */
  static final class Bail extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private Bail() {
      super("bail", null, false, false);
    }
  }

  // far below Jackson's limits on a name and a number (50,000 and 1,000 by default)
  private static final int MAX_NAME = 256;
  private static final int MAX_NUMBER = 64;

  final byte[] b;
  private final int end;
  private final int maxDepth;

  /** The position of the next byte to read. */
  int pos;

  /** The string read last: its content's first byte, its closing quote. */
  int from;

  int to;

  /** The string read last: whether it has an escape; its UTF-8 length and UTF-16 characters. */
  boolean escaped;

  long bytes;
  long chars;

  ByteJson(byte[] b, int offset, int length, int maxDepth) {
    this.b = b;
    this.pos = offset;
    this.end = offset + length;
    this.maxDepth = maxDepth;
  }

  /** Whether a body of {@code length} bytes is within what the parser's limits can never refuse. */
  static boolean withinLimits(StreamReadConstraints c, int length) {
    return length <= c.getMaxStringLength()
        && (c.getMaxDocumentLength() <= 0 || length <= c.getMaxDocumentLength())
        && c.getMaxTokenCount() <= 0
        && c.getMaxNameLength() >= MAX_NAME
        && c.getMaxNumberLength() >= MAX_NUMBER;
  }

  /** Skips whitespace; returns the next byte (not consumed), or bails at the end. */
  int peek() {
    int i = pos;
    if (i < end && b[i] > ' ') { // no whitespace before it: the common case of a compact body
      return b[i];
    }
    while (i < end) {
      int c = b[i];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
        pos = i;
        return c;
      }
      i++;
    }
    throw BAIL;
  }

  /** Whether only whitespace is left. */
  boolean atEnd() {
    for (int i = pos; i < end; i++) {
      int c = b[i];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
        return false;
      }
    }
    return true;
  }

  /** Consumes {@code c} after whitespace, or bails. */
  void expect(char c) {
    if (peek() != c) {
      throw BAIL;
    }
    pos++;
  }

  /**
   * After a member's value or an element: true when another follows (its comma consumed), false at
   * {@code close} (consumed).
   */
  boolean more(char close) {
    int c = peek();
    pos++;
    if (c == ',') {
      return true;
    }
    if (c != close) {
      throw BAIL;
    }
    return false;
  }

  /** Opens a container at depth {@code depth} (the root is 1): bails deeper than allowed. */
  void open(int depth) {
    if (depth > maxDepth) {
      throw BAIL;
    }
    pos++;
  }

  /**
   * The first member's name of an object just opened, or false when it is empty (its close
   * consumed). The name is {@link #from}..{@link #to}; the colon after it is consumed.
   */
  boolean firstName() {
    if (peek() == '}') {
      pos++;
      return false;
    }
    name();
    return true;
  }

  /** A member name (after a comma), and its colon. */
  void name() {
    if (peek() != '"') {
      throw BAIL;
    }
    string();
    if (escaped || to - from > MAX_NAME) {
      throw BAIL;
    }
    expect(':');
  }

  /** Whether the name or string read last is exactly {@code word} (ASCII, without escapes). */
  boolean is(String word) {
    int n = to - from;
    if (n != word.length() || escaped) {
      return false;
    }
    for (int k = 0; k < n; k++) {
      if (b[from + k] != word.charAt(k)) {
        return false;
      }
    }
    return true;
  }

  /**
   * The string at {@link #pos} (its opening quote): sets {@link #from}, {@link #to}, {@link
   * #escaped} and its lengths as {@link Utf8#jsonString} counts them; bails on anything a strict
   * parser refuses (a control character, an escape JSON does not have, invalid UTF-8, no closing
   * quote).
   */
  void string() {
    int i = pos + 1;
    from = i;
    // the lengths less the bytes read: plain bytes count one byte and one character each, so only
    // escapes and characters outside ASCII add their difference
    long dn = 0;
    long dc = 0;
    boolean esc = false;
    while (true) {
      i = Utf8.plainRun(b, i, end); // the first byte that is not plain content
      if (i >= end) {
        throw BAIL;
      }
      int c = b[i];
      if (c == '"') {
        break;
      }
      if (c == '\\') {
        esc = true;
        int next = escape(i);
        dn += escBytes - (next - i);
        dc += escChars - (next - i);
        i = next;
      } else if (c >= 0x20) {
        i++; // plain, within the last seven bytes
      } else if (c >= 0) {
        throw BAIL; // a control character
      } else {
        int k = Utf8.sequence(b, i, end, false);
        if (k < 0) {
          throw BAIL;
        }
        dc += (k == 4 ? 2 : 1) - k;
        i += k;
      }
    }
    to = i;
    pos = i + 1;
    escaped = esc;
    bytes = i - from + dn;
    chars = i - from + dc;
  }

  // the lengths of the escape read last (escape())
  private int escBytes;
  private int escChars;

  /** The escape at {@code b[i]} (a backslash): its lengths, as Utf8#jsonString counts them. */
  private int escape(int i) {
    if (i + 1 >= end) {
      throw BAIL;
    }
    int e = b[i + 1];
    if (e != 'u') {
      if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r'
          && e != 't') {
        throw BAIL;
      }
      escBytes = 1;
      escChars = 1;
      return i + 2;
    }
    int u = hex4(i + 2);
    i += 6;
    if (Character.isHighSurrogate((char) u) && i + 1 < end && b[i] == '\\' && b[i + 1] == 'u') {
      int low = hex4(i + 2);
      if (Character.isLowSurrogate((char) low)) {
        escBytes = 4; // a pair: one code point
        escChars = 2;
        return i + 6;
      }
    }
    escBytes = u < 0x80 ? 1 : u < 0x800 ? 2 : 3; // an unpaired surrogate: 3, as length() counts
    escChars = 1;
    return i;
  }

  private int hex4(int i) {
    if (i + 4 > end) {
      throw BAIL;
    }
    int v = 0;
    for (int k = i; k < i + 4; k++) {
      int c = b[k];
      int d =
          c >= '0' && c <= '9'
              ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) {
        throw BAIL;
      }
      v = (v << 4) | d;
    }
    return v;
  }

  /**
   * A plain integer at {@link #pos} ({@code -?(0|[1-9][0-9]*)}, at most 18 digits), consumed; bails
   * when the value there is anything else.
   */
  long integer() {
    int i = pos;
    boolean negative = i < end && b[i] == '-';
    if (negative) {
      i++;
    }
    int start = i;
    long v = 0;
    while (i < end && b[i] >= '0' && b[i] <= '9') {
      v = v * 10 + (b[i] - '0');
      i++;
    }
    int digits = i - start;
    if (digits == 0 || digits > 18 || (digits > 1 && b[start] == '0')) {
      throw BAIL;
    }
    if (i < end && (b[i] == '.' || b[i] == 'e' || b[i] == 'E')) {
      throw BAIL; // a float: read by Jackson
    }
    pos = i;
    return negative ? -v : v;
  }

  /** Reads {@code word} ({@code true}, {@code false}, {@code null}) at {@link #pos}, or bails. */
  void literal(String word) {
    int n = word.length();
    if (pos + n > end) {
      throw BAIL;
    }
    for (int k = 0; k < n; k++) {
      if (b[pos + k] != word.charAt(k)) {
        throw BAIL;
      }
    }
    pos += n;
    // a letter or digit right after it makes another token: Jackson refuses it, and so does the
    // grammar (the next byte must be whitespace, a comma or a close), checked by the caller
  }

  /** Skips the value at {@link #pos} (after whitespace), checking it, at {@code depth}. */
  void skip(int depth) {
    int c = peek();
    switch (c) {
      case '"' -> string();
      case '{' -> {
        open(depth);
        if (firstName()) {
          do {
            skip(depth + 1);
          } while (more('}') && nextName());
        }
      }
      case '[' -> {
        open(depth);
        if (peek() == ']') {
          pos++;
        } else {
          do {
            skip(depth + 1);
          } while (more(']'));
        }
      }
      case 't' -> literal("true");
      case 'f' -> literal("false");
      case 'n' -> literal("null");
      default -> number();
    }
  }

  private boolean nextName() {
    name();
    return true;
  }

  /** A number as RFC 8259 writes it, consumed. */
  private void number() {
    int i = pos;
    if (i < end && b[i] == '-') {
      i++;
    }
    int start = i;
    i = digits(i);
    if (i == start || (i - start > 1 && b[start] == '0')) {
      throw BAIL;
    }
    if (i < end && b[i] == '.') {
      int f = i + 1;
      i = digits(f);
      if (i == f) {
        throw BAIL;
      }
    }
    if (i < end && (b[i] == 'e' || b[i] == 'E')) {
      i++;
      if (i < end && (b[i] == '+' || b[i] == '-')) {
        i++;
      }
      int e = i;
      i = digits(e);
      if (i == e) {
        throw BAIL;
      }
    }
    if (i - pos > MAX_NUMBER) {
      throw BAIL;
    }
    pos = i;
  }

  private int digits(int i) {
    while (i < end && b[i] >= '0' && b[i] <= '9') {
      i++;
    }
    return i;
  }
}
