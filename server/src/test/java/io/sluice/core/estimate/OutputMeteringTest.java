package io.sluice.core.estimate;

import static io.sluice.core.estimate.Fixtures.bytes;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The output an answer streams, counted as it streams ({@link UsageExtractor#outputSoFar}, {@link
 * UsageExtractor#meteredOutputTokens}) and its own end ({@link UsageExtractor#complete}), per
 * provider format. A meter of 1 byte per token makes the count the bytes of the text it read.
 */
class OutputMeteringTest {
  private static final String SSE = "text/event-stream";

  private static String event(String json) {
    return "data: " + json + "\n\n";
  }

  /** OpenAI chat: content, reasoning, refusal and tool call arguments; role and ids are free. */
  static final String CHAT =
      event("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}")
          + event("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}],\"usage\":null}")
          + event("{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"ab\"}}]}")
          + event(
              "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\","
                  + "\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]}}]}")
          + event("{\"choices\":[{\"index\":1,\"delta\":{\"refusal\":\"no\"}}]}")
          + event("{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}");

  /** Legacy completions: {@code choices[].text}. */
  static final String COMPLETIONS =
      event("{\"choices\":[{\"text\":\"foo\",\"index\":0,\"finish_reason\":null}]}")
          + event("{\"choices\":[{\"text\":\"bar!\",\"index\":0,\"finish_reason\":\"length\"}]}");

  /** Anthropic: text, tool input JSON and thinking deltas; running usage in message_delta. */
  static final String ANTHROPIC =
      "event: message_start\n"
          + event(
              "{\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[],"
                  + "\"usage\":{\"input_tokens\":25,\"output_tokens\":2}}}")
          + "event: content_block_start\n"
          + event(
              "{\"type\":\"content_block_start\",\"index\":0,"
                  + "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}")
          + event(
              "{\"type\":\"content_block_delta\",\"index\":0,"
                  + "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi there\"}}")
          + event(
              "{\"type\":\"content_block_delta\",\"index\":1,"
                  + "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"x\\\":\"}}")
          + event(
              "{\"type\":\"content_block_delta\",\"index\":2,"
                  + "\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}")
          + event(
              "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
                  + "\"usage\":{\"output_tokens\":30}}");

  /** Responses: delta strings count; the {@code .done} events repeat the text and do not. */
  static final String RESPONSES =
      event("{\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"usage\":null}}")
          + event("{\"type\":\"response.output_text.delta\",\"item_id\":\"i\",\"delta\":\"abc\"}")
          + event("{\"type\":\"response.function_call_arguments.delta\",\"delta\":\"{}\"}")
          + event("{\"type\":\"response.output_text.done\",\"text\":\"abc\"}");

  static Stream<Arguments> streams() {
    return Stream.of(
        // format, body before its last event, last event, metered bytes, output so far at the end
        Arguments.of("openai-chat", CHAT, "data: [DONE]\n\n", 3 + 2 + 7 + 2, 14),
        Arguments.of("openai-completions", COMPLETIONS, "data: [DONE]\n\n", 3 + 4, 7),
        Arguments.of(
            "anthropic-messages",
            ANTHROPIC,
            "event: message_stop\n" + event("{\"type\":\"message_stop\"}"),
            8 + 5 + 3,
            30),
        Arguments.of(
            "openai-responses",
            RESPONSES,
            event(
                "{\"type\":\"response.completed\",\"response\":{\"id\":\"r\","
                    + "\"usage\":{\"input_tokens\":9,\"output_tokens\":4}}}"),
            3 + 2,
            5));
  }

  private static UsageExtractor meter() {
    return UsageExtractor.forResponse(SSE, OutputMeter.bytes(1.0));
  }

  private static void feed(UsageExtractor x, String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    x.onChunk(b, 0, b.length);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("streams")
  void stream_metersItsTextAndSeesItsEnd(
      String format, String body, String last, int meteredBytes, long outputAtEnd) {
    UsageExtractor x = meter();
    feed(x, body);
    assertThat(x.meteredOutputTokens()).as("metered before the end").isEqualTo(meteredBytes);
    assertThat(x.complete()).as("not complete before its last event").isFalse();
    feed(x, last);
    x.onEnd();
    assertThat(x.complete()).as("complete after its last event").isTrue();
    assertThat(x.meteredOutputTokens()).isEqualTo(meteredBytes);
    assertThat(x.outputSoFar())
        .as("the larger of the reported usage and the metered text")
        .isEqualTo(outputAtEnd);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("streams")
  void stream_cutAtEveryOffset_metersWhatArrivedAndIsNeverComplete(
      String format, String body, String last, int meteredBytes, long outputAtEnd) {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    long previous = 0;
    for (int cut = 0; cut <= b.length; cut++) {
      UsageExtractor x = meter();
      x.onChunk(b, 0, cut);
      x.onEnd(); // the stream ends here: cancel, reset
      assertThat(x.complete()).as("cut at %d", cut).isFalse();
      assertThat(x.meteredOutputTokens())
          .as("cut at %d: never decreasing, never more than the whole", cut)
          .isBetween(previous, (long) meteredBytes);
      previous = x.meteredOutputTokens();
    }
    assertThat(previous).isEqualTo(meteredBytes);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("streams")
  void stream_splitAtEveryOffset_sameCount(
      String format, String body, String last, int meteredBytes, long outputAtEnd) {
    byte[] b = (body + last).getBytes(StandardCharsets.UTF_8);
    for (int split = 0; split <= b.length; split++) {
      UsageExtractor x = meter();
      x.onChunk(b, 0, split);
      x.onChunk(b, split, b.length - split);
      x.onEnd();
      assertThat(x.meteredOutputTokens()).as("split at %d", split).isEqualTo(meteredBytes);
      assertThat(x.complete()).as("split at %d", split).isTrue();
    }
  }

  @Test
  void anthropicCancelledAfterItsText_outputSoFarIsTheTextNotMessageStartsTwo() {
    UsageExtractor x = UsageExtractor.forResponse(SSE, OutputMeter.bytes(1.0));
    String start =
        event(
            "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,"
                + "\"output_tokens\":2}}}");
    feed(
        x,
        start
            + event(
                "{\"type\":\"content_block_delta\",\"delta\":{\"text\":\""
                    + "x".repeat(500)
                    + "\"}}"));
    x.onEnd();
    assertThat(x.usage()).isEqualTo(new Usage(25, 2, 0, true));
    assertThat(x.outputSoFar()).isEqualTo(500);
    assertThat(x.complete()).isFalse();
  }

  @Test
  void bpeMeter_openAiFixture_countsCloseToTheReportedCompletionTokens() {
    TokenEstimator estimator = TokenEstimator.uncached(EstimatorSettings.defaults());
    UsageExtractor x = UsageExtractor.forResponse(SSE, estimator.meter("gpt-4o-mini"));
    byte[] b = bytes("openai-chat-stream.sse");
    x.onChunk(b, 0, b.length);
    x.onEnd();
    var o200k = ModelEncodings.o200k();
    String first = "FOB moves the risk";
    String second = " to you; the usage of CIF is simpler.";
    assertThat(x.meteredOutputTokens())
        .as("each delta tokenized on its own")
        .isEqualTo(o200k.countTokensOrdinary(first) + o200k.countTokensOrdinary(second));
    assertThat(x.meteredOutputTokens())
        .as("within 2 tokens of the whole answer's count")
        .isBetween(
            o200k.countTokensOrdinary(first + second) - 2L,
            o200k.countTokensOrdinary(first + second) + 2L);
    assertThat(x.complete()).isTrue();
  }

  @Test
  void bpeMeter_longAnswer_tokenizesItsStartAndCountsTheRestAtItsRatio() {
    TokenEstimator estimator = TokenEstimator.uncached(EstimatorSettings.defaults());
    UsageExtractor x = UsageExtractor.forResponse(SSE, estimator.meter("gpt-4o"));
    String[] words = {" the", " shipment", " leaves", " Rotterdam", " on", " Friday", ";"};
    StringBuilder whole = new StringBuilder();
    for (int i = 0; i < 2000; i++) { // ~14,000 characters: most of it past the tokenized part
      String w = words[i % words.length];
      whole.append(w);
      feed(x, event("{\"choices\":[{\"delta\":{\"content\":\"" + w + "\"}}]}"));
    }
    long exact = ModelEncodings.o200k().countTokensOrdinary(whole.toString());
    assertThat(whole.length()).isGreaterThan(5 * OutputMeter.MAX_TOKENIZED_CHARS);
    assertThat((double) x.meteredOutputTokens() / exact).isBetween(0.95, 1.05);
  }

  @Test
  void bytesMeter_unknownModel_countsUtf8BytesOverBytesPerToken() {
    TokenEstimator estimator =
        TokenEstimator.uncached(EstimatorSettings.defaults()); // 4 bytes/token
    UsageExtractor x = UsageExtractor.forResponse(SSE, estimator.meter("llama-3-70b"));
    feed(x, event("{\"choices\":[{\"delta\":{\"content\":\"" + "é".repeat(10) + "\"}}]}"));
    feed(x, event("{\"choices\":[{\"delta\":{\"content\":\"abc\"}}]}"));
    assertThat(x.meteredOutputTokens()).as("(20 + 3) bytes / 4, rounded up once").isEqualTo(6);
  }

  @Test
  void json_completeOnlyWhenTheRootObjectCloses() {
    byte[] whole = bytes("openai-chat-response.json");
    UsageExtractor cut = UsageExtractor.forResponse("application/json", OutputMeter.bytes(1.0));
    int lastBrace = new String(whole, StandardCharsets.UTF_8).lastIndexOf('}');
    cut.onChunk(whole, 0, lastBrace); // ASCII fixture: char index = byte index
    cut.onEnd();
    assertThat(cut.complete()).isFalse();
    UsageExtractor all = UsageExtractor.forResponse("application/json", OutputMeter.bytes(1.0));
    all.onLastChunk(whole, 0, whole.length);
    assertThat(all.complete()).isTrue();
    assertThat(all.meteredOutputTokens()).as("JSON answers are not metered").isZero();
  }

  @Test
  void notJsonEventsAndErrors_meterNothingAndNeverThrow() {
    UsageExtractor x = meter();
    feed(x, "data: not json\n\n" + event("{\"choices\":\"oops\",\"delta\":7}"));
    feed(x, event("{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"));
    x.onEnd();
    assertThat(x.meteredOutputTokens()).isZero();
    assertThat(x.complete()).isFalse();
  }
}
