package io.sluice.upstream;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The upstream's peak and mean concurrency: exact, over every start and end of a generation. */
class SimulatedLlmUpstreamConcurrencyTest {

  static UpstreamRequest chat(int maxTokens) {
    byte[] body =
        ("{\"model\":\"m\",\"stream\":true,\"max_tokens\":" + maxTokens + "}")
            .getBytes(StandardCharsets.UTF_8);
    return new UpstreamRequest(
        HttpHeaders.of(":method", "POST", ":path", "/v1/chat/completions"), body);
  }

  /** Subscribes to the stream and completes when it ends. */
  static CompletableFuture<Void> consume(UpstreamResponse r) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    r.body()
        .subscribe(
            (data, eos) -> {
              if (eos) {
                done.complete(null);
              }
            });
    return done;
  }

  @Test
  void peakAndMean_countEveryGeneration_resetStartsAgain() throws Exception {
    SimulatedLlmUpstream.Settings s =
        new SimulatedLlmUpstream.Settings(8, Duration.ZERO, Duration.ofMillis(5), 16, 4096, 4);
    try (SimulatedLlmUpstream up = SimulatedLlmUpstream.create(s)) {
      assertThat(up.peakActive()).isZero();
      assertThat(up.meanActive()).isZero();
      List<CompletableFuture<Void>> all = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        all.add(consume(up.send(chat(20)).get(5, TimeUnit.SECONDS)));
      }
      assertThat(up.active()).isEqualTo(5);
      assertThat(up.peakActive()).isEqualTo(5);
      CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
      assertThat(up.active()).isZero();
      assertThat(up.peakActive()).isEqualTo(5);
      double mean = up.meanActive();
      assertThat(mean).isGreaterThan(0).isLessThanOrEqualTo(5);
      up.resetConcurrency();
      assertThat(up.peakActive()).isZero();
      Thread.sleep(20);
      assertThat(up.meanActive()).isZero();
    }
  }

  @Test
  void concurrencyCeiling_answersTheStatusWithRetryAfter_whileNAreRunning() throws Exception {
    SimulatedLlmUpstream.Settings s =
        new SimulatedLlmUpstream.Settings(8, Duration.ZERO, Duration.ofMillis(20), 16, 4096, 4);
    try (SimulatedLlmUpstream up = SimulatedLlmUpstream.create(s)) {
      up.concurrencyCeiling(2, 429, Duration.ofMillis(1500));
      List<CompletableFuture<Void>> running = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        UpstreamResponse r = up.send(chat(20)).get(5, TimeUnit.SECONDS);
        assertThat(r.status()).isEqualTo(200);
        running.add(consume(r));
      }
      UpstreamResponse third = up.send(chat(20)).get(5, TimeUnit.SECONDS);
      assertThat(third.status()).isEqualTo(429);
      assertThat(third.headers().first("retry-after")).contains("2"); // whole seconds, rounded up
      assertThat(up.throttledAnswers()).isEqualTo(1);
      assertThat(up.peakActive()).isEqualTo(2);
      CompletableFuture.allOf(running.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
      UpstreamResponse after = up.send(chat(1)).get(5, TimeUnit.SECONDS);
      assertThat(after.status()).isEqualTo(200); // below the ceiling again
      consume(after).get(5, TimeUnit.SECONDS);
      up.concurrencyCeiling(0, 429, Duration.ZERO); // removed
      for (int i = 0; i < 3; i++) {
        running.add(consume(up.send(chat(1)).get(5, TimeUnit.SECONDS)));
      }
      assertThat(up.throttledAnswers()).isEqualTo(1);
    }
  }
}
