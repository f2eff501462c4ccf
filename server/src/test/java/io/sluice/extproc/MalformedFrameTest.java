package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.sluice.core.admission.PoolState;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 13 finding 1: a frame protobuf-java refuses, sent over a real Netty transport by a client
 * with its own byte[] marshaller. The stream must end INVALID_ARGUMENT through Sluice's own close
 * path: permit released once, stream deregistered, counted, and the pool never locked by them.
 */
class MalformedFrameTest extends ExtProcServerTestBase {
  private static final int MAX_REQUESTS = 3;
  private static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      pools:
        gpu: {capacity: 100000, maxRequests: %d, maxMessageTimeout: 5s, holdMargin: 200ms,
              defaultServiceTime: 1s, retryAfter: {min: 1s, max: 30s, jitter: 0.0}}
      classes:
        interactive: {rank: 0, reservedShare: 1.0, maxQueueWait: 3s, deadline: 30s,
                      queue: {tenantShare: 1.0}, defaultOutputTokens: 100, maxOutputTokens: 1000}
      signals:
        tenant: [{metadata: x-sluice-tenant}]
        maxMessageTimeoutMs: [{metadata: x-sluice-max-message-timeout-ms}]
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      """
          .formatted(MAX_REQUESTS);

  private RawExtProcClient raw;

  @Override
  protected String policy() {
    return CONFIG;
  }

  @BeforeEach
  void rawClient() {
    raw = new RawExtProcClient(server.grpcPort());
  }

  @AfterEach
  void closeRaw() throws Exception {
    raw.close();
  }

  private PoolState.Snapshot pool() {
    return server.runtime().controller().pool("gpu").snapshot(server.runtime().ticker().nanos());
  }

  private double malformedCount() {
    Counter c =
        server
            .registry()
            .find("sluice.extproc.stream.errors")
            .tag("cause", "malformed_frame")
            .counter();
    return c == null ? 0 : c.count();
  }

  private double openStreams() {
    Gauge g = server.registry().find("sluice.extproc.streams.open").gauge();
    return g.value();
  }

  private double released() {
    return server.registry().find("sluice.permits.released").counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  /** Admitted at request headers (headers-only request), holding one permit. */
  private RawExtProcClient.Call admitted() throws Exception {
    RawExtProcClient.Call c = raw.open();
    ProcessingResponse r = c.send(headers(chat(), true, BodySendMode.NONE, BodySendMode.NONE));
    assertThat(r.hasRequestHeaders()).as(r.toString()).isTrue();
    return c;
  }

  @Test
  void truncatedResponseHeadersAfterAdmission_endsInvalidArgument_andNeverLocksThePool()
      throws Exception {
    // One more bad stream than the pool's maxRequests: on the old code every permit leaked and
    // the next request got 503 pool_saturated until restart.
    long warned = StreamWarnings.attempts();
    for (int i = 0; i < MAX_REQUESTS + 1; i++) {
      RawExtProcClient.Call c = admitted();
      c.sendOnly(RawExtProcClient.truncated(responseHeaders(200, "application/json", false), 3));
      Status s = c.awaitClose();
      assertThat(s.getCode()).as(s.toString()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> pool().requestsInFlight() == 0);
    assertThat(pool().workInFlight()).isZero();
    assertThat(openStreams()).isZero();
    assertThat(malformedCount()).isEqualTo(MAX_REQUESTS + 1.0);
    assertThat(released()).isEqualTo(MAX_REQUESTS + 1.0); // exactly once each
    // one WARN line per stream (rate-limited across the process), no more
    assertThat(StreamWarnings.attempts() - warned).isEqualTo(MAX_REQUESTS + 1L);

    // Everyone else is still admitted.
    for (int i = 0; i < MAX_REQUESTS; i++) {
      RawExtProcClient.Call c = admitted();
      c.reset();
      await().atMost(Duration.ofSeconds(5)).until(() -> pool().requestsInFlight() == 0);
    }
  }

  @Test
  void garbageFirstFrame_endsInvalidArgument_streamDeregistered() throws Exception {
    RawExtProcClient.Call c = raw.open();
    c.sendOnly(new byte[] {(byte) 0x0a, (byte) 0xff, (byte) 0xff, (byte) 0xff}); // truncated
    Status s = c.awaitClose();
    assertThat(s.getCode()).as(s.toString()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    await().atMost(Duration.ofSeconds(5)).until(() -> openStreams() == 0);
    assertThat(malformedCount()).isEqualTo(1.0);
  }

  @Test
  void malformedWhileAwaitingBody_endsInvalidArgument() throws Exception {
    RawExtProcClient.Call c = raw.open();
    c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    c.sendOnly(RawExtProcClient.truncated(body("{\"messages\":[]}"), 2));
    assertThat(c.awaitClose().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    await().atMost(Duration.ofSeconds(5)).until(() -> openStreams() == 0);
    assertThat(pool().requestsInFlight()).isZero();
  }

  @Test
  void malformedWhileQueued_leavesTheQueue_andTheNextWaiterIsAdmitted() throws Exception {
    RawExtProcClient.Call[] holders = new RawExtProcClient.Call[MAX_REQUESTS];
    for (int i = 0; i < MAX_REQUESTS; i++) {
      holders[i] = admitted();
    }
    RawExtProcClient.Call queued = raw.open();
    ProcessingResponse hold =
        queued.send(headers(chat(), true, BodySendMode.NONE, BodySendMode.NONE));
    assertThat(hold.hasOverrideMessageTimeout()).as(hold.toString()).isTrue();
    queued.sendOnly(RawExtProcClient.truncated(responseHeaders(200, "text/plain", false), 1));
    assertThat(queued.awaitClose().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> server.runtime().controller().pool("gpu").queueDepth("interactive") == 0);
    assertThat(pool().requestsInFlight()).isEqualTo(MAX_REQUESTS);
    for (RawExtProcClient.Call h : holders) {
      h.reset();
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> pool().requestsInFlight() == 0);
    await().atMost(Duration.ofSeconds(5)).until(() -> openStreams() == 0);
  }

  @Test
  void gracefulShutdown_doesNotWaitItsGraceForMalformedStreams() throws Exception {
    for (int i = 0; i < 2; i++) {
      RawExtProcClient.Call c = admitted();
      c.sendOnly(RawExtProcClient.truncated(responseHeaders(200, "application/json", false), 3));
      assertThat(c.awaitClose().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    }
    // A leaked stream keeps shutdown in its wait loop for the whole grace (here 10 minutes).
    assertTimeoutPreemptively(
        Duration.ofSeconds(30), () -> server.shutdown(Duration.ofMinutes(10)));
  }
}
