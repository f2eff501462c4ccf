package io.sluice.core.estimate;

/** Strict UTF-8 validation (no overlongs, no surrogates, nothing above U+10FFFF). */
final class Utf8 {
  private Utf8() {}

  static boolean isValid(byte[] b, int offset, int length) {
    int i = offset;
    int end = offset + length;
    while (i < end) {
      int c = b[i];
      if (c >= 0) {
        i++;
        continue;
      }
      c &= 0xFF;
      if (c < 0xC2) {
        return false; // stray continuation byte or overlong 2-byte lead
      }
      if (c < 0xE0) {
        if (i + 1 >= end || !isContinuation(b[i + 1])) {
          return false;
        }
        i += 2;
      } else if (c < 0xF0) {
        if (i + 2 >= end) {
          return false;
        }
        int c1 = b[i + 1] & 0xFF;
        if (!isContinuation(b[i + 1]) || !isContinuation(b[i + 2])) {
          return false;
        }
        if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) {
          return false; // overlong, or a UTF-16 surrogate
        }
        i += 3;
      } else if (c < 0xF5) {
        if (i + 3 >= end) {
          return false;
        }
        int c1 = b[i + 1] & 0xFF;
        if (!isContinuation(b[i + 1]) || !isContinuation(b[i + 2]) || !isContinuation(b[i + 3])) {
          return false;
        }
        if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90)) {
          return false; // overlong, or above U+10FFFF
        }
        i += 4;
      } else {
        return false;
      }
    }
    return true;
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

  private static boolean isContinuation(byte b) {
    return (b & 0xC0) == 0x80;
  }
}
