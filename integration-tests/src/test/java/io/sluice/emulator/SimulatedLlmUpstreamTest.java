package io.sluice.emulator;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.SimulatedLlmUpstream;
import io.sluice.upstream.SimulatedLlmUpstream.Settings;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SimulatedLlmUpstreamTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private SimulatedLlmUpstream llm;

  @AfterEach
  void tearDown() {
    if (llm != null) {
      llm.close();
    }
  }

  private static UpstreamRequest chat(String json) {
    return new UpstreamRequest(
        HttpHeaders.of(":method", "POST", ":path", "/v1/chat/completions"),
        json.getBytes(StandardCharsets.UTF_8));
  }

  /** Collects a body synchronously (instant settings deliver on the scheduler thread). */
  private static List<String> collect(UpstreamResponse response) throws Exception {
    List<String> chunks = new ArrayList<>();
    CompletableFuture<Void> done = new CompletableFuture<>();
    response
        .body()
        .subscribe(
            (data, eos) -> {
              synchronized (chunks) {
                chunks.add(new String(data, StandardCharsets.UTF_8));
              }
              if (eos) {
                done.complete(null);
              }
            });
    done.get(5, TimeUnit.SECONDS);
    return chunks;
  }

  @Test
  void nonStreaming_returnsCompletionWithUsage() throws Exception {
    llm = SimulatedLlmUpstream.create(Settings.instant());
    String body = "{\"model\":\"m1\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\"}]}";

    UpstreamResponse response = llm.send(chat(body)).get(5, TimeUnit.SECONDS);

    assertThat(response.status()).isEqualTo(200);
    assertThat(response.headers().first("content-type")).contains("application/json");
    JsonNode json = JSON.readTree(String.join("", collect(response)));
    assertThat(json.path("object").asText()).isEqualTo("chat.completion");
    assertThat(json.path("model").asText()).isEqualTo("m1");
    int prompt = (body.length() + 3) / 4;
    assertThat(json.path("usage").path("prompt_tokens").asInt()).isEqualTo(prompt);
    assertThat(json.path("usage").path("completion_tokens").asInt()).isEqualTo(5);
    assertThat(json.path("usage").path("total_tokens").asInt()).isEqualTo(prompt + 5);
    assertThat(llm.active()).isZero();
    assertThat(llm.served()).isEqualTo(1);
  }

  @Test
  void streaming_sendsTokenChunksUsageChunkAndDone() throws Exception {
    llm = SimulatedLlmUpstream.create(Settings.instant());

    UpstreamResponse response =
        llm.send(chat("{\"stream\":true,\"max_tokens\":3}")).get(5, TimeUnit.SECONDS);
    List<String> chunks = collect(response);

    assertThat(response.headers().first("content-type")).contains("text/event-stream");
    assertThat(chunks).hasSize(4);
    assertThat(chunks.get(0)).startsWith("data: {").endsWith("\n\n").contains("\"tok1 \"");
    String tail = chunks.get(3);
    assertThat(tail).contains("\"finish_reason\":\"length\"").endsWith("data: [DONE]\n\n");
    String usageEvent = tail.split("\n\n")[1].substring("data: ".length());
    assertThat(JSON.readTree(usageEvent).path("usage").path("completion_tokens").asInt())
        .isEqualTo(3);
  }

  @Test
  void throttled_answers429WithRetryAfterThenRecovers() throws Exception {
    llm = SimulatedLlmUpstream.create(Settings.instant());
    llm.throttle(429, Duration.ofMillis(1500));

    UpstreamResponse limited = llm.send(chat("{}")).get(5, TimeUnit.SECONDS);
    llm.stopThrottling();
    UpstreamResponse ok = llm.send(chat("{}")).get(5, TimeUnit.SECONDS);

    assertThat(limited.status()).isEqualTo(429);
    assertThat(limited.headers().first("retry-after")).contains("2");
    assertThat(String.join("", collect(limited))).contains("rate_limit_exceeded");
    assertThat(ok.status()).isEqualTo(200);
  }

  /**
   * With a ceiling of 2 in flight, a third request is answered 429 with retry-after; once one of
   * the two ends, the next is served again; a cancelled generation frees its slot too.
   */
  @Test
  void concurrencyCeiling_refusesAboveTheLimit_untilOneEnds() throws Exception {
    VirtualScheduler clock = new VirtualScheduler();
    llm =
        new SimulatedLlmUpstream(
            new Settings(8, Duration.ZERO, Duration.ofMillis(10), 3, 100, 4), clock);
    llm.concurrencyCeiling(2, 429, Duration.ofSeconds(2));

    UpstreamResponse a = llm.send(chat("{\"stream\":true}")).get(1, TimeUnit.SECONDS);
    UpstreamResponse b = llm.send(chat("{\"stream\":true}")).get(1, TimeUnit.SECONDS);
    UpstreamResponse third = llm.send(chat("{\"stream\":true}")).get(1, TimeUnit.SECONDS);
    assertThat(a.status()).isEqualTo(200);
    assertThat(b.status()).isEqualTo(200);
    assertThat(third.status()).isEqualTo(429);
    assertThat(third.headers().first("retry-after")).contains("2");
    assertThat(llm.inFlight()).isEqualTo(2);

    a.body().subscribe((data, eos) -> {});
    clock.advance(Duration.ofMillis(100)); // a's three tokens: it ends
    assertThat(llm.inFlight()).isEqualTo(1); // b, accepted, not yet read
    assertThat(llm.send(chat("{\"stream\":true}")).get(1, TimeUnit.SECONDS).status())
        .isEqualTo(200);
    assertThat(llm.inFlight()).isEqualTo(2);
    b.body().subscribe((data, eos) -> {}).run(); // cancelled: its slot is free again
    assertThat(llm.inFlight()).isEqualTo(1);
    llm.noConcurrencyCeiling();
  }

  /**
   * On a virtual clock: first token after prefill (0 here), then 5 decode steps of 20 ms, so one
   * request alone ends at 100 ms; two requests on one slot share it, so each step takes 40 ms and
   * both end at 200 ms.
   */
  @Test
  void processorSharing_beyondBatchSlots_stretchesDecode() throws Exception {
    Settings oneSlot = new Settings(1, Duration.ZERO, Duration.ofMillis(20), 6, 100, 4);
    VirtualScheduler clock = new VirtualScheduler();
    llm = new SimulatedLlmUpstream(oneSlot, clock);

    CompletableFuture<UpstreamResponse> alone = llm.send(chat("{}"));
    clock.advance(Duration.ofMillis(99));
    assertThat(alone).isNotDone();
    clock.advance(Duration.ofMillis(1));
    assertThat(alone).isCompleted();

    CompletableFuture<UpstreamResponse> a = llm.send(chat("{}"));
    CompletableFuture<UpstreamResponse> b = llm.send(chat("{}"));
    clock.advance(Duration.ofMillis(199));
    assertThat(a).isNotDone();
    assertThat(b).isNotDone();
    clock.advance(Duration.ofMillis(1));
    assertThat(a).isCompleted();
    assertThat(b).isCompleted();
    assertThat(a.get().status()).isEqualTo(200);
    assertThat(clock.pending()).isZero();
  }

  @Test
  void serve_loopbackHttp_streamsSse() throws Exception {
    llm = SimulatedLlmUpstream.create(Settings.instant());
    int port = llm.serve(0);

    java.net.http.HttpResponse<String> response =
        HttpClient.newHttpClient()
            .send(
                java.net.http.HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                    .POST(
                        java.net.http.HttpRequest.BodyPublishers.ofString(
                            "{\"stream\":true,\"max_tokens\":2}"))
                    .build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("content-type")).contains("text/event-stream");
    assertThat(response.body()).contains("tok2").endsWith("data: [DONE]\n\n");
  }

  @Test
  void emulator_withSimulatedUpstream_streamsThroughExtProc() throws Exception {
    llm = SimulatedLlmUpstream.create(Settings.instant());
    try (ScriptedExtProcServer server =
            new ScriptedExtProcServer(ScriptedExtProcServer::continueEverything);
        EnvoyExtProcEmulator envoy =
            EnvoyExtProcEmulator.connect(
                server.target(),
                FilterConfig.builder()
                    .messageTimeout(Duration.ofSeconds(2))
                    .responseBodyMode(FilterConfig.BodyMode.STREAMED)
                    .build(),
                llm)) {
      HttpResult result =
          envoy.send(
              HttpRequest.post("/v1/chat/completions", "{\"stream\":true,\"max_tokens\":4}")
                  .build());

      assertThat(result.status()).isEqualTo(200);
      assertThat(result.bodyUtf8()).contains("tok4").endsWith("data: [DONE]\n\n");
      assertThat(result.timeToFirstByte()).isPresent();
    }
  }
}
