package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.stream.LongStream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link Utf8#jsonString}, a string value's lengths read from its bytes, against the request
 * parser's decoding of the same bytes (its characters, and their UTF-8 length as the byte heuristic
 * counts it, {@link Utf8#length(char[], int, int)}): on seeded random string literals of ASCII,
 * two- to four-byte characters, every escape (surrogate pairs, unpaired surrogates, bad ones),
 * control characters and a missing closing quote, the lengths are equal, and -1 only where the
 * parser refuses the string or it is longer than the limit.
 */
class Utf8JsonStringTest {
  private static final JsonFactory FACTORY = TokenEstimator.newJsonFactory(64);

  private static final String[] PIECES = {
    "a",
    "hello world ",
    "0123456789abcdef",
    "\u00e9",
    "\u20ac",
    "\u65e5\u672c\u8a9e",
    "\ud83d\ude00",
    "\\n",
    "\\\"",
    "\\\\",
    "\\/",
    "\\b\\f\\r\\t",
    "\\u0041",
    "\\u00e9",
    "\\u20AC",
    "\\ud83d\\ude00",
    "\\ud83d",
    "\\ude00",
    "\\ud83dx",
    "\\ud83d\\u0041",
    "\\ud800\\ud800\\udc00",
    "\u007f",
    "'",
  };

  private static final String[] BAD = {"\\x", "\\u12", "\\u12g4", "\u0001", "\t", "\n", "\\"};

  static LongStream seeds() {
    return LongStream.range(0, 30);
  }

  @ParameterizedTest
  @MethodSource("seeds")
  void lengthsAreTheParsersDecoding(long seed) throws IOException {
    Random r = new Random(seed);
    int read = 0;
    for (int i = 0; i < 400; i++) {
      StringBuilder s = new StringBuilder();
      for (int n = r.nextInt(12); n >= 0; n--) {
        s.append(
            r.nextInt(25) == 0 ? BAD[r.nextInt(BAD.length)] : PIECES[r.nextInt(PIECES.length)]);
      }
      boolean closed = r.nextInt(20) > 0;
      byte[] body = ("[\"" + s + (closed ? "\"]" : "")).getBytes(StandardCharsets.UTF_8);
      int max = r.nextInt(4) == 0 ? r.nextInt(40) : Integer.MAX_VALUE - 8;
      long lengths = Utf8.jsonString(body, 2, body.length, max);
      String text = new String(body, StandardCharsets.UTF_8);
      if (lengths >= 0) {
        read++;
        char[] chars = decoded(body);
        assertThat(lengths & 0xFFFF_FFFFL)
            .as("bytes of %s", text)
            .isEqualTo(Utf8.length(chars, 0, chars.length));
        assertThat(lengths >>> 32).as("chars of %s", text).isEqualTo(chars.length);
      } else if (contentBytes(body) <= max) {
        assertThatThrownBy(() -> decoded(body))
            .as("refused: %s", text)
            .isInstanceOf(IOException.class);
      }
    }
    assertThat(read).isGreaterThan(100);
  }

  private static long contentBytes(byte[] body) {
    return body.length - 2 - (body[body.length - 1] == ']' ? 2 : 0);
  }

  /** The string's characters as the request parser decodes them. */
  private static char[] decoded(byte[] body) throws IOException {
    try (JsonParser p = FACTORY.createParser(body)) {
      assertThat(p.nextToken()).isEqualTo(JsonToken.START_ARRAY);
      assertThat(p.nextToken()).isEqualTo(JsonToken.VALUE_STRING);
      return java.util.Arrays.copyOfRange(
          p.getTextCharacters(), p.getTextOffset(), p.getTextOffset() + p.getTextLength());
    }
  }
}
