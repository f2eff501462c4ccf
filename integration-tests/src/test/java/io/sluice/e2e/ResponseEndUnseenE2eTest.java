package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.chat;
import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.admission.PoolState;
import io.sluice.emulator.EnvoyExtProcEmulator;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpResult;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.ResponseBody;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code response_body_mode: NONE} through the Envoy emulator behaving as Envoy 1.37+ does: {@code
 * protocol_config} says NONE and the ext_proc stream is closed right after the response headers are
 * answered, at a streamed answer's first token. The upstream's answers last {@value #ANSWER_MS} ms
 * after their first byte; the pool caps 8 requests. Counted from outside, at the upstream: with the
 * tail rule (the permit held for the pool's predicted service time, here its {@code
 * defaultServiceTime}: nothing is ever seen to end) the upstream never runs more than 8; with a
 * prediction of about 0 (a 1 ms {@code defaultServiceTime}: the old release at response headers) it
 * runs far more.
 */
@Timeout(60)
class ResponseEndUnseenE2eTest {
  static final long ANSWER_MS = 300;
  static final int REQUESTS = 48;

  /** 200 text/event-stream with a first chunk at once; the rest {@link #ANSWER_MS} later. */
  static final class SlowStreams implements Upstream, AutoCloseable {
    final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    final AtomicInteger running = new AtomicInteger();
    final AtomicInteger maxRunning = new AtomicInteger();
    final AtomicInteger served = new AtomicInteger();

    @Override
    public CompletableFuture<UpstreamResponse> send(UpstreamRequest request) {
      maxRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
      served.incrementAndGet();
      AtomicBoolean done = new AtomicBoolean();
      Runnable end =
          () -> {
            if (done.compareAndSet(false, true)) {
              running.decrementAndGet();
            }
          };
      ResponseBody body =
          sink -> {
            sink.onData(ControlledUpstream.FIRST_SSE_CHUNK.getBytes(StandardCharsets.UTF_8), false);
            ScheduledFuture<?> last =
                timer.schedule(
                    () -> {
                      end.run(); // the model is done when it sends its last bytes
                      sink.onData(
                          ControlledUpstream.LAST_SSE_CHUNKS.getBytes(StandardCharsets.UTF_8),
                          true);
                    },
                    ANSWER_MS,
                    TimeUnit.MILLISECONDS);
            return () -> {
              last.cancel(false);
              end.run();
            };
          };
      return CompletableFuture.completedFuture(
          new UpstreamResponse(200, HttpHeaders.of("content-type", "text/event-stream"), body));
    }

    @Override
    public void close() {
      timer.shutdownNow();
    }
  }

  /** Envoy 1.37+ with the response body not sent to Sluice. */
  static FilterConfig bodyModeNone() {
    return SluiceEnvoyHarness.recommendedFilter()
        .responseBodyMode(FilterConfig.BodyMode.NONE)
        .sendProtocolConfig(true)
        .closeStreamAfterLastResponse(true)
        .build();
  }

  record Run(
      int maxAtUpstream,
      int served,
      double unseen,
      double tailHeldSeen,
      double completed,
      int readyzStatus,
      String readyz) {}

  private static Run run(String defaultServiceTime) throws Exception {
    Policy policy =
        Policy.base()
            .with("pools.gpu.capacity", "1000000")
            .with("pools.gpu.maxRequests", "8")
            .with("pools.gpu.defaultServiceTime", defaultServiceTime);
    try (SluiceServer server = SluiceServer.start(ConfigLoader.parse(policy.yaml()));
        SlowStreams upstream = new SlowStreams();
        EnvoyExtProcEmulator envoy =
            EnvoyExtProcEmulator.connect(
                "127.0.0.1:" + server.grpcPort(), bodyModeNone(), upstream)) {
      List<CompletableFuture<HttpResult>> all = new ArrayList<>();
      double tailHeldSeen = 0;
      for (int i = 0; i < REQUESTS; i++) { // about 15 answers at once offered: twice the cap
        all.add(envoy.sendAsync(chat(chatBody(20, true)).build()));
        Thread.sleep(20);
        tailHeldSeen = Math.max(tailHeldSeen, gauge(server, "sluice.permits.tail.held"));
      }
      for (CompletableFuture<HttpResult> f : all) {
        HttpResult r = f.get(20, TimeUnit.SECONDS);
        assertThat(r.status()).isIn(200, 503);
        assertThat(r.extProcBypassed()).isFalse();
      }
      await()
          .atMost(Duration.ofSeconds(10))
          .untilAsserted(
              () -> {
                PoolState.Snapshot p =
                    server
                        .runtime()
                        .controller()
                        .pool("gpu")
                        .snapshot(server.runtime().ticker().nanos());
                assertThat(p.requestsInFlight()).isZero();
                assertThat(gauge(server, "sluice.permits.tail.held")).isZero();
              });
      assertThat(envoy.stats().snapshot())
          .containsEntry("streams_failed", 0L)
          .containsEntry("message_timeouts", 0L);
      java.net.http.HttpResponse<String> readyz =
          java.net.http.HttpClient.newHttpClient()
              .send(
                  java.net.http.HttpRequest.newBuilder(
                          java.net.URI.create("http://127.0.0.1:" + server.adminPort() + "/readyz"))
                      .build(),
                  java.net.http.HttpResponse.BodyHandlers.ofString());
      return new Run(
          upstream.maxRunning.get(),
          upstream.served.get(),
          counter(server, "sluice.response.end.unseen", "pool", "gpu", "cause", "body_mode_none"),
          tailHeldSeen,
          counter(server, "sluice.permits.released", "pool", "gpu", "outcome", "completed"),
          readyz.statusCode(),
          readyz.body());
    }
  }

  private static double gauge(SluiceServer server, String name) {
    return server.registry().find(name).tags("pool", "gpu").gauges().stream()
        .mapToDouble(Gauge::value)
        .sum();
  }

  private static double counter(SluiceServer server, String name, String... tags) {
    return server.registry().find(name).tags(tags).counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  @Test
  void theTailRuleKeepsTheUpstreamWithinMaxRequests_andWithoutItTheUpstreamRunsOver()
      throws Exception {
    Run held = run("800ms"); // more than an answer takes: the permit outlives it
    System.out.println("tail rule on: " + held.toString().replace('\n', ' '));
    assertThat(held.maxAtUpstream())
        .as("most answers at once at the upstream")
        .isLessThanOrEqualTo(8);
    assertThat(held.served()).as("requests the pool let through").isGreaterThan(8);
    assertThat(held.unseen()).isEqualTo(held.served());
    assertThat(held.completed()).isEqualTo(held.served());
    assertThat(held.tailHeldSeen()).isPositive();
    assertThat(held.readyzStatus()).as("a detail, not a failure").isEqualTo(200);
    assertThat(held.readyz()).contains("response end: not seen in pool gpu");
    // every route of the pool on NONE: no end is ever seen, the hold stays the configured guess
    assertThat(held.readyz()).contains("held on a guess, defaultServiceTime");

    Run released = run("1ms"); // a prediction of about 0: released at the response headers
    System.out.println("prediction ~0: " + released.toString().replace('\n', ' '));
    assertThat(released.maxAtUpstream())
        .as("most answers at once at the upstream with no tail held")
        .isGreaterThan(8);
  }
}
