package io.sluice.core.estimate;

import static io.sluice.core.estimate.Fixtures.utf8;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The body scan's fan-out ({@link FanOut}): tools, tool_choice, parallel tool calls per format. */
class FanOutScanTest {
  private static final TokenEstimator ESTIMATOR =
      TokenEstimator.uncached(EstimatorSettings.defaults());
  private static final EstimateLimits LIMITS = new EstimateLimits(512, 4096);
  private static final String TOOL =
      "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}";
  private static final String ANTHROPIC_TOOL =
      "{\"name\":\"f\",\"input_schema\":{\"type\":\"object\"}}";
  private static final String RESPONSES_TOOL = "{\"type\":\"function\",\"name\":\"f\"}";

  private static FanOut fanOut(RequestFormat format, String json) {
    TokenEstimate e = ESTIMATOR.estimate(format, utf8(json), LIMITS);
    return e.fanOut();
  }

  private static String tools(String tool, int n) {
    return "[" + String.join(",", Collections.nCopies(n, tool)) + "]";
  }

  /**
   * OpenAI chat: tool definitions counted; a forced choice ("required", a named function, the
   * legacy function_call by name); parallel calls allowed unless parallel_tool_calls is false or
   * tool_choice is none.
   */
  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "                                                          | 3 | false | true",
        "\"tool_choice\":\"auto\",                                 | 3 | false | true",
        "\"tool_choice\":\"required\",                             | 3 | true  | true",
        "\"tool_choice\":\"none\",                                 | 3 | false | false",
        "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}, | 3 | true | true",
        "\"tool_choice\":{\"type\":\"allowed_tools\",\"mode\":\"auto\"},        | 3 | false | true",
        "\"tool_choice\":{\"type\":\"allowed_tools\",\"mode\":\"required\"},    | 3 | true | true",
        "\"parallel_tool_calls\":false,                            | 3 | false | false",
        "\"parallel_tool_calls\":true,\"tool_choice\":\"required\", | 3 | true  | true",
        "\"parallel_tool_calls\":\"no\",                           | 3 | false | false",
        "\"parallel_tool_calls\":0,                                | 3 | false | false",
        "\"tool_choice\":\"REQUIRED\",                             | 3 | false | true",
        "\"tool_choice\":42,                                       | 3 | false | true",
      })
  void openAiChat(String fields, int tools, boolean forced, boolean parallel) {
    String f = fields == null ? "" : fields;
    FanOut out =
        fanOut(
            RequestFormat.OPENAI_CHAT,
            "{\"model\":\"gpt-4o\","
                + f
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":"
                + tools(TOOL, tools)
                + "}");

    assertThat(out).isEqualTo(new FanOut(tools, forced, parallel));
  }

  @Test
  void openAiChat_legacyFunctions_countedAndForcedByName() {
    String body =
        "{\"function_call\":{\"name\":\"f\"},\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
            + "\"functions\":[{\"name\":\"f\"},{\"name\":\"g\"}]}";

    assertThat(fanOut(RequestFormat.OPENAI_CHAT, body)).isEqualTo(new FanOut(2, true, true));
    assertThat(
            fanOut(
                RequestFormat.OPENAI_CHAT,
                body.replace("{\"name\":\"f\"},\"messages", "\"none\",\"messages")))
        .isEqualTo(new FanOut(2, false, false));
  }

  @Test
  void noTools_isNone_whateverToolChoiceSays() {
    assertThat(
            fanOut(
                RequestFormat.OPENAI_CHAT,
                "{\"tool_choice\":\"required\",\"parallel_tool_calls\":true,"
                    + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[]}"))
        .isEqualTo(FanOut.NONE);
    assertThat(
            fanOut(
                RequestFormat.OPENAI_CHAT,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":null}"))
        .isEqualTo(FanOut.NONE);
  }

  /** Responses: string and object tool_choice, hosted tools forced by type. */
  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "                                          | false | true",
        "\"tool_choice\":\"required\",              | true  | true",
        "\"tool_choice\":\"none\",                  | false | false",
        "\"tool_choice\":{\"type\":\"function\",\"name\":\"f\"}, | true | true",
        "\"tool_choice\":{\"type\":\"file_search\"}, | true | true",
        "\"parallel_tool_calls\":false,             | false | false",
      })
  void openAiResponses(String fields, boolean forced, boolean parallel) {
    String f = fields == null ? "" : fields;
    FanOut out =
        fanOut(
            RequestFormat.OPENAI_RESPONSES,
            "{\"model\":\"gpt-4o\","
                + f
                + "\"input\":\"hi\",\"tools\":"
                + tools(RESPONSES_TOOL, 2)
                + "}");

    assertThat(out).isEqualTo(new FanOut(2, forced, parallel));
  }

  /** Anthropic: {"type":"any"|"tool"} forces; disable_parallel_tool_use turns parallel off. */
  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "                                                                   | false | true",
        "\"tool_choice\":{\"type\":\"auto\"},                                | false | true",
        "\"tool_choice\":{\"type\":\"any\"},                                 | true  | true",
        "\"tool_choice\":{\"type\":\"tool\",\"name\":\"f\"},                 | true  | true",
        "\"tool_choice\":{\"type\":\"none\"},                                | false | false",
        "\"tool_choice\":{\"disable_parallel_tool_use\":true,\"type\":\"any\"}, | true | false",
        "\"tool_choice\":{\"type\":\"auto\",\"disable_parallel_tool_use\":\"yes\"}, | false | false",
        "\"tool_choice\":\"any\",                                            | false | true",
        "\"parallel_tool_calls\":false,                                      | false | true",
      })
  void anthropic(String fields, boolean forced, boolean parallel) {
    String f = fields == null ? "" : fields;
    FanOut out =
        fanOut(
            RequestFormat.ANTHROPIC_MESSAGES,
            "{\"model\":\"claude-sonnet-4\",\"max_tokens\":100,"
                + f
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":"
                + tools(ANTHROPIC_TOOL, 4)
                + "}");

    assertThat(out).isEqualTo(new FanOut(4, forced, parallel));
  }

  /** Formats without tools never carry fan-out, even when a body has a tools key. */
  @Test
  void completionsAndEmbeddings_none() {
    assertThat(
            fanOut(
                RequestFormat.OPENAI_COMPLETIONS,
                "{\"prompt\":\"hi\",\"tools\":" + tools(TOOL, 3) + "}"))
        .isEqualTo(FanOut.NONE);
    assertThat(
            fanOut(
                RequestFormat.OPENAI_EMBEDDINGS,
                "{\"input\":\"hi\",\"tools\":" + tools(TOOL, 3) + "}"))
        .isEqualTo(FanOut.NONE);
  }

  /** Auto-detected format reads the same fields. */
  @Test
  void auto_detectsAndReads() {
    assertThat(
            fanOut(
                RequestFormat.AUTO,
                "{\"model\":\"claude-3\",\"tool_choice\":{\"type\":\"any\"},\"messages\":[],"
                    + "\"tools\":"
                    + tools(ANTHROPIC_TOOL, 1)
                    + "}"))
        .isEqualTo(new FanOut(1, true, true));
  }

  /** Key order never matters: every permutation of the top-level keys reads the same (seeded). */
  @ParameterizedTest
  @ValueSource(longs = {1L, 2L, 3L, 17L, 42L, 1234L, 99_999L})
  void keyOrder_doesNotMatter(long seed) {
    List<String> keys =
        new ArrayList<>(
            List.of(
                "\"model\":\"gpt-4o\"",
                "\"tool_choice\":{\"function\":{\"name\":\"f\"},\"type\":\"function\"}",
                "\"parallel_tool_calls\":false",
                "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]",
                "\"tools\":" + tools(TOOL, 5),
                "\"max_tokens\":10"));
    Collections.shuffle(keys, new Random(seed));

    FanOut out = fanOut(RequestFormat.OPENAI_CHAT, "{" + String.join(",", keys) + "}");

    assertThat(out).isEqualTo(new FanOut(5, true, false));
  }

  /** A body the walk cannot read (missing prompt) still carries what the scan saw. */
  @Test
  void fallbackWithScan_keepsFanOut() {
    TokenEstimate e =
        ESTIMATOR.estimate(
            RequestFormat.OPENAI_CHAT,
            utf8("{\"tool_choice\":\"required\",\"tools\":" + tools(TOOL, 2) + "}"),
            LIMITS);

    assertThat(e.fallbackCause()).isEqualTo(FallbackCause.MISSING_INPUT);
    assertThat(e.fanOut()).isEqualTo(new FanOut(2, true, true));
  }

  /** Unreadable bodies, and the estimates without a body, declare none. */
  @Test
  void notJson_andHeaderEstimates_none() {
    assertThat(fanOut(RequestFormat.OPENAI_CHAT, "{\"tools\":[1,2")).isEqualTo(FanOut.NONE);
    assertThat(ESTIMATOR.fromContentLength(100, LIMITS).fanOut()).isEqualTo(FanOut.NONE);
    assertThat(ESTIMATOR.unknownSize(100, LIMITS).fanOut()).isEqualTo(FanOut.NONE);
  }

  /** A tools value that is not an array is not counted (and the walk falls back). */
  @Test
  void toolsNotAnArray_zero() {
    assertThat(
            fanOut(
                RequestFormat.OPENAI_CHAT,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":{\"a\":1}}"))
        .isEqualTo(FanOut.NONE);
  }
}
