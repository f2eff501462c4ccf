package io.sluice.core.estimate;

import static io.sluice.core.estimate.Fixtures.bytes;
import static io.sluice.core.estimate.Fixtures.utf8;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonFactory;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

class TokenEstimatorTest {
  private static final TokenEstimator ESTIMATOR =
      TokenEstimator.uncached(EstimatorSettings.defaults());
  private static final EstimateLimits LIMITS = new EstimateLimits(512, 4096);

  private static TokenEstimate estimate(RequestFormat format, String json) {
    return ESTIMATOR.estimate(format, utf8(json), LIMITS);
  }

  // ------------------------------------------------------------ exact BPE counts

  @ParameterizedTest
  @CsvSource({
    "gpt-4o, bpe:o200k_base",
    "gpt-4o-mini-2024-07-18, bpe:o200k_base",
    "gpt-4.1-nano, bpe:o200k_base",
    "gpt-5, bpe:o200k_base",
    "o1-preview, bpe:o200k_base",
    "o3-mini, bpe:o200k_base",
    "o4-mini, bpe:o200k_base",
    "openai/gpt-4o, bpe:o200k_base",
    "gpt-4-turbo, bpe:cl100k_base",
    "gpt-3.5-turbo-instruct, bpe:cl100k_base",
    "GPT-4, bpe:cl100k_base",
  })
  void completionsPrompt_helloWorldKnownModel_isTwoBpeTokens(String model, String method) {
    TokenEstimate e =
        estimate(
            RequestFormat.OPENAI_COMPLETIONS,
            "{\"model\":\"" + model + "\",\"prompt\":\"hello world\"}");

    assertThat(e.inputTokens()).isEqualTo(2);
    assertThat(e.method()).isEqualTo(method);
    assertThat(e.model()).isEqualTo(model);
    assertThat(e.fallbackCause()).isNull();
  }

  @Test
  void embeddings_helloWorld_isTwoCl100kTokensAndNoOutput() {
    TokenEstimate e =
        estimate(
            RequestFormat.OPENAI_EMBEDDINGS,
            "{\"model\":\"text-embedding-3-small\",\"input\":\"hello world\",\"max_tokens\":99}");

    assertThat(e.inputTokens()).isEqualTo(2);
    assertThat(e.method()).isEqualTo("bpe:cl100k_base");
    assertThat(e.outputReserveTokens()).isZero();
    assertThat(e.outputClamped()).isFalse();
  }

  @Test
  void chat_oneUserMessage_addsMessageOverheadRoleAndReplyPriming() {
    TokenEstimate e =
        estimate(
            RequestFormat.OPENAI_CHAT,
            "{\"messages\":[{\"role\":\"user\",\"content\":\"hello world\"}],\"model\":\"gpt-4o\"}");

    // 4 per message + "user" (1) + "hello world" (2) + 3 reply priming
    assertThat(e.inputTokens()).isEqualTo(10);
    assertThat(e.method()).isEqualTo("bpe:o200k_base");
  }

  @Test
  void completions_tokenArrays_countTheirLength() {
    TokenEstimate e =
        ESTIMATOR.estimate(
            RequestFormat.OPENAI_COMPLETIONS,
            bytes("openai-completions-token-arrays.json"),
            LIMITS);

    assertThat(e.inputTokens()).isEqualTo(8);
    assertThat(e.outputReserveTokens()).isEqualTo(16);
  }

  @Test
  void heuristic_unknownModel_usesTextBytesNotJsonBytes() {
    String text = "a".repeat(400);
    TokenEstimate e =
        estimate(
            RequestFormat.OPENAI_COMPLETIONS,
            "{\"model\":\"mistral-large\",   \"prompt\":\"" + text + "\",  \"temperature\": 0.7}");

    assertThat(e.method()).isEqualTo("bytes");
    assertThat(e.inputTokens()).isEqualTo(100); // 400 bytes / 4.0
  }

  @Test
  void heuristic_escapedText_countsDecodedBytes() {
    // "\u00e9" is 6 bytes of JSON but 2 bytes of UTF-8 text; 200 of them => 400 bytes
    String text = "\\u00e9".repeat(200);
    TokenEstimate e = estimate(RequestFormat.OPENAI_COMPLETIONS, "{\"prompt\":\"" + text + "\"}");

    assertThat(e.inputTokens()).isEqualTo(100);
  }

  // ------------------------------------------------------------ fixtures per format

  static Stream<Arguments> fixtures() {
    return Stream.of(
        Arguments.of(
            "openai-chat-simple.json",
            RequestFormat.OPENAI_CHAT,
            "bpe:o200k_base",
            "gpt-4o-mini",
            true,
            256L,
            55L,
            75L),
        Arguments.of(
            "openai-chat-parts.json",
            RequestFormat.OPENAI_CHAT,
            "bpe:o200k_base",
            "gpt-4o",
            false,
            1000L,
            2 * 765 + 15L,
            2 * 765 + 30L),
        Arguments.of(
            "openai-chat-tools.json",
            RequestFormat.OPENAI_CHAT,
            "bpe:o200k_base",
            "gpt-4.1-mini",
            false,
            600L,
            320L,
            400L),
        Arguments.of(
            "openai-completions.json",
            RequestFormat.OPENAI_COMPLETIONS,
            "bpe:cl100k_base",
            "gpt-3.5-turbo-instruct",
            false,
            64L,
            20L,
            30L),
        Arguments.of(
            "openai-responses.json",
            RequestFormat.OPENAI_RESPONSES,
            "bpe:o200k_base",
            "gpt-5-mini",
            true,
            2048L,
            765 + 90L,
            765 + 140L),
        Arguments.of(
            "openai-embeddings.json",
            RequestFormat.OPENAI_EMBEDDINGS,
            "bpe:cl100k_base",
            "text-embedding-3-small",
            false,
            0L,
            20L,
            26L),
        Arguments.of(
            "anthropic-messages.json",
            RequestFormat.ANTHROPIC_MESSAGES,
            "bytes",
            "claude-sonnet-4-5",
            true,
            1024L,
            765 + 120L,
            765 + 200L),
        Arguments.of(
            "llama-chat.json",
            RequestFormat.OPENAI_CHAT,
            "bytes",
            "meta-llama/Llama-3.1-8B-Instruct",
            false,
            100L,
            18L,
            24L));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  void estimate_fixture_matchesExpectations(
      String fixture,
      RequestFormat format,
      String method,
      String model,
      boolean stream,
      long reserve,
      long minInput,
      long maxInput) {
    TokenEstimate e = ESTIMATOR.estimate(format, bytes(fixture), LIMITS);

    assertThat(e.fallbackCause()).isNull();
    assertThat(e.method()).isEqualTo(method);
    assertThat(e.model()).isEqualTo(model);
    assertThat(e.stream()).isEqualTo(stream);
    assertThat(e.outputReserveTokens()).isEqualTo(reserve);
    assertThat(e.outputClamped()).isFalse();
    assertThat(e.inputTokens()).isBetween(minInput, maxInput);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  void estimate_fixtureWithAuto_equalsExplicitFormat(String fixture, RequestFormat format) {
    byte[] body = bytes(fixture);

    assertThat(ESTIMATOR.estimate(RequestFormat.AUTO, body, LIMITS))
        .isEqualTo(ESTIMATOR.estimate(format, body, LIMITS));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  void estimate_bodyInsideLargerArray_equalsWholeArray(String fixture, RequestFormat format) {
    byte[] body = bytes(fixture);
    byte[] padded = new byte[body.length + 20];
    Arrays.fill(padded, (byte) '}');
    System.arraycopy(body, 0, padded, 7, body.length);

    assertThat(ESTIMATOR.estimate(format, padded, 7, body.length, LIMITS))
        .isEqualTo(ESTIMATOR.estimate(format, body, LIMITS));
  }

  @Test
  void chat_toolDefinitions_addOverheadAndTheirJsonText() {
    String withoutTools =
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    String withTools =
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
            + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\"}},"
            + "{\"type\":\"function\",\"function\":{\"name\":\"b\"}}]}";

    long delta =
        estimate(RequestFormat.OPENAI_CHAT, withTools).inputTokens()
            - estimate(RequestFormat.OPENAI_CHAT, withoutTools).inputTokens();

    assertThat(delta).isBetween(2 * 10 + 2 * 8L, 2 * 10 + 2 * 16L);
  }

  @Test
  void chat_partsInAnyKeyOrder_countTheSame() {
    String typeFirst =
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":["
            + "{\"type\":\"text\",\"text\":\"look at this\"},"
            + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://x/y.png\"}}]}]}";
    String typeLast =
        "{\"messages\":[{\"content\":[{\"text\":\"look at this\",\"type\":\"text\"},"
            + "{\"image_url\":{\"url\":\"https://x/y.png\"},\"type\":\"image_url\"}],"
            + "\"role\":\"user\"}],\"model\":\"gpt-4o\"}";

    assertThat(estimate(RequestFormat.OPENAI_CHAT, typeLast))
        .isEqualTo(estimate(RequestFormat.OPENAI_CHAT, typeFirst));
    assertThat(estimate(RequestFormat.OPENAI_CHAT, typeFirst).inputTokens()).isGreaterThan(765);
  }

  @Test
  void anthropic_systemStringAndBlocks_countTheSame() {
    String asString =
        "{\"model\":\"claude-3-5-haiku\",\"max_tokens\":10,\"system\":\"Be brief.\","
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}";
    String asBlocks =
        "{\"model\":\"claude-3-5-haiku\",\"max_tokens\":10,"
            + "\"system\":[{\"type\":\"text\",\"text\":\"Be brief.\"}],"
            + "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}]}";

    assertThat(estimate(RequestFormat.ANTHROPIC_MESSAGES, asBlocks))
        .isEqualTo(estimate(RequestFormat.ANTHROPIC_MESSAGES, asString));
  }

  @Test
  void responses_stringInputAndInstructions_countBoth() {
    TokenEstimate e =
        estimate(
            RequestFormat.OPENAI_RESPONSES,
            "{\"model\":\"gpt-4o\",\"instructions\":\"hello world\",\"input\":\"hello world\"}");

    // two messages (4 each) + 2 + 2 + 3 reply priming
    assertThat(e.inputTokens()).isEqualTo(15);
    assertThat(e.outputReserveTokens()).isEqualTo(512);
  }

  @Test
  void tokenizeCap_longText_extrapolatesCloseToFullCount() {
    String prose = Fixtures.text("calibration/prose-en.txt").replace("\n", " ").replace("\"", "");
    String body = "{\"model\":\"gpt-4o\",\"prompt\":\"" + prose.repeat(8) + "\"}";
    TokenEstimator capped =
        TokenEstimator.uncached(EstimatorSettings.builder().maxTokenizeChars(500).build());

    long full = estimate(RequestFormat.OPENAI_COMPLETIONS, body).inputTokens();
    long extrapolated =
        capped.estimate(RequestFormat.OPENAI_COMPLETIONS, utf8(body), LIMITS).inputTokens();

    assertThat(extrapolated).isCloseTo(full, org.assertj.core.data.Percentage.withPercentage(15));
  }

  // ------------------------------------------------------------ output reserve

  /**
   * Several answers in one request ({@code n}, and {@code best_of} for completions) reserve that
   * many times the one answer's cap (clamped per answer); other formats and unreadable counts are
   * one answer; at most 128 (OpenAI's own limit on {@code n}); a count is read as a Python engine
   * reads it ({@code "4"} is 4).
   */
  @ParameterizedTest(name = "{0} {1}")
  @CsvSource(
      delimiter = '|',
      value = {
        "OPENAI_CHAT        | \"max_tokens\":100,\"n\":3                  | 300   | false",
        "OPENAI_CHAT        | \"n\":2                                       | 1024  | false",
        "OPENAI_CHAT        | \"max_tokens\":9999,\"n\":2                 | 8192  | true",
        "OPENAI_CHAT        | \"max_tokens\":10,\"n\":1000                | 1280  | false",
        "OPENAI_CHAT        | \"max_tokens\":10,\"n\":0                   | 10    | false",
        "OPENAI_CHAT        | \"max_tokens\":10,\"n\":\"4\"               | 40    | false",
        "OPENAI_CHAT        | \"max_tokens\":10,\"best_of\":4             | 10    | false",
        "OPENAI_COMPLETIONS | \"max_tokens\":100,\"best_of\":4,\"n\":2    | 400   | false",
        "OPENAI_COMPLETIONS | \"max_tokens\":100,\"n\":3                  | 300   | false",
        "ANTHROPIC_MESSAGES | \"max_tokens\":100,\"n\":3                  | 100   | false",
        "OPENAI_RESPONSES   | \"max_output_tokens\":100,\"n\":3           | 100   | false",
      })
  void reserve_severalAnswers_multiplyTheOneAnswersReserve(
      RequestFormat format, String fields, long expected, boolean clamped) {
    String body =
        format == RequestFormat.OPENAI_COMPLETIONS
            ? "{\"model\":\"gpt-3.5-turbo-instruct\",\"prompt\":\"hi\"," + fields + "}"
            : format == RequestFormat.OPENAI_RESPONSES
                ? "{\"model\":\"gpt-4o\",\"input\":\"hi\"," + fields + "}"
                : "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                    + fields
                    + "}";
    TokenEstimate e = estimate(format, body);
    assertThat(e.outputReserveTokens()).isEqualTo(expected);
    assertThat(e.outputClamped()).isEqualTo(clamped);
    assertThat(e.fallbackCause()).isNull();
  }

  @ParameterizedTest(name = "max_tokens={0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "100                        | 100  | false",
        "4096                       | 4096 | false",
        "4097                       | 4096 | true",
        "1000000                    | 4096 | true",
        "99999999999999999999999999 | 4096 | true",
        "0                          | 512  | true",
        "-5                         | 512  | true",
        "-99999999999999999999999   | 512  | true",
        "12.5                       | 512  | true",
        "100.0                      | 100  | false",
        "'\"100\"'                  | 100  | false",
        "true                       | 512  | true",
        "{\"a\":1}                  | 512  | true",
        "null                       | 512  | false",
      })
  void reserve_maxTokensValue_clampedIntoLimits(String json, long expected, boolean clamped) {
    TokenEstimate e =
        estimate(
            RequestFormat.OPENAI_CHAT,
            "{\"model\":\"gpt-4o\",\"max_tokens\":"
                + json
                + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");

    assertThat(e.outputReserveTokens()).isEqualTo(expected);
    assertThat(e.outputClamped()).isEqualTo(clamped);
    assertThat(e.fallbackCause()).isNull();
  }

  @Test
  void reserve_absent_isDefaultAndNotClamped() {
    TokenEstimate e =
        estimate(
            RequestFormat.OPENAI_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");

    assertThat(e.outputReserveTokens()).isEqualTo(512);
    assertThat(e.outputClamped()).isFalse();
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "OPENAI_CHAT        | max_completion_tokens | 700",
        "OPENAI_CHAT        | max_tokens            | 700",
        "OPENAI_COMPLETIONS | max_tokens            | 700",
        "ANTHROPIC_MESSAGES | max_tokens            | 700",
        "OPENAI_RESPONSES   | max_output_tokens     | 700",
        "OPENAI_RESPONSES   | max_tokens            | 512",
        "ANTHROPIC_MESSAGES | max_output_tokens     | 512",
        "OPENAI_EMBEDDINGS  | max_tokens            | 0",
      })
  void reserve_formatReadsItsOwnCapField(RequestFormat format, String field, long expected) {
    String body =
        "{\""
            + field
            + "\":700,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
            + "\"prompt\":\"hi\",\"input\":\"hi\"}";

    assertThat(estimate(format, body).outputReserveTokens()).isEqualTo(expected);
  }

  @Test
  void reserve_zeroLimits_isZero() {
    TokenEstimate e =
        ESTIMATOR.estimate(
            RequestFormat.OPENAI_CHAT,
            utf8("{\"max_tokens\":50,\"messages\":[]}"),
            new EstimateLimits(0, 0));

    assertThat(e.outputReserveTokens()).isZero();
    assertThat(e.outputClamped()).isTrue();
  }

  // ------------------------------------------------------------ auto detection

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "{\"messages\":[],\"max_tokens\":10}                          | OPENAI_CHAT",
        "{\"model\":\"gpt-4o\",\"messages\":[]}                       | OPENAI_CHAT",
        "{\"messages\":[],\"system\":\"x\",\"max_tokens\":10}         | ANTHROPIC_MESSAGES",
        "{\"model\":\"claude-opus-4\",\"messages\":[]}                | ANTHROPIC_MESSAGES",
        "{\"messages\":[],\"anthropic_version\":\"bedrock-2023-05-31\"} | ANTHROPIC_MESSAGES",
        "{\"messages\":[],\"stop_sequences\":[]}                      | ANTHROPIC_MESSAGES",
        "{\"prompt\":\"x\"}                                           | OPENAI_COMPLETIONS",
        "{\"prompt\":[[1,2]]}                                         | OPENAI_COMPLETIONS",
        "{\"input\":\"x\",\"model\":\"gpt-4o\"}                       | OPENAI_RESPONSES",
        "{\"input\":[{\"role\":\"user\",\"content\":\"x\"}]}          | OPENAI_RESPONSES",
        "{\"instructions\":\"x\",\"previous_response_id\":\"r\"}      | OPENAI_RESPONSES",
        "{\"input\":\"x\",\"model\":\"text-embedding-3-large\"}       | OPENAI_EMBEDDINGS",
        "{\"input\":\"x\",\"dimensions\":256}                         | OPENAI_EMBEDDINGS",
        "{\"input\":[[1,2,3]]}                                        | OPENAI_EMBEDDINGS",
        "{\"input\":[1,2,3]}                                          | OPENAI_EMBEDDINGS",
      })
  void detect_keys_resolveFormat(String json, RequestFormat expected) throws Exception {
    RequestBodyReader reader =
        new RequestBodyReader(
            new JsonFactory(), utf8(json), 0, utf8(json).length, EstimatorSettings.defaults());

    assertThat(reader.scan().detect()).isEqualTo(expected);
  }

  // ------------------------------------------------------------ bad input

  static Stream<Arguments> badBodies() {
    byte[] notUtf8 = utf8("{\"messages\":[{\"role\":\"user\",\"content\":\"caf\u00e9 XX\"}]}");
    int at = indexOf(notUtf8, (byte) 'X');
    notUtf8[at] = (byte) 0xC3; // a lead byte followed by ASCII: invalid
    notUtf8[at + 1] = (byte) 0x28;
    byte[] overlong = utf8("{\"prompt\":\"..\"}");
    overlong[11] = (byte) 0xC0; // overlong encoding of '/'
    overlong[12] = (byte) 0xAF;
    return Stream.of(
        Arguments.of("empty", new byte[0], FallbackCause.EMPTY),
        Arguments.of("whitespace", utf8(" \n\t "), FallbackCause.EMPTY),
        Arguments.of("not json", utf8("hello, this is not json"), FallbackCause.NOT_JSON),
        Arguments.of("html", utf8("<html><body>502</body></html>"), FallbackCause.NOT_JSON),
        Arguments.of("bad syntax", utf8("{\"messages\": [1,,2]}"), FallbackCause.NOT_JSON),
        Arguments.of("not utf8", notUtf8, FallbackCause.NOT_UTF8),
        Arguments.of("overlong utf8", overlong, FallbackCause.NOT_UTF8),
        Arguments.of(
            "truncated",
            utf8("{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hel"),
            FallbackCause.TRUNCATED),
        Arguments.of(
            "truncated after root", utf8("{\"model\":\"gpt-4o\","), FallbackCause.TRUNCATED),
        Arguments.of(
            "too deep",
            utf8("{\"messages\":[],\"metadata\":" + "[".repeat(100) + "]".repeat(100) + "}"),
            FallbackCause.TOO_DEEP),
        Arguments.of(
            "too deep and truncated", utf8("{\"a\":" + "[".repeat(10_000)), FallbackCause.TOO_DEEP),
        Arguments.of("messages is a number", utf8("{\"messages\":3}"), FallbackCause.WRONG_TYPE),
        Arguments.of(
            "message is a string", utf8("{\"messages\":[\"hi\"]}"), FallbackCause.WRONG_TYPE),
        Arguments.of(
            "content is a number",
            utf8("{\"messages\":[{\"role\":\"user\",\"content\":42}]}"),
            FallbackCause.WRONG_TYPE),
        Arguments.of(
            "tools is an object", utf8("{\"messages\":[],\"tools\":{}}"), FallbackCause.WRONG_TYPE),
        Arguments.of("root is an array", utf8("[{\"messages\":[]}]"), FallbackCause.WRONG_TYPE),
        Arguments.of("root is a string", utf8("\"messages\""), FallbackCause.WRONG_TYPE),
        Arguments.of("unknown keys", utf8("{\"foo\":1}"), FallbackCause.UNKNOWN_FORMAT),
        Arguments.of(
            "huge number",
            utf8("{\"messages\":[],\"x\":" + "9".repeat(2000) + "}"),
            FallbackCause.TOO_LARGE));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badBodies")
  void estimate_badBody_fallsBackToWholeBodyBytes(String name, byte[] body, String cause) {
    TokenEstimate e = ESTIMATOR.estimate(RequestFormat.AUTO, body, LIMITS);

    assertThat(e.fallbackCause()).isEqualTo(cause);
    assertThat(e.method()).isEqualTo("bytes");
    assertThat(e.inputTokens()).isEqualTo((long) Math.ceil(body.length / 4.0));
    assertThat(e.outputReserveTokens()).isBetween(0L, LIMITS.maxOutputTokens());
  }

  @Test
  void estimate_wrongTypeAfterScan_keepsModelStreamAndReserve() {
    TokenEstimate e =
        estimate(
            RequestFormat.OPENAI_CHAT,
            "{\"model\":\"gpt-4o\",\"stream\":true,\"max_tokens\":99,\"messages\":3}");

    assertThat(e.fallbackCause()).isEqualTo(FallbackCause.WRONG_TYPE);
    assertThat(e.model()).isEqualTo("gpt-4o");
    assertThat(e.stream()).isTrue();
    assertThat(e.outputReserveTokens()).isEqualTo(99);
  }

  @Test
  void estimate_explicitFormatWithoutItsPromptField_isMissingInput() {
    TokenEstimate e =
        estimate(RequestFormat.OPENAI_CHAT, "{\"model\":\"gpt-4o\",\"prompt\":\"hello\"}");

    assertThat(e.fallbackCause()).isEqualTo(FallbackCause.MISSING_INPUT);
    assertThat(e.model()).isEqualTo("gpt-4o");
  }

  @Test
  void estimate_depthWithinLimit_isRead() {
    TokenEstimator shallow =
        TokenEstimator.uncached(EstimatorSettings.builder().maxJsonDepth(6).build());
    // root(1) > messages(2) > message(3) > content(4) > part(5) > image_url(6)
    String body =
        "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
            + "\"image_url\":{\"url\":\"u\"}}]}]}";

    assertThat(shallow.estimate(RequestFormat.AUTO, utf8(body), LIMITS).fallbackCause()).isNull();
    assertThat(
            TokenEstimator.uncached(EstimatorSettings.builder().maxJsonDepth(5).build())
                .estimate(RequestFormat.AUTO, utf8(body), LIMITS)
                .fallbackCause())
        .isEqualTo(FallbackCause.TOO_DEEP);
  }

  @Test
  void fromContentLength_bytes_dividedByBytesPerToken() {
    TokenEstimate e = ESTIMATOR.fromContentLength(4001, LIMITS);

    assertThat(e.inputTokens()).isEqualTo(1001);
    assertThat(e.method()).isEqualTo("content-length");
    assertThat(e.outputReserveTokens()).isEqualTo(512);
    assertThat(ESTIMATOR.fromContentLength(-1, LIMITS).inputTokens()).isZero();
  }

  private static int indexOf(byte[] b, byte value) {
    for (int i = 0; i < b.length; i++) {
      if (b[i] == value) {
        return i;
      }
    }
    throw new IllegalArgumentException("value: " + value + " (expected: present)");
  }
}
