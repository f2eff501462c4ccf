package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link Utf8#isValid} against the JDK's strict UTF-8 decoder, and {@link Utf8#length(char[], int,
 * int)} against {@link Utf8#length(CharSequence)}, over seeded bytes that mix ASCII runs (the
 * eight-byte fast path) with multi-byte, broken and surrogate sequences at every alignment; and
 * {@link Utf8#specials} and {@link Utf8#plainRun} against a byte-by-byte reading of string content.
 */
class Utf8Test {
  private static final byte[][] PIECES = {
    "a".getBytes(StandardCharsets.UTF_8),
    "plain ascii text".getBytes(StandardCharsets.UTF_8),
    "é".getBytes(StandardCharsets.UTF_8),
    "€".getBytes(StandardCharsets.UTF_8),
    "𝄞".getBytes(StandardCharsets.UTF_8),
    {(byte) 0x80},
    {(byte) 0xC0, (byte) 0xAF},
    {(byte) 0xE0, (byte) 0x80, (byte) 0xAF},
    {(byte) 0xED, (byte) 0xA0, (byte) 0x80},
    {(byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80},
    {(byte) 0xF5},
    {(byte) 0xE2, (byte) 0x82},
    {(byte) 0xFF},
  };

  @Test
  void isValid_agreesWithTheStrictDecoder_atEveryAlignment() {
    Random r = new Random(20261205L);
    int invalid = 0;
    for (int k = 0; k < 20_000; k++) {
      java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
      int parts = r.nextInt(12);
      for (int i = 0; i < parts; i++) {
        byte[] p = PIECES[r.nextInt(r.nextInt(4) == 0 ? PIECES.length : 5)];
        int times = 1 + r.nextInt(r.nextBoolean() ? 1 : 12);
        for (int t = 0; t < times; t++) {
          out.writeBytes(p);
        }
      }
      byte[] b = out.toByteArray();
      int off = b.length == 0 ? 0 : r.nextInt(b.length + 1);
      int len = r.nextInt(b.length - off + 1);
      boolean expected = strict(b, off, len);
      invalid += expected ? 0 : 1;
      assertThat(Utf8.isValid(b, off, len))
          .as("%s", java.util.HexFormat.of().formatHex(b))
          .isEqualTo(expected);
    }
    assertThat(invalid).isBetween(1_000, 19_000);
  }

  @Test
  void lengthOfChars_isTheStringsLength() {
    Random r = new Random(7L);
    String[] pieces = {"a", "ascii run ", "é", "€", "𝄞", "\\ud800", "\\udc00"};
    for (int k = 0; k < 5_000; k++) {
      StringBuilder s = new StringBuilder();
      int parts = r.nextInt(10);
      for (int i = 0; i < parts; i++) {
        String p = pieces[r.nextInt(r.nextInt(3) == 0 ? pieces.length : 2)];
        s.append(p.equals("\\ud800") ? "\ud800" : p.equals("\\udc00") ? "\udc00" : p);
      }
      char[] c = ("xy" + s + "z").toCharArray();
      assertThat(Utf8.length(c, 2, s.length())).isEqualTo(Utf8.length(s));
    }
  }

  @Test
  void specialsAndPlainRun_findTheFirstByteThatIsNotPlainContent() {
    Random r = new Random(20261206L);
    byte[] odd = {'"', '\\', 0, 0x1F, 0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, (byte) 0x80, (byte) 0xFF};
    for (int k = 0; k < 50_000 + 256 * 8; k++) {
      byte[] b = new byte[k < 256 * 8 ? 8 : r.nextInt(48)];
      for (int i = 0; i < b.length; i++) {
        b[i] = r.nextInt(6) == 0 ? odd[r.nextInt(odd.length)] : (byte) (0x20 + r.nextInt(0x60));
      }
      if (k < 256 * 8) { // each byte value at each place of a word of plain bytes
        java.util.Arrays.fill(b, (byte) 'a');
        b[k & 7] = (byte) (k >>> 3);
      }
      int from = b.length == 0 ? 0 : r.nextInt(b.length + 1);
      int first = from;
      while (first < b.length && plain(b[first])) {
        first++;
      }
      String hex = java.util.HexFormat.of().formatHex(b) + " from " + from;
      if (from + 8 <= b.length) {
        long s = Utf8.specials(b, from);
        assertThat(s == 0 ? 8 : Long.numberOfTrailingZeros(s) >>> 3)
            .as(hex)
            .isEqualTo(Math.min(8, first - from));
      }
      int run = Utf8.plainRun(b, from, b.length);
      // at the first special byte, or somewhere in the last seven bytes before it
      assertThat(run).as(hex).isBetween(Math.max(from, Math.min(first, b.length - 7)), first);
    }
  }

  private static boolean plain(byte c) {
    return c >= 0x20 && c != '"' && c != '\\';
  }

  private static boolean strict(byte[] b, int off, int len) {
    try {
      StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(b, off, len));
      return true;
    } catch (CharacterCodingException e) {
      return false;
    }
  }
}
