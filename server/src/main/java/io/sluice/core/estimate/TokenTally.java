package io.sluice.core.estimate;

import com.knuddels.jtokkit.api.Encoding;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * Accumulates the prompt of one request: text pieces (tokenized with BPE when an encoding is known,
 * up to a character budget) and fixed costs. One instance per request; not thread-safe.
 */
final class TokenTally {
  private final @Nullable Encoding encoding;
  private final TokenCountCache counts;
  private final double bytesPerToken;
  private final long maxTokenizeChars;

  private long fixedTokens;
  private long textBytes;
  private long textChars;
  private long bpeTokens;
  private long tokenizedChars;
  private long untokenizedChars;
  private long untokenizedBytes;

  TokenTally(
      @Nullable Encoding encoding,
      TokenCountCache counts,
      double bytesPerToken,
      long maxTokenizeChars) {
    this.encoding = encoding;
    this.counts = counts;
    this.bytesPerToken = bytesPerToken;
    this.maxTokenizeChars = maxTokenizeChars;
  }

  void fixed(long tokens) {
    fixedTokens = saturatedAdd(fixedTokens, tokens);
  }

  void text(String s) {
    int n = s.length();
    if (n == 0) {
      return;
    }
    long bytes = Utf8.length(s);
    textBytes += bytes;
    textChars += n;
    if (encoding == null) {
      return;
    }
    long budget = maxTokenizeChars - tokenizedChars;
    if (budget >= n) {
      bpeTokens += counts.count(encoding, s);
      tokenizedChars += n;
      return;
    }
    int cut = (int) Math.max(0, budget);
    if (cut > 0 && Character.isHighSurrogate(s.charAt(cut - 1))) {
      cut--;
    }
    if (cut > 0) {
      bpeTokens += counts.count(encoding, s.substring(0, cut));
      tokenizedChars += cut;
    }
    untokenizedChars += n - cut;
    untokenizedBytes += Math.round(bytes * ((double) (n - cut) / n));
  }

  /** Whether text is tokenized (an encoding is known): {@link #text} then needs the String. */
  boolean tokenizes() {
    return encoding != null;
  }

  /**
   * A text piece as characters, for a tally that does not tokenize ({@link #tokenizes()} false):
   * counted as {@link #text} counts it, without a String.
   */
  void chars(char[] buf, int offset, int length) {
    if (encoding != null) {
      text(new String(buf, offset, length));
      return;
    }
    if (length == 0) {
      return;
    }
    textBytes += Utf8.length(buf, offset, length);
    textChars += length;
  }

  /**
   * A text piece by its lengths alone (UTF-8 bytes, UTF-16 characters), for a tally that does not
   * tokenize: counted as {@link #chars} counts the same piece.
   */
  void utf8(long bytes, long chars) {
    if (encoding != null) {
      throw new IllegalStateException("a tally that tokenizes needs the text");
    }
    textBytes += bytes;
    textChars += chars;
  }

  /** A raw JSON slice (e.g. a tool definition), counted as text. */
  void raw(byte[] body, int offset, int length) {
    if (length <= 0) {
      return;
    }
    if (encoding == null) {
      textBytes += length;
      textChars += length;
      return;
    }
    text(new String(body, offset, length, StandardCharsets.UTF_8));
  }

  /** Total input tokens: text tokens plus fixed costs. */
  long tokens() {
    return saturatedAdd(textTokens(), fixedTokens);
  }

  long textTokens() {
    if (encoding == null) {
      return ceil(textBytes / bytesPerToken);
    }
    long extra = 0;
    if (untokenizedChars > 0) {
      extra =
          tokenizedChars > 0
              ? ceil(untokenizedChars * ((double) bpeTokens / tokenizedChars))
              : ceil(untokenizedBytes / bytesPerToken);
    }
    return saturatedAdd(bpeTokens, extra);
  }

  long textBytes() {
    return textBytes;
  }

  long textChars() {
    return textChars;
  }

  long fixedTokens() {
    return fixedTokens;
  }

  @Nullable Encoding encoding() {
    return encoding;
  }

  static long ceil(double value) {
    if (!(value > 0)) {
      return 0;
    }
    return value >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) Math.ceil(value);
  }

  private static long saturatedAdd(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }
}
