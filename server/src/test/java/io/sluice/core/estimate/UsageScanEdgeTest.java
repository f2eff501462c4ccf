package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The edges of {@link UsageScan}'s word steps and of its reads in place: escapes and multi-byte
 * characters at every position around a word's edge, broken UTF-8 and control characters after a
 * run of characters outside ASCII, empty containers where nothing is interpreted, and an answer the
 * scan gives up on after it wrote a usage object in place (the fields are left blank).
 */
class UsageScanEdgeTest {
  /** The parser's reading: the non-blocking parser, fed the answer as one chunk (no scan). */
  private static Usage parsed(byte[] b) {
    UsageExtractor x = UsageExtractor.forResponse("application/json");
    x.onChunk(b, 0, b.length);
    x.onEnd();
    return x.usage();
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.write(p, 0, p.length);
    }
    return out.toByteArray();
  }

  /** An answer whose string (a value, or a member name of the root) holds {@code inner}. */
  private static byte[] answer(byte[] inner, boolean name) {
    return name
        ? concat(bytes("{\""), inner, bytes("\":1,\"usage\":{\"prompt_tokens\":7}}"))
        : concat(bytes("{\"id\":\""), inner, bytes("\",\"usage\":{\"prompt_tokens\":7}}"));
  }

  @Test
  void escapesAndMultibyteCharactersAtEveryPositionAroundAWordEdgeReadAsTheParserReads() {
    String[] pieces = {"\\n", "\\\"", "\\\\", "\\u00e9", "\\uD83D\\uDE00", "é", "日", "😀", "日本語"};
    for (String piece : pieces) {
      for (int at = 0; at <= 17; at++) {
        byte[] inner = bytes("x".repeat(at) + piece + "y".repeat(17 - at));
        for (boolean name : new boolean[] {false, true}) {
          byte[] b = answer(inner, name);
          UsageFields f = new UsageFields();
          boolean sure = UsageScan.read(b, 0, b.length, f);
          String shown = new String(b, StandardCharsets.UTF_8);
          // the root's names matter: an escape there is left to the parser
          assertThat(sure).as(shown).isEqualTo(!(name && piece.startsWith("\\")));
          if (sure) {
            assertThat(f.usage())
                .as(shown)
                .isEqualTo(parsed(b))
                .isEqualTo(new Usage(7, 0, 0, true));
          }
        }
      }
    }
  }

  @Test
  void brokenUtf8OrAControlCharacterAfterARunOutsideAsciiIsUnsure() {
    byte[][] bad = {
      {(byte) 0xE6, (byte) 0x97}, // a cut sequence
      {(byte) 0x80}, // a stray continuation byte
      {(byte) 0xC0, (byte) 0x80}, // an overlong
      {(byte) 0xED, (byte) 0xA0, (byte) 0x80}, // a surrogate
      {(byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80}, // above U+10FFFF
      {0x01}, // a control character
      {0x1f}
    };
    for (byte[] x : bad) {
      for (int run = 1; run <= 4; run++) {
        for (int pad = 0; pad < 8; pad++) {
          byte[] inner = concat(bytes("a".repeat(pad) + "日".repeat(run)), x, bytes("日b"));
          for (boolean name : new boolean[] {false, true}) {
            byte[] b = answer(inner, name);
            UsageFields f = new UsageFields();
            assertThat(UsageScan.read(b, 0, b.length, f))
                .as("%s", new String(b, StandardCharsets.ISO_8859_1))
                .isFalse();
            assertThat(f.usage()).isEqualTo(Usage.NONE);
          }
        }
      }
    }
  }

  @Test
  void emptyContainersWhereNothingIsInterpretedAreSteppedOver() {
    String[] bodies = {
      "{\"a\":[],\"usage\":{\"prompt_tokens\":3}}",
      "{\"a\":{},\"usage\":{\"prompt_tokens\":3}}",
      "{\"a\":[[],{},[[]],{\"b\":{}}],\"usage\":{\"prompt_tokens\":3}}",
      "{\"a\":[{\"b\":[]},[{}]],\"usage\":{\"prompt_tokens\":3,\"x\":[[],{}]}}",
      "{\"usage\":{\"prompt_tokens\":3,\"prompt_tokens_details\":{\"x\":{},\"cached_tokens\":1}}}"
    };
    for (String body : bodies) {
      byte[] b = bytes(body);
      UsageFields f = new UsageFields();
      assertThat(UsageScan.read(b, 0, b.length, f)).as(body).isTrue();
      assertThat(f.usage()).as(body).isEqualTo(parsed(b));
      assertThat(f.usage().inputTokens()).isEqualTo(3);
    }
  }

  @Test
  void anAnswerGivenUpOnAfterItsUsageWasReadInPlaceLeavesTheFieldsBlank() {
    String[] bodies = {
      "{\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6},\"x\":tru}",
      "{\"usage\":{\"prompt_tokens\":5},\"usage\":{\"completion_tokens\":1.5}}",
      "{\"usage\":{\"prompt_tokens\":5,\"prompt_tokens_details\":{\"cached_tokens\":2}},\"a\":[1,]}",
      "{\"usage\":{\"prompt_tokens\":5}",
    };
    for (String body : bodies) {
      byte[] b = bytes(body);
      UsageFields f = new UsageFields();
      assertThat(UsageScan.read(b, 0, b.length, f)).as(body).isFalse();
      assertThat(f.usage()).as(body).isEqualTo(Usage.NONE);
      f.merge(new long[] {-1, 9, -1, -1, -1, -1, -1}); // what a parser would merge next
      assertThat(f.usage()).as(body).isEqualTo(new Usage(0, 9, 0, true));
    }
  }
}
