package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static io.sluice.e2e.SluiceEnvoyHarness.sluiceMetadata;
import static io.sluice.e2e.SluiceEnvoyHarness.str;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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

  // --- the InferencePool recipe's chain: envoy-config/envoy-gateway/inference-pool/

  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final Path EG =
      Path.of(System.getProperty("user.dir")).resolve("../envoy-config/envoy-gateway").normalize();

  private static List<JsonNode> documents(Path file) {
    try (var p = YAML.getFactory().createParser(file.toFile())) {
      List<JsonNode> out = new ArrayList<>();
      YAML.readValues(p, JsonNode.class)
          .forEachRemaining(
              d -> {
                if (d != null && !d.isEmpty()) {
                  out.add(d);
                }
              });
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The recipe's Sluice policy (classes, the trusted llm-d signals, llmD) on the e2e base. */
  private static Policy recipePolicy() {
    JsonNode r = documents(EG.resolve("inference-pool/sluice-policy-llm-d.yaml")).get(0);
    return Policy.base()
        .with("classes", r.path("classes").toString())
        .with("signals.class", r.at("/signals/class").toString())
        .with("signals.tenant", r.at("/signals/tenant").toString())
        .with("llmD", r.path("llmD").toString());
  }

  /**
   * What the recipe's gateway hands on to ext_proc: the client's headers without those the shipped
   * ClientTrafficPolicy removes first ({@code headers.earlyRequestHeaders.remove}), then the
   * headers the recipe's SecurityPolicy sets from a verified token's claims ({@code
   * claimToHeaders}; none without a token).
   */
  private static HttpRequest throughGateway(
      String path, int maxTokens, Map<String, String> client, Map<String, String> claims) {
    JsonNode ctp = documents(EG.resolve("sluice-client-traffic-policy.yaml")).get(0);
    List<String> removed = new ArrayList<>();
    ctp.at("/spec/headers/earlyRequestHeaders/remove").forEach(n -> removed.add(n.asText()));
    Map<String, String> passed = new LinkedHashMap<>(client);
    passed.keySet().removeIf(removed::contains);
    for (JsonNode d : documents(EG.resolve("inference-pool/sluice-inference-pool.yaml"))) {
      if (d.path("kind").asText().equals("SecurityPolicy")) {
        for (JsonNode c : d.at("/spec/jwt/providers/0/claimToHeaders")) {
          String claim = claims.get(c.path("claim").asText());
          if (claim != null) {
            passed.put(c.path("header").asText(), claim);
          }
        }
      }
    }
    String body =
        path.equals(SluiceEnvoyHarness.CHAT)
            ? chatBody(maxTokens, false)
            : "{\"model\":\"gpt-4o\",\"prompt\":\"Summarize.\",\"max_tokens\":" + maxTokens + "}";
    HttpRequest.Builder b = HttpRequest.post(path, body);
    passed.forEach(b::header);
    return b.build();
  }

  /**
   * The recipe end to end (its policy, its strip list, its claim mapping): a verified objective
   * picks the class and the fairness id the tenant, whatever the client forged beside the token;
   * without a token, a client's own objective and fairness id never reach Sluice (the route's
   * class, the anonymous tenant).
   */
  @Test
  void recipeChain_verifiedObjectiveMaps_clientForgedObjectiveIgnored() throws Exception {
    h = SluiceEnvoyHarness.start(recipePolicy());
    Map<String, String> forged = new HashMap<>();
    forged.put("x-llm-d-inference-objective", "premium-traffic");
    forged.put("x-llm-d-inference-fairness-id", "victim");

    HttpResult verified =
        h.send(
            throughGateway(
                "/v1/completions",
                10,
                forged,
                Map.of("tenant", "team-a", "objective", "standard")));
    assertThat(verified.status()).isEqualTo(200);
    assertThat(str(sluiceMetadata(verified), "class"))
        .as("the verified objective standard (priority 0), not the forged premium-traffic")
        .isEqualTo("standard");
    assertThat(str(sluiceMetadata(verified), "tenant")).isEqualTo("team-a");

    HttpResult anonymous = h.send(throughGateway("/v1/completions", 10, forged, Map.of()));
    assertThat(anonymous.status()).isEqualTo(200);
    assertThat(str(sluiceMetadata(anonymous), "class"))
        .as("the forged objective was stripped: the completions route's class")
        .isEqualTo("batch");
    assertThat(str(sluiceMetadata(anonymous), "tenant")).isEqualTo("anonymous");
    h.awaitNothingInFlight();
  }
}
