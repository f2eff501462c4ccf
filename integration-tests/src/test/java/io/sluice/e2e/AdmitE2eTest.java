package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chat;
import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static io.sluice.e2e.SluiceEnvoyHarness.num;
import static io.sluice.e2e.SluiceEnvoyHarness.sluiceMetadata;
import static io.sluice.e2e.SluiceEnvoyHarness.str;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.Struct;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpResult;
import io.sluice.upstream.UpstreamRequest;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Admission and release at completion, through the Envoy emulator and the simulated upstream. */
@Timeout(20)
class AdmitE2eTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern ESTIMATE = Pattern.compile("input=(\\d+);output=(\\d+);work=(\\d+)");

  private SluiceEnvoyHarness h;

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  @Test
  void sseChat_admitted_reachesUpstreamWithDecisionAndEstimateAndReleasesAtEndOfStream()
      throws Exception {
    h = SluiceEnvoyHarness.start(Policy.base());

    HttpResult r = h.send(chat(chatBody(20, true)).build());

    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.UPSTREAM_RESPONSE);
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.header("content-type")).contains("text/event-stream");
    assertThat(r.bodyUtf8()).contains("chat.completion.chunk").endsWith("data: [DONE]\n\n");
    UpstreamRequest up = r.upstreamRequest().orElseThrow();
    assertThat(up.headers().first("x-sluice-decision")).contains("admit");
    Matcher est = ESTIMATE.matcher(up.headers().first("x-sluice-estimate").orElseThrow());
    assertThat(est.matches()).as("x-sluice-estimate format").isTrue();
    assertThat(Long.parseLong(est.group(2))).isEqualTo(20);

    Struct md = sluiceMetadata(r);
    assertThat(str(md, "tenant")).isEqualTo("acme");
    assertThat(str(md, "tier")).isEqualTo("pro");
    assertThat(str(md, "class")).isEqualTo("interactive");
    assertThat(str(md, "pool")).isEqualTo("gpu");
    assertThat(str(md, "route")).isEqualTo("chat");
    assertThat(str(md, "decision")).isEqualTo("admit");
    assertThat(str(md, "reason")).isEqualTo("admitted");
    assertThat(num(md, "est_input_tokens")).isEqualTo(Long.parseLong(est.group(1))).isPositive();
    assertThat(num(md, "est_output_tokens")).isEqualTo(20);
    assertThat(num(md, "work_units")).isEqualTo(Long.parseLong(est.group(3)));

    h.awaitNothingInFlight();
    assertThat(h.released("completed")).isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);
    assertThat(h.counter("sluice.decisions", "decision", "admit", "reason", "admitted"))
        .isEqualTo(1);
    // usage came from the SSE usage chunk: the simulated provider's prompt/completion tokens
    int prompt = (up.body().length + 3) / 4;
    assertThat(h.summaryCount("sluice.tokens.actual_to_estimate", "direction", "input"))
        .isEqualTo(1);
    assertThat(h.summaryCount("sluice.tokens.actual_to_estimate", "direction", "output"))
        .isEqualTo(1);
    assertThat(h.summaryTotal("sluice.tokens.actual", "direction", "output")).isEqualTo(20);
    assertThat(h.summaryTotal("sluice.tokens.actual", "direction", "input")).isEqualTo(prompt);
    assertThat(h.summaryTotal("sluice.tokens.actual_to_estimate", "direction", "output"))
        .isEqualTo(1.0);
    assertThat(h.counter("sluice.upstream.responses", "status", "2xx")).isEqualTo(1);
  }

  @Test
  void jsonChat_admitted_releasedAtCompletionWithUsageFromJsonBody() throws Exception {
    h = SluiceEnvoyHarness.start(Policy.base());

    HttpResult r = h.send(chat(chatBody(10, false)).build());

    assertThat(r.status()).isEqualTo(200);
    assertThat(r.header("content-type")).contains("application/json");
    JsonNode body = JSON.readTree(r.body());
    assertThat(body.path("object").asText()).isEqualTo("chat.completion");
    assertThat(body.path("usage").path("completion_tokens").asInt()).isEqualTo(10);
    assertThat(str(sluiceMetadata(r), "decision")).isEqualTo("admit");

    h.awaitNothingInFlight();
    assertThat(h.released("completed")).isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);
    assertThat(h.summaryCount("sluice.tokens.actual_to_estimate", "direction", "output"))
        .isEqualTo(1);
    assertThat(h.summaryTotal("sluice.tokens.actual", "direction", "output")).isEqualTo(10);
    assertThat(h.summaryTotal("sluice.tokens.actual", "direction", "input"))
        .isEqualTo(body.path("usage").path("prompt_tokens").asInt());
  }

  @Test
  void sseChat_heldMidStream_permitKeptUntilLastChunkThenReleasedCompleted() {
    h = SluiceEnvoyHarness.start(Policy.base());
    h.upstream.mode(ControlledUpstream.Mode.HOLD_STREAM);

    var pending = h.sendAsync(chat(chatBody(20, true)).build());
    h.awaitUpstreamRequests(1);
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> h.counter("sluice.upstream.responses", "status", "2xx") == 1);

    // the first chunk went through Sluice, the stream is not over: the permit is still held
    assertThat(pending).isNotDone();
    assertThat(h.pool().requestsInFlight()).isEqualTo(1);
    assertThat(h.releasedAny()).isZero();

    h.upstream.finishStreams();
    HttpResult r = SluiceEnvoyHarness.result(pending);

    assertThat(r.status()).isEqualTo(200);
    assertThat(r.bodyUtf8())
        .isEqualTo(ControlledUpstream.FIRST_SSE_CHUNK + ControlledUpstream.LAST_SSE_CHUNKS);
    h.awaitNothingInFlight();
    assertThat(h.released("completed")).isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);
    assertThat(h.summaryTotal("sluice.tokens.actual", "direction", "output")).isEqualTo(2);
    assertThat(h.summaryTotal("sluice.tokens.actual", "direction", "input")).isEqualTo(12);
  }

  @Test
  void responseBodyModeNone_beforeEnvoy137_permitHeldPastItsPredictedTailUntilTheStreamEnds()
      throws InterruptedException {
    // the emulator as Envoy up to 1.36: the ext_proc stream lives to the request's end
    FilterConfig filter =
        SluiceEnvoyHarness.recommendedFilter().responseBodyMode(FilterConfig.BodyMode.NONE).build();
    h =
        SluiceEnvoyHarness.start(
            Policy.base().with("pools.gpu.defaultServiceTime", "100ms"), filter);
    h.upstream.mode(ControlledUpstream.Mode.HOLD_STREAM);

    var pending = h.sendAsync(chat(chatBody(20, true)).build());

    // the response headers came and the end will not be seen: held for its predicted tail
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> h.gauge("sluice.permits.tail.held", "pool", "gpu") == 1);
    assertThat(h.counter("sluice.response.end.unseen", "pool", "gpu", "cause", "body_mode_none"))
        .isEqualTo(1);
    Thread.sleep(300); // past the predicted tail (100 ms): the stream is still open, so held on
    assertThat(pending).isNotDone();
    assertThat(h.pool().requestsInFlight()).isEqualTo(1);
    assertThat(h.releasedAny()).isZero();

    h.upstream.finishStreams();
    HttpResult r = SluiceEnvoyHarness.result(pending);
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.bodyUtf8()).endsWith("data: [DONE]\n\n");
    h.awaitNothingInFlight(); // the stream's reset at the request's end released it
    assertThat(h.released("completed")).isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);
    assertThat(h.gauge("sluice.permits.tail.held", "pool", "gpu")).isZero();
    // Sluice never saw the body, so no usage was recorded
    assertThat(h.summaryCount("sluice.tokens.actual_to_estimate")).isZero();
  }
}
