package io.sluice.core.estimate;

import static io.sluice.core.estimate.Fixtures.bytes;
import static io.sluice.core.estimate.Fixtures.utf8;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class UsageExtractorTest {
  private static final String SSE = "text/event-stream";
  private static final String JSON = "application/json";

  static Stream<Arguments> responses() {
    return Stream.of(
        Arguments.of("openai-chat-response.json", JSON, new Usage(59, 41, 0, true)),
        Arguments.of("openai-responses-response.json", JSON, new Usage(328, 52, 0, true)),
        // Anthropic: input_tokens + cache_creation + cache_read; the cache reads are the cached
        // part
        Arguments.of("anthropic-response.json", JSON, new Usage(1310 + 200 + 1000, 87, 1000, true)),
        Arguments.of("openai-chat-stream.sse", SSE, new Usage(59, 12, 0, true)),
        Arguments.of("openai-responses-stream.sse", SSE, new Usage(328, 52, 0, true)),
        Arguments.of("anthropic-stream.sse", SSE, new Usage(472 + 2048, 15, 2048, true)));
  }

  static Stream<Arguments> cachedDetails() {
    String chat =
        "{\"id\":\"c\",\"usage\":{\"prompt_tokens\":2006,\"completion_tokens\":300,"
            + "\"prompt_tokens_details\":{\"cached_tokens\":1920,\"audio_tokens\":0},"
            + "\"completion_tokens_details\":{\"reasoning_tokens\":0}},\"choices\":[]}";
    String responses =
        "{\"object\":\"response\",\"usage\":{\"input_tokens\":5000,"
            + "\"input_tokens_details\":{\"x\":{\"cached_tokens\":7},\"cached_tokens\":4096},"
            + "\"output_tokens\":12}}";
    return Stream.of(
        Arguments.of(JSON, chat, new Usage(2006, 300, 1920, true)),
        Arguments.of(JSON, responses, new Usage(5000, 12, 4096, true)),
        Arguments.of(
            SSE, "data: " + chat + "\n\ndata: [DONE]\n\n", new Usage(2006, 300, 1920, true)),
        Arguments.of(SSE, "data: " + responses + "\n\n", new Usage(5000, 12, 4096, true)));
  }

  @ParameterizedTest
  @MethodSource("cachedDetails")
  void cachedTokens_ofTheDetails_areTheCachedInput_wholeOrCutAnywhere(
      String contentType, String text, Usage expected) {
    byte[] body = text.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    assertThat(extract(contentType, body)).isEqualTo(expected);
    for (int cut = 1; cut < body.length; cut += 7) {
      assertThat(extract(contentType, body, cut)).as("cut at %d", cut).isEqualTo(expected);
    }
  }

  private static Usage extract(String contentType, byte[] body, int... splits) {
    UsageExtractor extractor = UsageExtractor.forResponse(contentType);
    int from = 0;
    for (int split : splits) {
      extractor.onChunk(body, from, split - from);
      from = split;
    }
    extractor.onChunk(body, from, body.length - from);
    extractor.onEnd();
    return extractor.usage();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("responses")
  void usage_wholeBody_extracted(String fixture, String contentType, Usage expected) {
    assertThat(extract(contentType, bytes(fixture))).isEqualTo(expected);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("responses")
  void usage_splitAtEveryOffset_sameResult(String fixture, String contentType, Usage expected) {
    byte[] body = bytes(fixture);
    for (int split = 0; split <= body.length; split++) {
      assertThat(extract(contentType, body, split)).as("split at %d", split).isEqualTo(expected);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("responses")
  void usage_oneByteChunksInReusedBuffer_sameResult(
      String fixture, String contentType, Usage expected) {
    byte[] body = bytes(fixture);
    UsageExtractor extractor = UsageExtractor.forResponse(contentType);
    byte[] buffer = new byte[1];
    for (byte b : body) {
      buffer[0] = b;
      extractor.onChunk(buffer, 0, 1);
      buffer[0] = '!'; // the caller reuses its buffer
    }
    extractor.onEnd();

    assertThat(extractor.usage()).isEqualTo(expected);
  }

  @Test
  void usage_beforeEnd_reportsWhatWasSeen() {
    byte[] body = bytes("anthropic-stream.sse");
    String text = new String(body, java.nio.charset.StandardCharsets.UTF_8);
    int afterStart = text.indexOf("event: content_block_start");
    UsageExtractor extractor = UsageExtractor.forResponse(SSE);

    extractor.onChunk(body, 0, afterStart);

    assertThat(extractor.usage()).isEqualTo(new Usage(472 + 2048, 2, 2048, true));
  }

  @Test
  void usage_streamWithoutUsage_isNone() {
    byte[] body =
        utf8(
            "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n"
                + "data: [DONE]\n\n");

    assertThat(extract(SSE, body)).isEqualTo(Usage.NONE);
  }

  @Test
  void usage_jsonModeNotJson_isNoneAndNeverThrows() {
    assertThat(extract(JSON, utf8("<html><body>502 Bad Gateway</body></html>")))
        .isEqualTo(Usage.NONE);
    assertThat(extract(null, utf8("[{\"usage\":{\"prompt_tokens\":1}}]"))).isEqualTo(Usage.NONE);
    assertThat(extract(JSON, new byte[0])).isEqualTo(Usage.NONE);
  }

  @Test
  void usage_jsonModeNestedUsage_ignored() {
    byte[] body =
        utf8(
            "{\"data\":{\"usage\":{\"prompt_tokens\":5}},\"choices\":[{\"usage\":{\"prompt_tokens\":6}}]}");

    assertThat(extract(JSON, body)).isEqualTo(Usage.NONE);
  }

  @Test
  void usage_jsonModeTruncatedAfterUsage_keepsUsage() {
    byte[] body = utf8("{\"usage\":{\"input_tokens\":7,\"output_tokens\":3},\"content\":[{\"te");

    assertThat(extract(JSON, body)).isEqualTo(new Usage(7, 3, 0, true));
  }

  @Test
  void usage_overLongSseLine_skippedAndNextEventRead() {
    String big = "data: {\"pad\":\"" + "x".repeat(UsageExtractor.MAX_LINE_BYTES) + "\"}\n\n";
    String good = "data: {\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":4}}\n\n";
    byte[] body = utf8(big + good);

    assertThat(extract(SSE, body, 1000, 200_000, body.length - 10))
        .isEqualTo(new Usage(11, 4, 0, true));
  }

  @Test
  void usage_overLongEventSplitOverDataLines_dropped() {
    String half = "x".repeat(UsageExtractor.MAX_LINE_BYTES / 2 + 10);
    String body =
        "data: {\"usage\":{\"prompt_tokens\":1},\"a\":\""
            + half
            + "\",\n"
            + "data: \"b\":\""
            + half
            + "\"}\n\n";

    assertThat(extract(SSE, utf8(body))).isEqualTo(Usage.NONE);
  }

  @Test
  void usage_multiLineSseData_joined() {
    byte[] body =
        utf8(
            "event: x\ndata: {\"usage\":\ndata: {\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n");

    assertThat(extract(SSE, body)).isEqualTo(new Usage(3, 2, 0, true));
  }

  @Test
  void usage_lastEventWithoutTrailingNewline_readAtEnd() {
    byte[] body = utf8("data: {\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}");

    assertThat(extract(SSE, body)).isEqualTo(new Usage(3, 2, 0, true));
  }

  @Test
  void usage_crOnlyLineEndings_supported() {
    byte[] body = utf8("data: {\"usage\":{\"input_tokens\":3,\"output_tokens\":2}}\r\r");

    assertThat(extract(SSE, body, 5)).isEqualTo(new Usage(3, 2, 0, true));
  }

  @Test
  void usage_negativeOrHugeValues_clamped() {
    byte[] body =
        utf8("{\"usage\":{\"prompt_tokens\":-3,\"completion_tokens\":99999999999999999999999}}");

    assertThat(extract(JSON, body)).isEqualTo(new Usage(0, Long.MAX_VALUE, 0, true));
  }

  @Test
  void usage_chunksAfterEnd_ignored() {
    UsageExtractor extractor = UsageExtractor.forResponse(JSON);
    extractor.onEnd();
    extractor.onChunk(utf8("{\"usage\":{\"prompt_tokens\":3}}"), 0, 28);

    assertThat(extractor.usage()).isEqualTo(Usage.NONE);
  }

  @Test
  void forResponse_contentTypeWithParameters_selectsSse() {
    assertThat(UsageExtractor.forResponse("Text/Event-Stream; charset=utf-8").isEventStream())
        .isTrue();
    assertThat(UsageExtractor.forResponse("application/json").isEventStream()).isFalse();
    assertThat(UsageExtractor.forResponse(null).isEventStream()).isFalse();
  }

  @Test
  void usage_invalidChunkBounds_ignored() {
    UsageExtractor extractor = UsageExtractor.forResponse(SSE);
    byte[] data = new byte[4];
    Arrays.fill(data, (byte) 'd');

    extractor.onChunk(data, 3, 5);
    extractor.onChunk(data, -1, 1);
    extractor.onChunk(null, 0, 1);
    extractor.onEnd();

    assertThat(extractor.usage()).isEqualTo(Usage.NONE);
  }
}
