package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chat;
import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static io.sluice.e2e.SluiceEnvoyHarness.sluiceMetadata;
import static io.sluice.e2e.SluiceEnvoyHarness.str;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * 503 when the pool is full, 429 at the tenant cap: Sluice's ImmediateResponse as Envoy renders it.
 */
@Timeout(20)
class RejectE2eTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private SluiceEnvoyHarness h;

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  /** Checks the rejection as the client sees it; returns the Retry-After seconds. */
  static long assertRejected(HttpResult r, int status, String reason, String scope)
      throws Exception {
    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.LOCAL_REPLY);
    assertThat(r.status()).isEqualTo(status);
    assertThat(r.upstreamRequest()).as("rejected requests never reach the upstream").isEmpty();
    assertThat(r.responseCodeDetails()).isEqualTo("sluice_" + reason);
    assertThat(r.header("content-type")).contains("application/json");
    assertThat(r.header("x-sluice-reason")).contains(reason);
    JsonNode error = JSON.readTree(r.body()).path("error");
    assertThat(error.path("code").asText()).isEqualTo(reason);
    assertThat(error.path("scope").asText()).isEqualTo(scope);
    assertThat(error.path("type").asText()).isNotEmpty();
    assertThat(error.path("message").asText()).isNotEmpty();
    assertThat(error.has("retry_after_seconds")).isTrue();
    assertThat(str(sluiceMetadata(r), "decision")).isEqualTo("reject");
    assertThat(str(sluiceMetadata(r), "reason")).isEqualTo(reason);
    if (r.header("retry-after").isEmpty()) {
      assertThat(error.path("retry_after_seconds").asLong()).isZero();
      return 0;
    }
    long retryAfter = Long.parseLong(r.header("retry-after").orElseThrow());
    assertThat(error.path("retry_after_seconds").asLong()).isEqualTo(retryAfter);
    return retryAfter;
  }

  @Test
  void poolFull_furtherRequest_gets503PoolSaturatedWithRetryAfter() throws Exception {
    h = SluiceEnvoyHarness.start(Policy.base());
    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    // 400 output tokens + ~20 input each: two fit in the pool's 1000 work units, three do not
    HttpRequest big = chat(chatBody(400, false)).build();
    CompletableFuture<HttpResult> first = h.sendAsync(big);
    CompletableFuture<HttpResult> second = h.sendAsync(big);
    h.awaitUpstreamRequests(2);
    assertThat(h.pool().requestsInFlight()).isEqualTo(2);

    HttpResult third = h.send(big);

    long retryAfter = assertRejected(third, 503, "pool_saturated", "pool");
    assertThat(retryAfter).isBetween(1L, 30L);
    assertThat(JSON.readTree(third.body()).path("error").path("type").asText())
        .isEqualTo("overloaded");
    assertThat(h.counter("sluice.decisions", "decision", "reject", "reason", "pool_saturated"))
        .isEqualTo(1);
    assertThat(h.pool().requestsInFlight()).isEqualTo(2);

    h.upstream.releaseHeld();
    assertThat(
            List.of(
                SluiceEnvoyHarness.result(first).status(),
                SluiceEnvoyHarness.result(second).status()))
        .containsOnly(200);
    h.awaitNothingInFlight();
    assertThat(h.released("completed")).isEqualTo(2);
    assertThat(h.releasedAny()).isEqualTo(2);
    assertThat(h.upstream.received()).hasSize(2);
  }

  @Test
  void tenantAtTierCap_furtherRequest_gets429TenantConcurrency_otherTenantStillAdmitted()
      throws Exception {
    h = SluiceEnvoyHarness.start(Policy.base());
    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    // "bob" is unknown, so tier free (maxInFlight 2)
    HttpRequest bob =
        HttpRequest.post(SluiceEnvoyHarness.CHAT, chatBody(10, false))
            .routeGrpcInitialMetadata("x-sluice-tenant", "bob")
            .build();
    CompletableFuture<HttpResult> first = h.sendAsync(bob);
    CompletableFuture<HttpResult> second = h.sendAsync(bob);
    h.awaitUpstreamRequests(2);

    HttpResult third = h.send(bob);

    long retryAfter = assertRejected(third, 429, "tenant_concurrency", "tenant");
    assertThat(retryAfter).isGreaterThanOrEqualTo(1);
    assertThat(JSON.readTree(third.body()).path("error").path("type").asText())
        .isEqualTo("rate_limited");
    assertThat(str(sluiceMetadata(third), "tenant")).isEqualTo("bob");
    assertThat(str(sluiceMetadata(third), "tier")).isEqualTo("free");
    assertThat(
            h.counter(
                "sluice.decisions",
                "tier",
                "free",
                "decision",
                "reject",
                "reason",
                "tenant_concurrency"))
        .isEqualTo(1);

    // the cap is per tenant: acme (tier pro, no cap) still gets in
    CompletableFuture<HttpResult> acme = h.sendAsync(chat(chatBody(10, false)).build());
    h.awaitUpstreamRequests(3);
    assertThat(h.pool().requestsInFlight()).isEqualTo(3);

    h.upstream.releaseHeld();
    assertThat(
            List.of(
                SluiceEnvoyHarness.result(first).status(),
                SluiceEnvoyHarness.result(second).status(),
                SluiceEnvoyHarness.result(acme).status()))
        .containsOnly(200);
    h.awaitNothingInFlight();
    assertThat(h.released("completed")).isEqualTo(3);

    // bob's slots are free again
    h.upstream.mode(ControlledUpstream.Mode.SIMULATED);
    assertThat(h.send(bob).status()).isEqualTo(200);
  }
}
