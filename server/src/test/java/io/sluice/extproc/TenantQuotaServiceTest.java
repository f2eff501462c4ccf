package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Per-tenant RPM/TPM budgets on the ext_proc path: reserve, refuse with 429, reconcile. */
class TenantQuotaServiceTest extends ExtProcServerTestBase {
  private static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      # the reserve is the client's cap (the old rule): these tests size requests by it
      estimation: {learnedReserve: {enabled: false}}
      pools: {gpu: {capacity: 100000}}
      classes: {interactive: {reservedShare: 1.0, defaultOutputTokens: 100, maxOutputTokens: 1000}}
      tiers:
        limited: {weight: 1, rpm: 3, inputTpm: 100000, outputTpm: 600}
      tenants: {anonymousTier: limited, unknownTier: limited}
      signals: {tenant: [{metadata: x-sluice-tenant}]}
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      """;

  @Override
  protected String policy() {
    return CONFIG;
  }

  private ProcessingResponse request(String tenant, int maxTokens) throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of("x-sluice-tenant", tenant));
    ProcessingResponse h =
        c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    if (h.hasImmediateResponse()) {
      return h;
    }
    ProcessingResponse b =
        c.send(
            body(
                "{\"model\":\"gpt-4o\",\"max_tokens\":"
                    + maxTokens
                    + ",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}"));
    if (b.hasRequestBody()) {
      c.send(responseHeaders(200, "application/json", false));
      c.send(
          responseBody(
              "{\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":20,\"total_tokens\":32}}",
              true));
    }
    c.reset();
    return b;
  }

  @Test
  void requestsPerMinute_exhausted_429TenantRateAtHeaders() throws Exception {
    for (int i = 0; i < 3; i++) {
      assertThat(request("a", 10).hasRequestBody()).isTrue();
    }
    ProcessingResponse r = request("a", 10);
    assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(429);
    assertThat(header(r, "x-sluice-reason")).isEqualTo("tenant_rate");
    // other tenants have their own bucket
    assertThat(request("b", 10).hasRequestBody()).isTrue();
  }

  @Test
  void outputTokenBudget_reservedAtBody_refundedWhenActualUsageIsSmaller() throws Exception {
    // reserve 500 of 600 output tokens; actual 20 -> 480 refunded, so the next 500 fits
    assertThat(request("c", 500).hasRequestBody()).isTrue();
    await()
        .atMost(Duration.ofSeconds(5))
        .until(
            () ->
                server
                        .registry()
                        .find("sluice.quota.reconciled.tokens")
                        .tag("direction", "refunded")
                        .counter()
                    != null);
    assertThat(request("c", 500).hasRequestBody()).isTrue();
    ProcessingResponse third = request("c", 1000);
    assertThat(third.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(429);
    assertThat(header(third, "x-sluice-reason")).isEqualTo("tenant_tokens");
  }
}
