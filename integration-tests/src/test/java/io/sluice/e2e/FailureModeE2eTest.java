package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chat;
import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpResult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Envoy's failure matrix with Sluice as the processor. The "Sluice never ends a stream OK before
 * answering" half is checked after every test of this package by {@link
 * SluiceEnvoyHarness#close()}; here it is also checked explicitly for a mix of exchanges.
 */
@Timeout(20)
class FailureModeE2eTest {
  private SluiceEnvoyHarness h;

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  @Test
  void sluiceStopped_failClosed_clientGets500AndUpstreamUntouched() {
    h = SluiceEnvoyHarness.start(Policy.base());
    h.stopSluice();

    HttpResult r = h.send(chat(chatBody(10, false)).build());

    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.LOCAL_REPLY);
    assertThat(r.status()).isEqualTo(500);
    assertThat(r.responseCodeDetails()).startsWith("ext_proc_error_gRPC_error_14");
    assertThat(r.upstreamRequest()).isEmpty();
    assertThat(r.extProcBypassed()).isFalse();
    assertThat(h.stats().streamsFailed()).isEqualTo(1);
    assertThat(h.stats().failureModeAllowed()).isZero();
    assertThat(h.upstream.received()).isEmpty();
  }

  @Test
  void sluiceStopped_failOpen_requestContinuesUnprocessed() {
    FilterConfig filter = SluiceEnvoyHarness.recommendedFilter().failureModeAllow(true).build();
    h = SluiceEnvoyHarness.start(Policy.base(), filter);
    h.stopSluice();

    HttpResult r = h.send(chat(chatBody(10, true)).build());

    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.UPSTREAM_RESPONSE);
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.extProcBypassed()).isTrue();
    assertThat(r.upstreamRequest().orElseThrow().headers().contains("x-sluice-decision"))
        .as("not admitted by Sluice")
        .isFalse();
    assertThat(r.dynamicMetadata().getFieldsMap()).doesNotContainKey("sluice");
    assertThat(h.stats().streamsFailed()).isEqualTo(1);
    assertThat(h.stats().failureModeAllowed()).isEqualTo(1);
  }

  /**
   * Sluice draining (shutting down with a stream still open): a new request's stream is refused
   * non-OK, so a fail-closed route answers 500 and the upstream never sees it (a stream ended OK
   * would let it through unadmitted); the open one runs to its end.
   */
  @Test
  void sluiceDraining_failClosed_newRequest500_openStreamFinishes() throws Exception {
    h = SluiceEnvoyHarness.start(Policy.base());
    h.upstream.mode(ControlledUpstream.Mode.HOLD_STREAM);
    var running = h.sendAsync(chat(chatBody(20, true)).build());
    h.awaitUpstreamRequests(1);
    var stopped = h.shutdownSluice(java.time.Duration.ofSeconds(30));
    org.awaitility.Awaitility.await()
        .atMost(java.time.Duration.ofSeconds(5))
        .until(h.server::draining);

    HttpResult r = h.send(chat(chatBody(10, false)).build());

    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.LOCAL_REPLY);
    assertThat(r.status()).isEqualTo(500);
    assertThat(r.responseCodeDetails()).startsWith("ext_proc_error_gRPC_error_14");
    assertThat(r.extProcBypassed()).isFalse();
    assertThat(h.upstream.received()).as("only the stream opened before the drain").hasSize(1);
    h.upstream.finishStreams();
    HttpResult first = SluiceEnvoyHarness.result(running);
    assertThat(first.status()).isEqualTo(200);
    assertThat(first.bodyUtf8()).contains("[DONE]");
    stopped.get(20, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(h.released("completed")).isEqualTo(1);
  }

  @Test
  void sluiceUp_admitsRejectsAndCancels_neverEndsAStreamBeforeAnswering() {
    FilterConfig filter = SluiceEnvoyHarness.recommendedFilter().failureModeAllow(true).build();
    // fail-open makes an early OK close or error visible as a bypass instead of a 500
    h =
        SluiceEnvoyHarness.start(
            Policy.base().with("limits.maxBodyBytes", "2KiB").with("pools.gpu.capacity", "450"),
            filter);

    HttpResult admittedSse = h.send(chat(chatBody(20, true)).build());
    HttpResult admittedJson = h.send(chat(chatBody(20, false)).build());
    HttpResult notJson = h.send(chat("not json at all").build());
    HttpResult tooLarge = h.send(chat("x".repeat(3000)).build());
    h.upstream.mode(ControlledUpstream.Mode.HOLD_STREAM);
    var held =
        h.sendAsync(
            chat(chatBody(20, true)).cancelAfter(java.time.Duration.ofMillis(1000)).build());
    h.awaitUpstreamRequests(4); // the three admitted above, then this one, holding its permit
    // a request larger than interactive can ever hold (450 less batch's 45) would run alone;
    // beside the held one it does not fit
    HttpResult saturated = h.send(chat(chatBody(400, false)).build());
    HttpResult cancelled = SluiceEnvoyHarness.result(held);

    assertThat(admittedSse.status()).isEqualTo(200);
    assertThat(admittedJson.status()).isEqualTo(200);
    assertThat(notJson.upstreamRequest()).isPresent();
    assertThat(tooLarge.status()).isEqualTo(413);
    assertThat(saturated.status()).isEqualTo(503);
    assertThat(cancelled.outcome()).isEqualTo(HttpResult.Outcome.CLIENT_CANCELLED);
    h.assertExtProcNeverBypassed();
    assertThat(h.stats().streamsStarted()).isEqualTo(6);
    assertThat(h.stats().immediateResponsesSent()).isEqualTo(2);
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).isEqualTo(4);
  }

  @Test
  void sluiceStoppedMidStream_failClosed_downstreamResetAndPermitReleasedAsShutdown() {
    h = SluiceEnvoyHarness.start(Policy.base());
    h.upstream.mode(ControlledUpstream.Mode.HOLD_STREAM);
    var pending = h.sendAsync(chat(chatBody(20, true)).build());
    h.awaitUpstreamRequests(1);
    org.awaitility.Awaitility.await()
        .atMost(java.time.Duration.ofSeconds(5))
        .until(() -> h.pool().requestsInFlight() == 1 && h.stats().streamMsgsReceived() >= 4);

    h.stopSluice();
    HttpResult r = SluiceEnvoyHarness.result(pending);

    // the response headers were already downstream: Envoy can only reset the client's stream
    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.DOWNSTREAM_RESET);
    assertThat(r.status()).isEqualTo(200);
    assertThat(h.stats().streamsFailed()).isEqualTo(1);
    assertThat(h.pool().requestsInFlight()).isZero();
    assertThat(h.released("shutdown")).isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);
  }

  @Test
  void sluiceStoppedMidStream_failOpen_responseCompletesUnprocessed_permitReleasedAsShutdown() {
    FilterConfig filter = SluiceEnvoyHarness.recommendedFilter().failureModeAllow(true).build();
    h = SluiceEnvoyHarness.start(Policy.base(), filter);
    h.upstream.mode(ControlledUpstream.Mode.HOLD_STREAM);
    var pending = h.sendAsync(chat(chatBody(20, true)).build());
    h.awaitUpstreamRequests(1);
    org.awaitility.Awaitility.await()
        .atMost(java.time.Duration.ofSeconds(5))
        .until(() -> h.pool().requestsInFlight() == 1 && h.stats().streamMsgsReceived() >= 4);

    h.stopSluice();
    h.upstream.finishStreams();
    HttpResult r = SluiceEnvoyHarness.result(pending);

    // fail-open: the rest of the answer reaches the client without Sluice; Sluice gave its
    // permit back when it stopped (it never sees this request's end)
    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.UPSTREAM_RESPONSE);
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.bodyUtf8()).contains("[DONE]");
    assertThat(h.stats().streamsFailed()).isEqualTo(1);
    assertThat(h.stats().failureModeAllowed()).isEqualTo(1);
    assertThat(h.pool().requestsInFlight()).isZero();
    assertThat(h.released("shutdown")).isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);
  }
}
