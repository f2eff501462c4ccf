package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.core.intake.BackgroundRequest;
import io.sluice.core.intake.JobResults;
import io.sluice.core.intake.JobStatus;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Every body parse stops at a bounded nesting depth (a test per parser): the request estimate (its
 * own {@code estimation.maxJsonDepth}, in {@code TokenEstimatorTest}), the response in JSON mode
 * (whole and fed in chunks), each SSE event, the rewrite of an admitted body, and intake's reads of
 * a request and of the upstream's answer. Past the bound the parse fails as for malformed JSON and
 * never throws to its caller; at a depth within it the same body is read.
 */
class JsonBoundsTest {
  private static final String USAGE = "\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":11}";

  /** {@code "deep": [[...]]} with {@code levels} arrays, as one object member. */
  private static String deep(int levels) {
    return "\"deep\":" + "[".repeat(levels) + "]".repeat(levels);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static Usage jsonWhole(String body) {
    UsageExtractor u = UsageExtractor.forResponse("application/json");
    byte[] b = utf8(body);
    u.onLastChunk(b, 0, b.length);
    return u.usage();
  }

  private static Usage jsonChunked(String body) {
    UsageExtractor u = UsageExtractor.forResponse("application/json");
    byte[] b = utf8(body);
    for (int i = 0; i < b.length; i += 7) {
      u.onChunk(b, i, Math.min(7, b.length - i));
    }
    u.onEnd();
    return u.usage();
  }

  @Test
  void responseJson_nestedPastTheBound_stopsThere_withinItIsRead() {
    int within = JsonBounds.RESPONSE_MAX_DEPTH - 2; // the root object is one level
    String ok = "{" + deep(within) + "," + USAGE + "}";
    String tooDeep = "{" + deep(JsonBounds.RESPONSE_MAX_DEPTH + 1) + "," + USAGE + "}";
    String hostile = "{" + deep(200_000) + "," + USAGE + "}";
    assertThat(jsonWhole(ok).outputTokens()).isEqualTo(11);
    assertThat(jsonChunked(ok).outputTokens()).isEqualTo(11);
    for (String body : new String[] {tooDeep, hostile}) {
      assertThat(jsonWhole(body)).isEqualTo(Usage.NONE);
      assertThat(jsonChunked(body)).isEqualTo(Usage.NONE);
    }
    // usage before the deep member is kept: the parse stops, it does not forget
    assertThat(jsonWhole("{" + USAGE + "," + deep(200_000) + "}").outputTokens()).isEqualTo(11);
  }

  @Test
  void sseEvent_nestedPastTheBound_isSkipped_theOthersAreRead() {
    UsageExtractor u = UsageExtractor.forResponse("text/event-stream");
    // the later event's usage would win (each field: the last seen), so the deep one comes last
    String stream =
        "data: {"
            + deep(JsonBounds.RESPONSE_MAX_DEPTH - 2)
            + ","
            + USAGE
            + "}\n\n"
            + "data: {"
            + deep(JsonBounds.RESPONSE_MAX_DEPTH + 1)
            + ",\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":99}}\n\n"
            + "data: [DONE]\n\n";
    byte[] b = utf8(stream);
    u.onChunk(b, 0, b.length);
    u.onEnd();
    assertThat(u.usage().outputTokens()).isEqualTo(11);
    assertThat(u.usage().inputTokens()).isEqualTo(7);
  }

  @Test
  void rewrite_ofABodyNestedPastTheBound_isNotApplied() {
    BodyRewrite.Edits cap = BodyRewrite.Edits.NONE.withCap(50, null, null);
    byte[] ok =
        utf8("{\"messages\":[],\"max_tokens\":400," + deep(JsonBounds.REQUEST_MAX_DEPTH - 2) + "}");
    assertThat(BodyRewrite.apply(null, ok, 0, ok.length, cap)).isNotNull();
    byte[] tooDeep =
        utf8("{\"messages\":[],\"max_tokens\":400," + deep(JsonBounds.REQUEST_MAX_DEPTH + 1) + "}");
    assertThat(BodyRewrite.apply(null, tooDeep, 0, tooDeep.length, cap)).isNull();
  }

  @Test
  void intakeRequest_nestedPastTheBound_isNoBackgroundAsk() {
    byte[] ok = utf8("{\"background\":true," + deep(JsonBounds.REQUEST_MAX_DEPTH - 2) + "}");
    assertThat(BackgroundRequest.read(ok, 0, ok.length)).isNotNull();
    byte[] tooDeep = utf8("{" + deep(JsonBounds.REQUEST_MAX_DEPTH + 1) + ",\"background\":true}");
    assertThat(BackgroundRequest.read(tooDeep, 0, tooDeep.length)).isNull();
  }

  @Test
  void intakeAnswer_andStoredBody_nestedPastTheBound_areRefusedAsNotJson() {
    byte[] answer = utf8("{\"id\":\"x\"," + deep(JsonBounds.REQUEST_MAX_DEPTH + 1) + "}");
    JobResults.Outcome o = JobResults.of("job-1", 200, answer, null, 1 << 20);
    assertThat(o.status()).isEqualTo(JobStatus.FAILED);
    assertThat(o.error()).startsWith("upstream_invalid");
    byte[] fine = utf8("{\"id\":\"x\"," + deep(JsonBounds.REQUEST_MAX_DEPTH - 2) + "}");
    assertThat(JobResults.of("job-1", 200, fine, null, 1 << 20).status())
        .isEqualTo(JobStatus.COMPLETED);
    assertThatThrownBy(() -> JobResults.forUpstream(answer))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
