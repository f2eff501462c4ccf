package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static io.sluice.e2e.SluiceEnvoyHarness.sluiceMetadata;
import static io.sluice.e2e.SluiceEnvoyHarness.str;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * llm-d's headers through the Envoy emulator: with the operator's {@code signals} trusting them
 * (behind a gateway that strips client copies and sets them from verified claims, as the
 * InferencePool recipe does), the InferenceObjective name picks the class through {@code
 * llmD.objectives} and the fairness id is the tenant, and a saturation refusal reaches the client
 * with {@code x-llm-d-request-dropped-reason: rejected-saturated} beside {@code x-sluice-reason}.
 * Without that declaration the same headers from a client change nothing.
 */
@Timeout(30)
class LlmdE2eTest {
  private SluiceEnvoyHarness h;

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  private static Policy withObjectives() {
    return Policy.base()
        .with(
            "llmD",
            "{priorityClasses: {interactive: 10, batch: -100},"
                + " objectives: {premium-traffic: {priority: 100}, sheddable: {priority: -1}},"
                + " droppedReasonHeader: true}");
  }

  private static Policy trusted() {
    return withObjectives()
        .with("signals.class", "[{header: x-llm-d-inference-objective}]")
        .with("signals.tenant", "[{header: x-llm-d-inference-fairness-id}]");
  }

  private static HttpRequest llmd(String path, String objective, String fairnessId, int max) {
    String body =
        path.equals(SluiceEnvoyHarness.CHAT)
            ? chatBody(max, false)
            : "{\"model\":\"gpt-4o\",\"prompt\":\"Summarize.\",\"max_tokens\":" + max + "}";
    return HttpRequest.post(path, body)
        .header("x-llm-d-inference-objective", objective)
        .header("x-llm-d-inference-fairness-id", fairnessId)
        .build();
  }

  @Test
  void trustedHeaders_objectiveIsTheClass_fairnessIdTheTenant_dropCarriesLlmdReason()
      throws Exception {
    h = SluiceEnvoyHarness.start(trusted());
    // the chat route's class is interactive; the objective says batch
    HttpResult shed = h.send(llmd(SluiceEnvoyHarness.CHAT, "sheddable", "team-a", 10));
    assertThat(shed.status()).isEqualTo(200);
    assertThat(str(sluiceMetadata(shed), "class")).isEqualTo("batch");
    assertThat(str(sluiceMetadata(shed), "tenant")).isEqualTo("team-a");
    // the completions route's class is batch; the objective says interactive
    HttpResult premium = h.send(llmd("/v1/completions", "premium-traffic", "team-b", 10));
    assertThat(premium.status()).isEqualTo(200);
    assertThat(str(sluiceMetadata(premium), "class")).isEqualTo("interactive");
    assertThat(str(sluiceMetadata(premium), "tenant")).isEqualTo("team-b");
    h.awaitNothingInFlight();

    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    // 400 output + ~20 input each: two fit in the pool's 1000 work units, a third does not
    // (three tenants: an unknown one may have two in flight, tier free)
    CompletableFuture<HttpResult> first =
        h.sendAsync(llmd(SluiceEnvoyHarness.CHAT, "premium-traffic", "team-c", 400));
    CompletableFuture<HttpResult> second =
        h.sendAsync(llmd(SluiceEnvoyHarness.CHAT, "premium-traffic", "team-d", 400));
    h.awaitUpstreamRequests(4);
    HttpResult third = h.send(llmd(SluiceEnvoyHarness.CHAT, "premium-traffic", "team-e", 400));
    RejectE2eTest.assertRejected(third, 503, "pool_saturated", "pool");
    assertThat(third.header("x-llm-d-request-dropped-reason")).contains("rejected-saturated");
    h.upstream.releaseHeld();
    assertThat(
            List.of(
                SluiceEnvoyHarness.result(first).status(),
                SluiceEnvoyHarness.result(second).status()))
        .containsOnly(200);
    h.awaitNothingInFlight();
  }

  @Test
  void forgedHeaders_notDeclaredTrusted_areIgnored() throws Exception {
    // objectives are configured, but signals read class and tenant only from Envoy's metadata
    h = SluiceEnvoyHarness.start(withObjectives());
    HttpResult r = h.send(llmd("/v1/completions", "premium-traffic", "victim", 10));
    assertThat(r.status()).isEqualTo(200);
    assertThat(str(sluiceMetadata(r), "class")).isEqualTo("batch");
    assertThat(str(sluiceMetadata(r), "tenant")).isEqualTo("anonymous");
    // an admitted answer carries no dropped reason
    assertThat(r.header("x-llm-d-request-dropped-reason")).isEmpty();
  }
}
