package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.sluice.core.admission.Reason;
import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * llm-d interop on the wire: the trusted objective header picks the class, the fairness id the
 * tenant, and a flow-control refusal carries {@code x-llm-d-request-dropped-reason} beside {@code
 * x-sluice-reason} (a refusal outside llm-d's taxonomy carries none).
 */
class LlmdInteropServiceTest extends ExtProcServerTestBase {
  static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      estimation: {learnedReserve: {enabled: false}}
      pools:
        gpu: {capacity: 1000, retryAfter: {min: 2s, max: 30s}}
      classes:
        interactive: {rank: 0, reservedShare: 0.6, borrow: true, maxQueueWait: 0s, defaultOutputTokens: 100, maxOutputTokens: 400}
        batch: {rank: 1, reservedShare: 0.2, borrow: false, maxQueueWait: 0s, defaultOutputTokens: 100, maxOutputTokens: 400}
      tiers:
        free: {weight: 1, maxInFlight: 1}
      tenants: {anonymousTier: free, unknown: admit, unknownTier: free}
      signals:
        class: [{header: x-llm-d-inference-objective}]
        tenant: [{header: x-llm-d-inference-fairness-id}, {header: x-tenant-id}]
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: batch, format: openai-chat}
      llmD:
        priorityClasses: {interactive: 10, batch: -100}
        objectives: {premium-traffic: {priority: 100}, sheddable: {priority: -1}}
        droppedReasonHeader: true
      """;

  @Override
  protected String policy() {
    return CONFIG;
  }

  private static String chatBody(int maxTokens) {
    return "{\"model\":\"gpt-4o\",\"max_tokens\":"
        + maxTokens
        + ",\"messages\":[{\"role\":\"user\",\"content\":\"hello world\"}]}";
  }

  private ProcessingResponse send(String objective, String fairnessId, int maxTokens)
      throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    c.send(
        headers(
            chat(
                "x-llm-d-inference-objective", objective,
                "x-llm-d-inference-fairness-id", fairnessId),
            false,
            BodySendMode.BUFFERED,
            BodySendMode.STREAMED));
    return c.send(body(chatBody(maxTokens)));
  }

  private static String md(ProcessingResponse r, String key) {
    return r.getDynamicMetadata()
        .getFieldsOrThrow("sluice")
        .getStructValue()
        .getFieldsOrThrow(key)
        .getStringValue();
  }

  @Test
  void objectiveAndFairnessId_pickClassAndTenant_saturationCarriesLlmdDroppedReason()
      throws Exception {
    // ~310 work units each; interactive may use 800 of 1000 (batch keeps its 200)
    ProcessingResponse a = send("premium-traffic", "team-a", 300);
    assertThat(a.hasRequestBody()).isTrue();
    assertThat(md(a, "class")).isEqualTo("interactive");
    assertThat(md(a, "tenant")).isEqualTo("team-a");

    ProcessingResponse b = send("premium-traffic", "team-b", 300);
    assertThat(b.hasRequestBody()).isTrue();
    // a third large request does not fit: refused before dispatch, as llm-d says it
    ProcessingResponse c = send("premium-traffic", "team-c", 300);
    ImmediateResponse ir = c.getImmediateResponse();
    assertThat(ir.getStatus().getCodeValue()).isEqualTo(503);
    assertThat(headersOf(ir))
        .containsEntry("x-sluice-reason", "pool_saturated")
        .containsEntry("x-llm-d-request-dropped-reason", "rejected-saturated");
  }

  @Test
  void tenantsOwnLimit_isNoFlowControlDrop_noLlmdHeader() throws Exception {
    assertThat(send("sheddable", "team-a", 1).hasRequestBody()).isTrue();
    ProcessingResponse second = send("sheddable", "team-a", 1);
    ImmediateResponse ir = second.getImmediateResponse();
    assertThat(ir.getStatus().getCodeValue()).isEqualTo(429);
    assertThat(headersOf(ir))
        .containsEntry("x-sluice-reason", "tenant_concurrency")
        .doesNotContainKey("x-llm-d-request-dropped-reason");
  }

  @Test
  void everyReason_mapsToARejectedValueOrNone_neverAnEvictedOne() {
    Map<Reason, String> mapped = new EnumMap<>(Reason.class);
    for (Reason r : Reason.values()) {
      String v = LlmdDroppedReason.of(r);
      if (v != null) {
        mapped.put(r, v);
      }
    }
    assertThat(mapped)
        .containsEntry(Reason.POOL_SATURATED, "rejected-saturated")
        .containsEntry(Reason.QUEUE_FULL, "rejected-saturated")
        .containsEntry(Reason.QUEUE_TIMEOUT, "rejected-ttl-expired")
        .containsEntry(Reason.DEADLINE_UNREACHABLE, "rejected-ttl-expired")
        .containsEntry(Reason.SHUTTING_DOWN, "rejected-shutting-down")
        .doesNotContainKeys(
            Reason.TENANT_CONCURRENCY, Reason.INVALID_REQUEST, Reason.BUDGET_EXHAUSTED);
    assertThat(mapped.values()).allMatch(v -> v.startsWith("rejected-"));
    for (Reason r : mapped.keySet()) {
      assertThat(new String(LlmdDroppedReason.bytes(r), java.nio.charset.StandardCharsets.US_ASCII))
          .isEqualTo(mapped.get(r));
    }
  }
}
