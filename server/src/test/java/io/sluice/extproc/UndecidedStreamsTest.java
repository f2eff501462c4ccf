package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 13 finding 7 (the adapter's part): a stream that ends before its request was decided —
 * Envoy's message_timeout cancel, a client cancel, a half-close — is counted by the phase it was in
 * ({@code sluice_extproc_streams_undecided_total{phase, end}}) and logged once (rate-limited); a
 * decided stream is not.
 */
class UndecidedStreamsTest extends ExtProcServerTestBase {
  private static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      pools:
        gpu: {capacity: 100000, maxRequests: 1, maxMessageTimeout: 5s, holdMargin: 200ms,
              defaultServiceTime: 1s, retryAfter: {min: 1s, max: 30s, jitter: 0.0}}
      classes:
        interactive: {rank: 0, reservedShare: 1.0, maxQueueWait: 3s, deadline: 30s,
                      queue: {tenantShare: 1.0}, defaultOutputTokens: 10, maxOutputTokens: 100}
      signals:
        tenant: [{metadata: x-sluice-tenant}]
        maxMessageTimeoutMs: [{metadata: x-sluice-max-message-timeout-ms}]
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      """;

  @Override
  protected String policy() {
    return CONFIG;
  }

  private double undecided(String phase, String end) {
    Counter c =
        server
            .registry()
            .find("sluice.extproc.streams.undecided")
            .tag("phase", phase)
            .tag("end", end)
            .counter();
    return c == null ? 0 : c.count();
  }

  private double undecidedTotal() {
    return server.registry().find("sluice.extproc.streams.undecided").counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  @Test
  void cancelWhileWaitingForTheBody_countedRequestBodyCancelled_andLoggedOnce() throws Exception {
    long warned = StreamWarnings.attempts();
    ExtProcTestClient.Call c = client.open(Map.of());
    c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    c.reset(); // e.g. Envoy's message_timeout on the body, or the client went away
    await().atMost(Duration.ofSeconds(5)).until(() -> undecided("request_body", "cancelled") == 1);
    assertThat(undecidedTotal()).isEqualTo(1);
    assertThat(StreamWarnings.attempts() - warned).isEqualTo(1);
  }

  @Test
  void cancelWhileQueued_countedQueuedCancelled() throws Exception {
    ExtProcTestClient.Call holder = client.open(Map.of());
    holder.send(headers(chat(), true, BodySendMode.NONE, BodySendMode.NONE));
    ExtProcTestClient.Call queued = client.open(Map.of());
    ProcessingResponse hold =
        queued.send(headers(chat(), true, BodySendMode.NONE, BodySendMode.NONE));
    assertThat(hold.hasOverrideMessageTimeout()).isTrue();
    queued.reset(); // what Envoy does when its (overridden) message timeout fires first
    await().atMost(Duration.ofSeconds(5)).until(() -> undecided("queued", "cancelled") == 1);
    holder.reset();
    await().atMost(Duration.ofSeconds(5)).until(() -> undecidedTotal() == 1); // holder: decided
  }

  @Test
  void halfCloseWhileQueued_endsNonOk_countedQueuedFailed() throws Exception {
    ExtProcTestClient.Call holder = client.open(Map.of());
    holder.send(headers(chat(), true, BodySendMode.NONE, BodySendMode.NONE));
    ExtProcTestClient.Call queued = client.open(Map.of());
    queued.send(headers(chat(), true, BodySendMode.NONE, BodySendMode.NONE));
    queued.halfClose();
    Status s = queued.awaitClose();
    assertThat(s.isOk()).as("never OK before the held message is answered").isFalse();
    await().atMost(Duration.ofSeconds(5)).until(() -> undecided("queued", "failed") == 1);
    holder.reset();
  }

  @Test
  void halfCloseBeforeAnyMessage_countedFirstMessageCompleted() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    c.halfClose();
    c.awaitClose();
    await().atMost(Duration.ofSeconds(5)).until(() -> undecided("first_message", "completed") == 1);
  }

  @Test
  void decidedStreams_areNotCounted() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    c.send(body("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
    c.reset();
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> server.registry().find("sluice.extproc.streams.open").gauge().value() == 0);
    assertThat(undecidedTotal()).isZero();
  }
}
