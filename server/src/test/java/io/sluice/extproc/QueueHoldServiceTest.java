package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.sluice.core.time.FakeTicker;
import io.sluice.core.time.Ticker;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Queue-hold through the real gRPC adapter: override first, the real answer later. */
class QueueHoldServiceTest extends ExtProcServerTestBase {
  private static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      # the reserve is the client's cap (the old rule): these tests size requests by it
      estimation: {learnedReserve: {enabled: false}}
      pools:
        gpu: {capacity: 1000, maxMessageTimeout: 3s, holdMargin: 200ms, defaultServiceTime: 1s,
              retryAfter: {min: 1s, max: 30s, jitter: 0.0}}
      classes:
        interactive: {rank: 0, reservedShare: 1.0, maxQueueWait: 1s, deadline: 30s, queue: {tenantShare: 1.0},
                      defaultOutputTokens: 100, maxOutputTokens: 1000}
      signals:
        tenant: [{metadata: x-sluice-tenant}]
        maxMessageTimeoutMs: [{metadata: x-sluice-max-message-timeout-ms}]
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      """;

  /** Queue ages and expiries run on this ticker (the expiry timer reads it when it fires). */
  private final FakeTicker ticker = new FakeTicker();

  @Override
  protected String policy() {
    return CONFIG;
  }

  @Override
  protected Ticker ticker() {
    return ticker;
  }

  private static String chatBody(int maxTokens) {
    return "{\"model\":\"llama\",\"max_tokens\":"
        + maxTokens
        + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
  }

  /** Occupies the whole pool and returns the stream holding the permit. */
  private ExtProcTestClient.Call fill(Map<String, String> md) throws Exception {
    ExtProcTestClient.Call c = client.open(md);
    c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(c.send(body(chatBody(990))).hasRequestBody()).isTrue();
    return c;
  }

  @Test
  void poolFull_bodyMessageHeldWithOneOverride_thenContinueWhenCapacityFrees() throws Exception {
    ExtProcTestClient.Call first = fill(Map.of());
    ExtProcTestClient.Call second = client.open(Map.of("x-sluice-tenant", "b"));
    second.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ProcessingResponse hold = second.send(body(chatBody(500)));
    assertThat(hold.hasOverrideMessageTimeout()).as(hold.toString()).isTrue();
    assertThat(hold.getResponseCase()).isEqualTo(ProcessingResponse.ResponseCase.RESPONSE_NOT_SET);
    assertThat(hold.hasDynamicMetadata()).isFalse();
    long holdMs =
        hold.getOverrideMessageTimeout().getSeconds() * 1000
            + hold.getOverrideMessageTimeout().getNanos() / 1_000_000;
    assertThat(holdMs).isBetween(1L, 3000L);
    assertThat(second.responses.poll(200, TimeUnit.MILLISECONDS))
        .isNull(); // still held, nothing more

    first.send(responseHeaders(200, "application/json", false));
    first.send(responseBody("{\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5}}", true));
    ProcessingResponse cont = second.responses.poll(5, TimeUnit.SECONDS);
    assertThat(cont).isNotNull();
    assertThat(cont.hasRequestBody()).isTrue();
    assertThat(cont.hasOverrideMessageTimeout()).isFalse();
    assertThat(server.registry().find("sluice.extproc.overrides").counter().count()).isEqualTo(1.0);
    first.reset();
    second.reset();
  }

  /**
   * In the server's own (fake) time: at the last millisecond of the hold the override gave Envoy,
   * the held request has been answered 503 queue_timeout, so Envoy's hold never fires first. The
   * answer comes from the queue's expiry (the timer's, or the next decision's, both reading the
   * fake ticker), so no wall-clock time decides the outcome.
   */
  @Test
  void heldTooLong_answered503QueueTimeoutWithRetryAfter_beforeTheHoldEnds() throws Exception {
    ExtProcTestClient.Call first = fill(Map.of());
    ExtProcTestClient.Call second = client.open(Map.of());
    second.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ProcessingResponse hold = second.send(body(chatBody(500)));
    assertThat(hold.hasOverrideMessageTimeout()).as(hold.toString()).isTrue();
    long holdMs =
        hold.getOverrideMessageTimeout().getSeconds() * 1000
            + hold.getOverrideMessageTimeout().getNanos() / 1_000_000;
    assertThat(holdMs).isGreaterThan(1000); // maxQueueWait 1 s plus the hold margin (200 ms)

    ticker.advance(Duration.ofMillis(holdMs - 1)); // Envoy's hold has not fired yet
    // a decision on the pool expires what is due at once (the timer would, about 1 s later)
    ExtProcTestClient.Call third = client.open(Map.of());
    third.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    third.send(body(chatBody(500)));
    ProcessingResponse r = second.responses.poll(5, TimeUnit.SECONDS);

    assertThat(r).as("answered by the end of the hold (server time)").isNotNull();
    assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(503);
    assertThat(header(r, "x-sluice-reason")).isEqualTo("queue_timeout");
    assertThat(Long.parseLong(header(r, "retry-after"))).isGreaterThanOrEqualTo(1);
    assertThat(
            server.registry().find("sluice.queue.wait").tag("outcome", "expired").timer().count())
        .isEqualTo(1);
    first.reset();
    third.reset();
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> server.runtime().controller().pool("gpu").queueDepth("interactive") == 0);
  }

  @Test
  void cancelWhileQueued_removesItem_nextRequestIsServed_nothingLeaks() throws Exception {
    ExtProcTestClient.Call first = fill(Map.of());
    ExtProcTestClient.Call queued = client.open(Map.of());
    queued.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(queued.send(body(chatBody(500))).hasOverrideMessageTimeout()).isTrue();
    assertThat(server.runtime().controller().pool("gpu").queueDepth("interactive")).isEqualTo(1);
    queued.reset(); // client gone while held
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> server.runtime().controller().pool("gpu").queueDepth("interactive") == 0);
    first.send(responseHeaders(200, "application/json", true));
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> server.runtime().controller().pool("gpu").snapshot(0).requestsInFlight() == 0);
    ExtProcTestClient.Call next = client.open(Map.of());
    next.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(next.send(body(chatBody(500))).hasRequestBody()).isTrue();
    assertThat(
            server.registry().find("sluice.queue.wait").tag("outcome", "cancelled").timer().count())
        .isEqualTo(1);
  }

  @Test
  void envoyMaxMessageTimeoutZero_neverSendsOverride_rejectsInstead() throws Exception {
    fill(Map.of());
    ExtProcTestClient.Call c = client.open(Map.of("x-sluice-max-message-timeout-ms", "0"));
    c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ProcessingResponse r = c.send(body(chatBody(500)));
    assertThat(r.hasOverrideMessageTimeout()).isFalse();
    assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(503);
    assertThat(header(r, "x-sluice-reason")).isEqualTo("pool_saturated");
  }

  @Test
  void shutdown_answersQueuedRequests503WithRetryAfter() throws Exception {
    fill(Map.of());
    ExtProcTestClient.Call c = client.open(Map.of());
    c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(c.send(body(chatBody(500))).hasOverrideMessageTimeout()).isTrue();
    Thread stopper = new Thread(() -> server.shutdown(Duration.ofMillis(300)));
    stopper.start();
    ProcessingResponse r = c.responses.poll(5, TimeUnit.SECONDS);
    assertThat(r).isNotNull();
    assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(503);
    assertThat(header(r, "x-sluice-reason")).isEqualTo("shutting_down");
    assertThat(header(r, "retry-after")).isNotNull();
    stopper.join(5000);
  }
}
