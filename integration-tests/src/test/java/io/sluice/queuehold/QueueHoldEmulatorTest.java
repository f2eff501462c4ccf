package io.sluice.queuehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.emulator.EnvoyExtProcEmulator;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.upstream.SimulatedLlmUpstream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Queue-hold through the Envoy emulator (which enforces message_timeout and the
 * override_message_timeout rules of Envoy): a held request is answered before Envoy's timer fires,
 * never with two overrides for one message, and never by a 504.
 */
class QueueHoldEmulatorTest {
  private static final String POLICY =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      estimation: {learnedReserve: {enabled: false}} # requests sized by their max_tokens
      pools:
        gpu: {capacity: 1000, maxMessageTimeout: 3s, holdMargin: 150ms, defaultServiceTime: 1s,
              retryAfter: {min: 1s, max: 30s}}
      classes:
        interactive: {rank: 0, reservedShare: 1.0, maxQueueWait: %s, deadline: 30s,
                      defaultOutputTokens: 10, maxOutputTokens: 4000, queue: {tenantShare: 1.0}}
      signals:
        tenant: [{metadata: x-sluice-tenant}]
        maxMessageTimeoutMs: [{metadata: x-sluice-max-message-timeout-ms}]
        deadlineMs: [{header: x-sluice-timeout-ms}]
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      """;

  private SluiceServer sluice;
  private SimulatedLlmUpstream llm;
  private EnvoyExtProcEmulator envoy;

  private void start(String maxQueueWait, Duration envoyMaxMessageTimeout) throws Exception {
    sluice = SluiceServer.start(ConfigLoader.parse(POLICY.formatted(maxQueueWait)));
    // 1 ms per output token: a request with max_tokens N holds its permit for about N ms
    llm =
        SimulatedLlmUpstream.create(
            new SimulatedLlmUpstream.Settings(
                64, Duration.ZERO, Duration.ofMillis(1), 10, 4000, 4));
    FilterConfig filter =
        FilterConfig.builder()
            .requestBodyMode(FilterConfig.BodyMode.BUFFERED)
            .responseBodyMode(FilterConfig.BodyMode.STREAMED)
            .messageTimeout(Duration.ofMillis(400))
            .maxMessageTimeout(envoyMaxMessageTimeout)
            .receivingNamespaces("sluice")
            .build();
    // warm up on a throw-away emulator (a cold JVM's first streams can outlast message_timeout)
    try (EnvoyExtProcEmulator warm =
        EnvoyExtProcEmulator.connect(
            "127.0.0.1:" + sluice.grpcPort(),
            filter.toBuilder().messageTimeout(Duration.ofSeconds(5)).build(),
            llm)) {
      for (int i = 0; i < 5; i++) {
        warm.send(chat(1).routeGrpcInitialMetadata("x-sluice-tenant", "warmup").build());
      }
    }
    envoy = EnvoyExtProcEmulator.connect("127.0.0.1:" + sluice.grpcPort(), filter, llm);
  }

  @BeforeEach
  void none() {}

  @AfterEach
  void stop() throws Exception {
    if (envoy != null) {
      envoy.close();
    }
    if (llm != null) {
      llm.close();
    }
    if (sluice != null) {
      sluice.close();
    }
  }

  private static HttpRequest.Builder chat(int maxTokens) {
    return HttpRequest.post(
        "/v1/chat/completions",
        "{\"model\":\"llama-3\",\"max_tokens\":"
            + maxTokens
            + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
  }

  private long inFlight() {
    return sluice.runtime().controller().pool("gpu").snapshot(0).requestsInFlight();
  }

  @Test
  void heldRequest_answeredBeforeEnvoyTimerFires_withOneOverridePerMessage() throws Exception {
    start("2s", Duration.ofSeconds(3));
    List<CompletableFuture<HttpResult>> all = new ArrayList<>();
    for (int i = 0; i < 4; i++) { // each ~600 work units: one runs, three wait in turn
      all.add(
          envoy.sendAsync(chat(600).routeGrpcInitialMetadata("x-sluice-tenant", "t" + i).build()));
    }
    for (CompletableFuture<HttpResult> f : all) {
      HttpResult r = f.get(20, TimeUnit.SECONDS);
      assertThat(r.status()).as(r.responseCodeDetails()).isIn(200, 503);
      assertThat(r.responseCodeDetails()).doesNotContain("per-message_timeout");
    }
    long ok = all.stream().filter(f -> f.join().status() == 200).count();
    assertThat(ok).isGreaterThanOrEqualTo(3); // the waiting ones were admitted in turn
    assertThat(envoy.stats().messageTimeouts()).isZero();
    assertThat(envoy.stats().overrideMessageTimeoutReceived()).isGreaterThanOrEqualTo(1);
    assertThat(envoy.stats().overrideMessageTimeoutIgnored()).isZero(); // never two per message
    await().atMost(Duration.ofSeconds(5)).until(() -> inFlight() == 0);
  }

  @Test
  void waitedTooLong_503QueueTimeoutWithRetryAfter_notA504() throws Exception {
    // the predictor (1 s per pool of work before any measurement) expects ~0.4 s: it queues;
    // the running request actually takes ~0.9 s, so the wait runs out first
    start("600ms", Duration.ofSeconds(3));
    CompletableFuture<HttpResult> longOne =
        envoy.sendAsync(chat(900).routeGrpcInitialMetadata("x-sluice-tenant", "a").build());
    await().atMost(Duration.ofSeconds(5)).until(() -> inFlight() == 1);
    HttpResult r = envoy.send(chat(500).routeGrpcInitialMetadata("x-sluice-tenant", "b").build());
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.header("x-sluice-reason")).contains("queue_timeout");
    assertThat(Long.parseLong(r.header("retry-after").orElseThrow())).isGreaterThanOrEqualTo(1);
    assertThat(envoy.stats().messageTimeouts()).isZero();
    assertThat(longOne.get(20, TimeUnit.SECONDS).status()).isEqualTo(200);
  }

  @Test
  void deadlineCannotBeMet_503DeadlineUnreachableWithRetryAfter_atOnce() throws Exception {
    start("2s", Duration.ofSeconds(3));
    CompletableFuture<HttpResult> longOne =
        envoy.sendAsync(chat(900).routeGrpcInitialMetadata("x-sluice-tenant", "a").build());
    await().atMost(Duration.ofSeconds(5)).until(() -> inFlight() == 1);
    HttpResult r =
        envoy.send(
            chat(500)
                .header("x-sluice-timeout-ms", "100")
                .routeGrpcInitialMetadata("x-sluice-tenant", "b")
                .build());
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.header("x-sluice-reason")).contains("deadline_unreachable");
    assertThat(r.header("retry-after")).isPresent();
    assertThat(envoy.stats().overrideMessageTimeoutReceived()).isZero(); // refused, never held
    longOne.get(20, TimeUnit.SECONDS);
  }

  @Test
  void clientGoneWhileQueued_itemRemoved_nextRequestServed_nothingLeaks() throws Exception {
    start("2s", Duration.ofSeconds(3));
    CompletableFuture<HttpResult> longOne =
        envoy.sendAsync(chat(700).routeGrpcInitialMetadata("x-sluice-tenant", "a").build());
    await().atMost(Duration.ofSeconds(5)).until(() -> inFlight() == 1);
    HttpResult gone =
        envoy.send(
            chat(600)
                .cancelAfter(Duration.ofMillis(100))
                .routeGrpcInitialMetadata("x-sluice-tenant", "b")
                .build());
    assertThat(gone.outcome()).isEqualTo(HttpResult.Outcome.CLIENT_CANCELLED);
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> sluice.runtime().controller().pool("gpu").queueDepth("interactive") == 0);
    assertThat(longOne.get(20, TimeUnit.SECONDS).status()).isEqualTo(200);
    HttpResult next =
        envoy.send(chat(600).routeGrpcInitialMetadata("x-sluice-tenant", "c").build());
    assertThat(next.status()).isEqualTo(200);
    await().atMost(Duration.ofSeconds(5)).until(() -> inFlight() == 0);
    assertThat(sluice.runtime().controller().pool("gpu").snapshot(0).workInFlight()).isZero();
  }

  @Test
  void envoyMaxMessageTimeoutZero_noOverrideEverSent_refusedWithRetryAfter() throws Exception {
    start("2s", Duration.ZERO);
    CompletableFuture<HttpResult> longOne =
        envoy.sendAsync(
            chat(700)
                .routeGrpcInitialMetadata("x-sluice-tenant", "a")
                .routeGrpcInitialMetadata("x-sluice-max-message-timeout-ms", "0")
                .build());
    await().atMost(Duration.ofSeconds(5)).until(() -> inFlight() == 1);
    HttpResult r =
        envoy.send(
            chat(600)
                .routeGrpcInitialMetadata("x-sluice-tenant", "b")
                .routeGrpcInitialMetadata("x-sluice-max-message-timeout-ms", "0")
                .build());
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.header("x-sluice-reason")).contains("pool_saturated");
    assertThat(r.header("retry-after")).isPresent();
    assertThat(envoy.stats().overrideMessageTimeoutReceived()).isZero();
    assertThat(envoy.stats().overrideMessageTimeoutIgnored()).isZero();
    longOne.get(20, TimeUnit.SECONDS);
  }
}
