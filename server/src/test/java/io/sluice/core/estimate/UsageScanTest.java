package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link UsageScan}, the byte scan of a whole JSON answer, against Jackson's parser with {@link
 * UsageExtractor}'s token handling (the same answer fed as one chunk to the non-blocking parser):
 * on seeded random answers (usage objects with every field, details, duplicates, counts of every
 * JSON type, escaped and non-ASCII strings, nesting), well-formed and damaged, the scan is either
 * unsure or reads the usage the parser reads, and the answer complete; the extractor fed the answer
 * whole reads what the parser reads. The same answers streamed as server-sent events read the same
 * whole or in chunks (the scan is for whole JSON answers only).
 */
class UsageScanTest {
  static LongStream seeds() {
    return LongStream.range(0, 40);
  }

  @ParameterizedTest
  @MethodSource("seeds")
  void scanReadsWhatTheParserReads(long seed) {
    Random r = new Random(seed);
    int sure = 0;
    for (int i = 0; i < 250; i++) {
      byte[] body = RandomAnswers.damaged(r, RandomAnswers.answer(r));
      UsageExtractor parsed = UsageExtractor.forResponse("application/json");
      parsed.onChunk(body, 0, body.length); // the non-blocking parser: no scan
      parsed.onEnd();

      UsageFields fields = new UsageFields();
      if (UsageScan.read(body, 0, body.length, fields)) {
        sure++;
        String text = new String(body, StandardCharsets.UTF_8);
        assertThat(fields.usage()).as("seed %d: %s", seed, text).isEqualTo(parsed.usage());
        assertThat(parsed.complete()).as("complete: %s", text).isTrue();
      }
      UsageExtractor whole = UsageExtractor.forResponse("application/json");
      whole.onLastChunk(body, 0, body.length); // the scan when sure, else the blocking parser
      assertThat(whole.usage())
          .as("whole: %s", new String(body, StandardCharsets.UTF_8))
          .isEqualTo(parsed.usage());
    }
    assertThat(sure).as("answers the scan was sure of").isBetween(50, 240);
  }

  @ParameterizedTest
  @MethodSource("seeds")
  void eventStreamReadsTheSameWholeOrInChunks(long seed) {
    Random r = new Random(seed);
    for (int i = 0; i < 40; i++) {
      StringBuilder sse = new StringBuilder();
      for (int e = r.nextInt(4); e >= 0; e--) {
        sse.append("data: ")
            .append(
                new String(RandomAnswers.answer(r), StandardCharsets.UTF_8)
                    .replace('\n', ' ')
                    .replace('\r', ' '))
            .append("\n\n");
      }
      byte[] body = sse.append("data: [DONE]\n\n").toString().getBytes(StandardCharsets.UTF_8);
      UsageExtractor whole = UsageExtractor.forResponse("text/event-stream");
      whole.onLastChunk(body, 0, body.length);
      UsageExtractor chunked = UsageExtractor.forResponse("text/event-stream");
      for (int at = 0; at < body.length; ) {
        int n = Math.min(body.length - at, 1 + r.nextInt(40));
        chunked.onChunk(body, at, n);
        at += n;
      }
      chunked.onEnd();
      assertThat(chunked.usage()).isEqualTo(whole.usage());
      assertThat(chunked.complete()).isEqualTo(whole.complete()).isTrue();
    }
  }

  /**
   * Long strings, where the scan steps over eight plain ASCII bytes at a time: one byte that is not
   * plain (a quote, an escape, a control character, a byte of a multi-byte or broken UTF-8
   * sequence, a name's end) at every position of a run of up to 40 plain bytes, in a value and in a
   * member name, each read by the scan as the parser reads it.
   */
  @ParameterizedTest
  @MethodSource("seeds")
  void longStringsReadAsTheParserReads(long seed) {
    Random r = new Random(seed);
    String[] specials = {
      "\\\"",
      "\\\\",
      "\\n",
      "\\u00e9",
      "\\x",
      "\"",
      "\u0001",
      "\u001f",
      "\u007f",
      "\u00e9",
      "\u65e5",
      "\ud83d\ude00",
      "\\",
      "\u0000"
    };
    int sure = 0;
    for (int i = 0; i < 60; i++) {
      int run = 1 + r.nextInt(40);
      int at = r.nextInt(run + 1);
      StringBuilder text = new StringBuilder();
      for (int k = 0; k < run; k++) {
        text.append((char) (' ' + r.nextInt(95))); // printable ASCII
      }
      String plain = text.toString().replace("\\", "/").replace("\"", "'");
      String s =
          plain.substring(0, at) + specials[r.nextInt(specials.length)] + plain.substring(at);
      String body =
          r.nextBoolean()
              ? "{\"id\":\"" + s + "\",\"usage\":{\"prompt_tokens\":" + i + "}}"
              : "{\"" + s + "\":1,\"usage\":{\"completion_tokens\":" + i + "}}";
      byte[] b = body.getBytes(StandardCharsets.UTF_8);
      if (r.nextInt(8) == 0) {
        b[r.nextInt(b.length)] = (byte) (0x80 + r.nextInt(128)); // a broken UTF-8 byte
      }
      UsageExtractor parsed = UsageExtractor.forResponse("application/json");
      parsed.onChunk(b, 0, b.length);
      parsed.onEnd();
      UsageFields fields = new UsageFields();
      String shown = new String(b, StandardCharsets.ISO_8859_1);
      if (UsageScan.read(b, 0, b.length, fields)) {
        sure++;
        assertThat(fields.usage()).as("seed %d: %s", seed, shown).isEqualTo(parsed.usage());
        assertThat(parsed.complete()).as("complete: %s", shown).isTrue();
      }
      UsageExtractor whole = UsageExtractor.forResponse("application/json");
      whole.onLastChunk(b, 0, b.length);
      assertThat(whole.usage()).as("whole: %s", shown).isEqualTo(parsed.usage());
      assertThat(whole.complete()).as("whole complete: %s", shown).isEqualTo(parsed.complete());
    }
    assertThat(sure).as("answers the scan was sure of").isBetween(10, 60);
  }

  @Test
  void theFloorsAnswerIsReadByTheScan() {
    byte[] answer =
        ("{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
                + "\"content\":\"- Bo rolls back \\\"TLS\\\" on Thursday.\\n\"},"
                + "\"finish_reason\":\"stop\"}],"
                + "\"usage\":{\"prompt_tokens\":412,\"completion_tokens\":71,\"total_tokens\":483,"
                + "\"prompt_tokens_details\":{\"cached_tokens\":64}}}")
            .getBytes(StandardCharsets.UTF_8);
    UsageFields fields = new UsageFields();
    assertThat(UsageScan.read(answer, 0, answer.length, fields)).isTrue();
    assertThat(fields.usage()).isEqualTo(new Usage(412, 71, 64, true));
  }

  @Test
  void unsureOfWhatItCannotReadAsTheParser() {
    for (String body :
        new String[] {
          "",
          "[1]",
          "{\"usage\":{\"prompt_tokens\":1.5}}",
          "{\"usage\":{\"prompt_tokens\":1,}}",
          "{\"us\\u0061ge\":{\"prompt_tokens\":1}}",
          "{\"usage\":{\"prompt_tokens\":1}",
          "{\"usage\":{\"prompt_tokens\":12345678901234567890}}",
          "\uFEFF{}",
          "{\"a\":01}",
        }) {
      UsageFields fields = new UsageFields();
      byte[] b = body.getBytes(StandardCharsets.UTF_8);
      assertThat(UsageScan.read(b, 0, b.length, fields)).as(body).isFalse();
      assertThat(fields.usage()).isEqualTo(Usage.NONE);
    }
  }
}
