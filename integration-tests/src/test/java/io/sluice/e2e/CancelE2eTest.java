package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chat;
import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The client goes away: the permit comes back exactly once and nothing leaks. */
@Timeout(20)
class CancelE2eTest {
  private SluiceEnvoyHarness h;

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  @Test
  void clientDisconnectMidStream_permitReleasedOnceAsCancelled() {
    h = SluiceEnvoyHarness.start(Policy.base());
    h.upstream.mode(ControlledUpstream.Mode.HOLD_STREAM);

    // the first SSE chunk is through within milliseconds; the rest never comes before the cancel
    HttpResult r = h.send(chat(chatBody(20, true)).cancelAfter(Duration.ofMillis(1500)).build());

    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.CLIENT_CANCELLED);
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.bodyUtf8())
        .as("the client was cancelled in the middle of the stream")
        .isEqualTo(ControlledUpstream.FIRST_SSE_CHUNK);
    h.awaitNothingInFlight();
    assertThat(h.released("cancelled")).isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);
    assertThat(h.upstream.cancelledStreams()).isEqualTo(1);
    // no usage reached Sluice, so no actual-vs-estimate sample
    assertThat(h.summaryCount("sluice.tokens.actual_to_estimate")).isZero();

    // a late end of the upstream stream changes nothing
    h.upstream.finishStreams();
    assertThat(h.releasedAny()).isEqualTo(1);
  }

  @Test
  void clientDisconnectBeforeResponse_permitReleasedOnceAsCancelled() {
    h = SluiceEnvoyHarness.start(Policy.base());
    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);

    HttpResult r =
        h.send(
            chat(chatBody(20, false)).cancelAfter(HttpRequest.Phase.UPSTREAM_REQUEST_SENT).build());

    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.CLIENT_CANCELLED);
    assertThat(r.upstreamRequest()).isPresent();
    h.awaitNothingInFlight();
    assertThat(h.released("cancelled")).isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);

    h.upstream.releaseHeld(); // the upstream answers after the client left
    assertThat(h.releasedAny()).isEqualTo(1);
    assertThat(h.pool().requestsInFlight()).isZero();
  }

  @Test
  void clientDisconnectBeforeDecision_noPermitTaken_nothingLeaks() {
    h = SluiceEnvoyHarness.start(Policy.base());

    HttpResult r =
        h.send(
            chat(chatBody(20, false)).cancelAfter(HttpRequest.Phase.REQUEST_HEADERS_SENT).build());

    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.CLIENT_CANCELLED);
    assertThat(r.upstreamRequest()).isEmpty();
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).isZero();
    assertThat(h.counter("sluice.decisions")).isZero();
  }

  @Test
  void clientDisconnectRightAfterBody_atMostOnePermitReleased_nothingLeaks() {
    h = SluiceEnvoyHarness.start(Policy.base());

    HttpResult r =
        h.send(chat(chatBody(20, false)).cancelAfter(HttpRequest.Phase.REQUEST_BODY_SENT).build());

    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.CLIENT_CANCELLED);
    h.awaitNothingInFlight();
    // the body may or may not have been decided before the reset arrived
    assertThat(h.releasedAny()).isLessThanOrEqualTo(1);
    assertThat(h.released("completed")).isZero();
  }

  @Test
  void manyRequestsCancelledAtRandomPoints_everyPermitReleasedExactlyOnce() {
    h = SluiceEnvoyHarness.start(Policy.base().with("pools.gpu.capacity", "1000000"));
    h.upstream.mode(ControlledUpstream.Mode.HOLD_STREAM);
    HttpRequest.Phase[] phases = HttpRequest.Phase.values();
    List<CompletableFuture<HttpResult>> all = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      HttpRequest.Builder b = chat(chatBody(20, true));
      if (i % 8 < phases.length) {
        b.cancelAfter(phases[i % 8]);
      } else {
        b.cancelAfter(Duration.ofMillis(300 + i * 10L));
      }
      all.add(h.sendAsync(b.build()));
    }
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> all.stream().allMatch(CompletableFuture::isDone));

    h.awaitNothingInFlight();
    long cancelled =
        all.stream().filter(f -> f.join().outcome() == HttpResult.Outcome.CLIENT_CANCELLED).count();
    assertThat(cancelled).isEqualTo(40);
    // every admitted request released its permit exactly once, and all of them as cancelled
    assertThat(h.released("completed")).isZero();
    assertThat(h.releasedAny()).isEqualTo(h.released("cancelled"));
    assertThat(h.releasedAny())
        .isLessThanOrEqualTo(40)
        .isGreaterThanOrEqualTo(h.upstream.received().size());
  }

  @Test
  void clientDisconnectMidStream_withoutProtocolConfig_permitReleasedAsCancelled() {
    // Envoy before 1.34 sends no protocol_config, so Sluice cannot know the response body mode
    h =
        SluiceEnvoyHarness.start(
            Policy.base(),
            SluiceEnvoyHarness.recommendedFilter().sendProtocolConfig(false).build());
    h.upstream.mode(ControlledUpstream.Mode.HOLD_STREAM);

    HttpResult r = h.send(chat(chatBody(20, true)).cancelAfter(Duration.ofMillis(1000)).build());

    assertThat(r.bodyUtf8()).isEqualTo(ControlledUpstream.FIRST_SSE_CHUNK);
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).isEqualTo(1);
    assertThat(h.released("cancelled")).isEqualTo(1);
  }
}
