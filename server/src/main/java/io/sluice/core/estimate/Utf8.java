package io.sluice.core.estimate;

import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;

/**
 * Strict UTF-8 validation (no overlongs, no surrogates, nothing above U+10FFFF), and what Python's
 * {@code json} makes of a body that fails it.
 */
final class Utf8 {
  private Utf8() {}

  static boolean isValid(byte[] b, int offset, int length) {
    return isValid(b, offset, length, false);
  }

  /**
   * Whether Python's {@code json.loads} would read this body, which is not UTF-8, as a JSON object:
   * it picks UTF-32 or UTF-16 from a byte order mark or from zero bytes among the first four, and
   * decodes UTF-8 with {@code surrogatepass} (a UTF-16 surrogate in three bytes passes). True when
   * that decoding succeeds far enough to start with <code>{</code> after whitespace: an engine may
   * read the request, Sluice cannot.
   */
  static boolean pythonReadsAsJson(byte[] b, int offset, int length) {
    Charset wide = null;
    int skip = 0;
    int b0 = length > 0 ? b[offset] & 0xFF : -1;
    int b1 = length > 1 ? b[offset + 1] & 0xFF : -1;
    int b2 = length > 2 ? b[offset + 2] & 0xFF : -1;
    int b3 = length > 3 ? b[offset + 3] & 0xFF : -1;
    if (b0 == 0xFF && b1 == 0xFE && b2 == 0 && b3 == 0) {
      wide = Charset.forName("UTF-32LE");
      skip = 4;
    } else if (b0 == 0 && b1 == 0 && b2 == 0xFE && b3 == 0xFF) {
      wide = Charset.forName("UTF-32BE");
      skip = 4;
    } else if (b0 == 0xFE && b1 == 0xFF) {
      wide = StandardCharsets.UTF_16BE;
      skip = 2;
    } else if (b0 == 0xFF && b1 == 0xFE) {
      wide = StandardCharsets.UTF_16LE;
      skip = 2;
    } else if (b0 == 0xEF && b1 == 0xBB && b2 == 0xBF) {
      skip = 3; // utf-8-sig
    } else if (length >= 4 && b0 == 0) {
      wide = b1 != 0 ? StandardCharsets.UTF_16BE : Charset.forName("UTF-32BE");
    } else if (length >= 4 && b1 == 0) {
      wide = b2 != 0 || b3 != 0 ? StandardCharsets.UTF_16LE : Charset.forName("UTF-32LE");
    } else if (length == 2 && (b0 == 0 || b1 == 0)) {
      wide = b0 == 0 ? StandardCharsets.UTF_16BE : StandardCharsets.UTF_16LE;
    }
    if (wide == null) {
      if (!isValid(b, offset + skip, length - skip, true)) {
        return false;
      }
      for (int i = offset + skip; i < offset + length; i++) {
        if (!isJsonSpace(b[i])) {
          return b[i] == '{';
        }
      }
      return false;
    }
    String text = new String(b, offset + skip, length - skip, wide);
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (!isJsonSpace(c)) {
        return c == '{';
      }
    }
    return false;
  }

  private static boolean isJsonSpace(int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }

  // eight bytes at a time: a run of ASCII (no byte with its high bit set) needs no other check
  private static final java.lang.invoke.VarHandle LONGS =
      java.lang.invoke.MethodHandles.byteArrayViewVarHandle(
          long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);
  private static final long HIGH_BITS = 0x8080808080808080L;

  private static boolean isValid(byte[] b, int offset, int length, boolean surrogates) {
    int i = offset;
    int end = offset + length;
    while (i < end) {
      if (i + 8 <= end && ((long) LONGS.get(b, i) & HIGH_BITS) == 0) {
        i += 8;
        continue;
      }
      if (b[i] >= 0) {
        i++;
        continue;
      }
      int n = sequence(b, i, end, surrogates);
      if (n < 0) {
        return false;
      }
      i += n;
    }
    return true;
  }

  /**
   * The length of the strict UTF-8 sequence of a character outside ASCII that starts at {@code
   * b[i]} and ends before {@code end} (2 to 4), or -1 when it is not one: a stray continuation
   * byte, an overlong, a surrogate (unless {@code surrogates}, as Python decodes with its surrogate
   * pass handler), a code point above U+10FFFF, or a cut sequence.
   */
  static int sequence(byte[] b, int i, int end, boolean surrogates) {
    int c = b[i] & 0xFF;
    if (c < 0xC2) {
      return -1; // stray continuation byte or overlong 2-byte lead
    }
    if (c < 0xE0) {
      return i + 1 < end && isContinuation(b[i + 1]) ? 2 : -1;
    }
    if (c < 0xF0) {
      if (i + 2 >= end || !isContinuation(b[i + 1]) || !isContinuation(b[i + 2])) {
        return -1;
      }
      int c1 = b[i + 1] & 0xFF;
      if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0 && !surrogates)) {
        return -1; // overlong, or a UTF-16 surrogate
      }
      return 3;
    }
    if (c < 0xF5) {
      if (i + 3 >= end
          || !isContinuation(b[i + 1])
          || !isContinuation(b[i + 2])
          || !isContinuation(b[i + 3])) {
        return -1;
      }
      int c1 = b[i + 1] & 0xFF;
      if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90)) {
        return -1; // overlong, or above U+10FFFF
      }
      return 4;
    }
    return -1;
  }

  /** UTF-8 length of a Java string (unpaired surrogates count as 3 bytes, like '?'-free CESU). */
  static long length(CharSequence s) {
    long n = 0;
    int len = s.length();
    for (int i = 0; i < len; i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        n++;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c)
          && i + 1 < len
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        n += 4;
        i++;
      } else {
        n += 3;
      }
    }
    return n;
  }

  /**
   * UTF-8 length of {@code buf[offset, offset + length)}, counted as {@link #length(CharSequence)}.
   */
  static long length(char[] buf, int offset, int length) {
    int end = offset + length;
    int any = 0;
    for (int i = offset; i < end; i++) { // a plain reduction the JIT vectorizes
      any |= buf[i];
    }
    if (any < 0x80) {
      return length; // all ASCII: one byte each
    }
    long n = 0;
    for (int i = offset; i < end; i++) {
      char c = buf[i];
      if (c < 0x80) {
        n++;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c)
          && i + 1 < end
          && Character.isLowSurrogate(buf[i + 1])) {
        n += 4;
        i++;
      } else {
        n += 3;
      }
    }
    return n;
  }

  private static final long ONES = 0x0101010101010101L;

  /**
   * What {@link #length(char[], int, int)} and the count of UTF-16 characters make of the JSON
   * string value whose content starts at {@code b[from]} (after its opening quote), read from its
   * bytes without decoding it: its UTF-8 length in the low 32 bits, its characters in the high 32.
   * The bytes must be strict UTF-8 ({@link #isValid}). -1 when the string is not one a JSON parser
   * reads (a control character, an escape JSON does not have, no closing quote before {@code end})
   * or its content is longer than {@code max} bytes: then the parser must read it.
   */
  static long jsonString(byte[] b, int from, int end, int max) {
    int limit = (int) Math.min(end, (long) from + max + 1);
    long bytes = 0;
    long chars = 0;
    int i = from;
    while (i < limit) {
      if (i + 8 <= limit) { // eight plain ASCII bytes: no quote, backslash, control or high byte
        if (specials(b, i) == 0) {
          bytes += 8;
          chars += 8;
          i += 8;
          continue;
        }
      }
      int c = b[i];
      if (c == '"') {
        return (chars << 32) | bytes;
      }
      if (c == '\\') {
        if (i + 1 >= limit) {
          return -1;
        }
        int e = b[i + 1];
        if (e != 'u') {
          if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r'
              && e != 't') {
            return -1;
          }
          bytes++;
          chars++;
          i += 2;
          continue;
        }
        int u = hex4(b, i + 2, limit);
        if (u < 0) {
          return -1;
        }
        i += 6;
        chars++;
        if (Character.isHighSurrogate((char) u)
            && i + 1 < limit
            && b[i] == '\\'
            && b[i + 1] == 'u') {
          int low = hex4(b, i + 2, limit);
          if (low >= 0 && Character.isLowSurrogate((char) low)) {
            bytes += 4; // a pair: one code point
            chars++;
            i += 6;
            continue;
          }
        }
        bytes += u < 0x80 ? 1 : u < 0x800 ? 2 : 3; // an unpaired surrogate: 3, as length() counts
        continue;
      }
      if (c >= 0 && c < 0x20) {
        return -1; // a control character: the parser refuses it
      }
      bytes++;
      if ((c & 0xC0) != 0x80) { // not a continuation byte: a character starts
        chars += (c & 0xF8) == 0xF0 ? 2 : 1; // four bytes: a surrogate pair
      }
      i++;
    }
    return -1;
  }

  /**
   * The high bit of each of the eight bytes at {@code b[i]} that is not plain string content (a
   * quote, a backslash, a control character or a byte outside ASCII); 0 when all eight are. The
   * lowest bit set marks the first such byte (bits above it may be set by a borrow).
   */
  static long specials(byte[] b, int i) {
    long w = (long) LONGS.get(b, i);
    // a byte's high bit in (x - ONES) is set when x's byte is 0 (w's is a quote or a backslash) and
    // in (w - 0x20 each) when w's is below 0x20; where w's byte has its high bit set, one of the
    // two x's keeps it (both lose it only from 0x80 or 0x81: w 0xA2, 0xA3 and 0xDC, 0xDD). A borrow
    // sets bits only above a byte that is special.
    return (((w ^ (ONES * '"')) - ONES) | ((w ^ (ONES * '\\')) - ONES) | (w - ONES * 0x20))
        & HIGH_BITS;
  }

  /**
   * The index of the first byte at or after {@code i} that is not plain string content (as {@link
   * #specials} says), looking eight bytes at a time while eight are left before {@code end}: it
   * stops at {@code i} or later within the last seven bytes, where the caller reads byte by byte.
   */
  static int plainRun(byte[] b, int i, int end) {
    while (i + 16 <= end) {
      long s = specials(b, i);
      if (s != 0) {
        return i + (Long.numberOfTrailingZeros(s) >>> 3);
      }
      s = specials(b, i + 8);
      if (s != 0) {
        return i + 8 + (Long.numberOfTrailingZeros(s) >>> 3);
      }
      i += 16;
    }
    if (i + 8 <= end) {
      long s = specials(b, i);
      return s != 0 ? i + (Long.numberOfTrailingZeros(s) >>> 3) : i + 8;
    }
    return i;
  }

  /** The value of the four hex digits at {@code b[i]}, or -1. */
  private static int hex4(byte[] b, int i, int limit) {
    if (i + 4 > limit) {
      return -1;
    }
    int v = 0;
    for (int k = i; k < i + 4; k++) {
      int d = Character.digit(b[k], 16);
      if (d < 0) {
        return -1;
      }
      v = (v << 4) | d;
    }
    return v;
  }

  private static boolean isContinuation(byte b) {
    return (b & 0xC0) == 0x80;
  }
}
