package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chat;
import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Retry control through the emulated Envoy (issue 19): a duplicate of an operation in flight gets
 * 409 {@code duplicate_operation}; a retry storm gets 429 {@code retry_budget} while originals
 * still pass; a refused operation that comes back after its Retry-After is counted as honouring it
 * (and its success), one that comes back at once as early.
 */
@Timeout(30)
class RetryE2eTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private SluiceEnvoyHarness h;

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  private static Policy policy() {
    return Policy.base().with("signals.operationId", "[{header: idempotency-key}]");
  }

  private static HttpRequest withKey(String key, int maxTokens) {
    return chat(chatBody(maxTokens, false)).header("idempotency-key", key).build();
  }

  @Test
  void duplicateInFlight_gets409_bodySaysTheFirstStillRuns_thenFreeAfterItsEnd() throws Exception {
    h = SluiceEnvoyHarness.start(policy());
    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    CompletableFuture<HttpResult> first = h.sendAsync(withKey("op-1", 10));
    h.awaitUpstreamRequests(1);

    HttpResult dup = h.send(withKey("op-1", 10));

    RejectE2eTest.assertRejected(dup, 409, "duplicate_operation", "request");
    assertThat(JSON.readTree(dup.body()).path("error").path("message").asText())
        .contains("first attempt started")
        .contains("still running");
    CompletableFuture<HttpResult> other = h.sendAsync(withKey("op-2", 10)); // unaffected
    h.awaitUpstreamRequests(2);
    h.upstream.releaseHeld();
    assertThat(SluiceEnvoyHarness.result(first).status()).isEqualTo(200);
    assertThat(SluiceEnvoyHarness.result(other).status()).isEqualTo(200);
    h.awaitNothingInFlight();
    h.upstream.mode(ControlledUpstream.Mode.SIMULATED);
    assertThat(h.send(withKey("op-1", 10)).status()).isEqualTo(200); // its claim was given back
    assertThat(h.counter("sluice.duplicate.operations", "action", "refused")).isEqualTo(1);
    assertThat(h.counter("sluice.attempts", "kind", "retry")).isEqualTo(2);
    assertThat(h.counter("sluice.attempts", "kind", "original")).isEqualTo(2);
  }

  @Test
  void retryStorm_gets429RetryBudget_originalsStillAdmitted() throws Exception {
    h =
        SluiceEnvoyHarness.start(
            policy().with("retries.budget", "{maxTokens: 4, tokenRatio: 0.5}"));
    int admitted = 0;
    HttpResult refused = null;
    for (int i = 0; i < 6; i++) {
      HttpResult r =
          h.send(chat(chatBody(10, false)).header("x-stainless-retry-count", "2").build());
      if (r.status() == 200) {
        admitted++;
      } else {
        refused = r;
      }
    }
    assertThat(admitted).isEqualTo(2); // 4 -> 3 -> 2: retries need more than 2
    assertThat(refused).isNotNull();
    long retryAfter = RejectE2eTest.assertRejected(refused, 429, "retry_budget", "tenant");
    assertThat(retryAfter).isPositive();
    assertThat(h.send(chat(chatBody(10, false)).build()).status()).isEqualTo(200); // original
    assertThat(h.counter("sluice.retries", "outcome", "refused")).isEqualTo(4);
    assertThat(h.counter("sluice.retries", "outcome", "admitted")).isEqualTo(2);
    assertThat(h.counter("sluice.decisions", "decision", "reject", "reason", "retry_budget"))
        .isEqualTo(4);
    assertThat(h.upstream.received()).hasSize(3);
  }

  @Test
  void refusedOperation_earlyRetryCounted_secondAttemptAfterRetryAfter_honouredAndSucceeds()
      throws Exception {
    AtomicLong now = new AtomicLong(System.nanoTime());
    h = SluiceEnvoyHarness.start(policy(), now::get);
    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    HttpRequest big = chat(chatBody(400, false)).build();
    CompletableFuture<HttpResult> a = h.sendAsync(big);
    CompletableFuture<HttpResult> b = h.sendAsync(big);
    h.awaitUpstreamRequests(2);

    HttpResult refused = h.send(withKey("op-h", 400));
    long retryAfter = RejectE2eTest.assertRejected(refused, 503, "pool_saturated", "pool");
    HttpResult early = h.send(withKey("op-h", 400)); // at once: early, refused by the pool again
    assertThat(early.status()).isEqualTo(503);
    assertThat(h.counter("sluice.retry.behaviour", "behaviour", "early")).isEqualTo(1);

    h.upstream.releaseHeld();
    SluiceEnvoyHarness.result(a);
    SluiceEnvoyHarness.result(b);
    h.awaitNothingInFlight();
    h.upstream.mode(ControlledUpstream.Mode.SIMULATED);
    // the early attempt's refusal was remembered too: wait out its Retry-After (the fake clock)
    now.addAndGet(retryAfter * 1_000_000_000L + 1);
    now.addAndGet(Long.parseLong(early.header("retry-after").orElse("0")) * 1_000_000_000L);
    HttpResult honoured = h.send(withKey("op-h", 400));
    assertThat(honoured.status()).isEqualTo(200);
    assertThat(h.counter("sluice.retry.behaviour", "behaviour", "honoured")).isEqualTo(1);
    assertThat(h.counter("sluice.retry.after.success")).isEqualTo(1);
    assertThat(h.counter("sluice.attempts", "kind", "retry", "reason", "pool_saturated"))
        .isEqualTo(2);
  }
}
