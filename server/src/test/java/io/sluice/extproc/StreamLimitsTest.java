package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import io.sluice.core.time.FakeTicker;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 13 finding 6: limits on concurrent ext_proc streams (in total and per connection) and on
 * silent streams (before the first message, before a decision, after admission), over the real
 * Netty server with a fake ticker driving the silence bounds (the sweep runs on the real timer).
 */
class StreamLimitsTest {
  private static final String BASE =
      """
      server:
        grpc: {host: 127.0.0.1, port: 0 %s}
        admin: {host: 127.0.0.1, port: 0}
      pools: {gpu: {capacity: 100000}}
      classes: {interactive: {reservedShare: 1.0, defaultOutputTokens: 10, maxOutputTokens: 100}}
      signals: {tenant: [{metadata: x-sluice-tenant}]}
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      """;

  private final FakeTicker ticker = new FakeTicker();
  private SluiceServer server;
  private final List<ExtProcTestClient> clients = new ArrayList<>();

  private static String policy(String grpcExtra) {
    return BASE.formatted(grpcExtra.isEmpty() ? "" : ", " + grpcExtra);
  }

  private ExtProcTestClient start(String grpcExtra) throws Exception {
    server = SluiceServer.start(ConfigLoader.parse(policy(grpcExtra)), ticker, Clock.systemUTC());
    return client();
  }

  private ExtProcTestClient client() {
    ExtProcTestClient c = new ExtProcTestClient(server.grpcPort());
    clients.add(c);
    return c;
  }

  @AfterEach
  void stop() throws Exception {
    for (ExtProcTestClient c : clients) {
      c.close();
    }
    if (server != null) {
      server.close();
    }
  }

  private double counter(String name, String tag, String value) {
    Counter c = server.registry().find(name).tag(tag, value).counter();
    return c == null ? 0 : c.count();
  }

  private double open() {
    return server.registry().find("sluice.extproc.streams.open").gauge().value();
  }

  private int inFlight() {
    return server.runtime().controller().pool("gpu").snapshot(ticker.nanos()).requestsInFlight();
  }

  @Test
  void maxStreams_beyondItResourceExhausted_counted_andFreedByAClose() throws Exception {
    ExtProcTestClient client = start("maxStreams: 3");
    List<ExtProcTestClient.Call> calls = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      ExtProcTestClient.Call c = client.open(Map.of());
      assertThat(
              c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED))
                  .hasRequestHeaders())
          .isTrue();
      calls.add(c);
    }
    ExtProcTestClient.Call fourth = client.open(Map.of());
    fourth.sendOnly(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    Status s = fourth.awaitClose();
    assertThat(s.getCode()).as(s.toString()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(s.getDescription()).contains("server.grpc.maxStreams");
    assertThat(counter("sluice.extproc.streams.refused", "reason", "max_streams")).isEqualTo(1);
    assertThat(open()).isEqualTo(3);

    calls.get(0).reset();
    await().atMost(Duration.ofSeconds(5)).until(() -> open() == 2);
    ExtProcTestClient.Call again = client.open(Map.of());
    assertThat(
            again
                .send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED))
                .hasRequestHeaders())
        .isTrue();
  }

  /**
   * An idle flood at {@code maxStreams} (streams that never send a message) does not starve a
   * stream that sends its request headers: the oldest idle stream is ended UNAVAILABLE for it and
   * counted {@code idle_evicted}; a stream that has sent a message is never evicted, and an idle
   * stream younger than the eviction age is not either.
   */
  @Test
  void maxStreams_idleFlood_oldestIdleStreamMakesRoom_talkingStreamsNever() throws Exception {
    ExtProcTestClient client = start("maxStreams: 3");
    ExtProcTestClient.Call talking = client.open(Map.of());
    assertThat(
            talking
                .send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED))
                .hasRequestHeaders())
        .isTrue();
    List<ExtProcTestClient.Call> idle = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      idle.add(client.open(Map.of()));
      final int n = i + 2;
      await().atMost(Duration.ofSeconds(5)).until(() -> open() == n);
      ticker.advance(Duration.ofMillis(1)); // the first idle stream is the oldest
    }
    ExtProcTestClient.Call tooSoon = client.open(Map.of());
    tooSoon.sendOnly(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(tooSoon.awaitClose().getCode())
        .as("idle streams younger than the eviction age stay")
        .isEqualTo(Status.Code.RESOURCE_EXHAUSTED);

    ticker.advance(Duration.ofSeconds(1)); // well under firstMessageTimeout (10 s)
    for (int i = 0; i < 2; i++) {
      ExtProcTestClient.Call legit = client.open(Map.of());
      assertThat(
              legit
                  .send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED))
                  .hasRequestHeaders())
          .as("legitimate stream %d answered", i)
          .isTrue();
      Status evicted = idle.get(i).awaitClose();
      assertThat(evicted.getCode()).as(evicted.toString()).isEqualTo(Status.Code.UNAVAILABLE);
      assertThat(evicted.getDescription()).contains("evicted", "server.grpc.maxStreams");
    }
    assertThat(counter("sluice.extproc.streams.refused", "reason", "idle_evicted")).isEqualTo(2);

    ExtProcTestClient.Call fourth = client.open(Map.of());
    fourth.sendOnly(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(fourth.awaitClose().getCode())
        .as("three talking streams: nothing to evict")
        .isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(open()).isEqualTo(3);
  }

  @Test
  void maxStreamsPerConnection_isTheHttp2Limit_aThirdStreamIsHeldByTheClient() throws Exception {
    ExtProcTestClient client = start("maxStreamsPerConnection: 2");
    ExtProcTestClient.Call a = client.open(Map.of());
    a.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ExtProcTestClient.Call b = client.open(Map.of());
    b.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ExtProcTestClient.Call c = client.open(Map.of());
    c.sendOnly(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    // the client holds the third stream back (SETTINGS_MAX_CONCURRENT_STREAMS = 2)
    assertThat(c.responses.poll(300, TimeUnit.MILLISECONDS)).isNull();
    assertThat(open()).isEqualTo(2);
    // another connection is not limited by this one
    ExtProcTestClient.Call other = client().open(Map.of());
    assertThat(
            other
                .send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED))
                .hasRequestHeaders())
        .isTrue();
    assertThat(open()).isEqualTo(3);
    a.reset();
    b.reset();
    c.reset();
  }

  @Test
  void firstMessageTimeout_silentStreamEndedDeadlineExceeded_countedByPhase() throws Exception {
    ExtProcTestClient client = start("firstMessageTimeout: 5s");
    ExtProcTestClient.Call silent = client.open(Map.of());
    ExtProcTestClient.Call talking = client.open(Map.of());
    talking.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    await().atMost(Duration.ofSeconds(5)).until(() -> open() == 2);
    ticker.advance(Duration.ofSeconds(4));
    assertThat(silent.closed.isDone()).isFalse();
    ticker.advance(Duration.ofSeconds(2));
    Status s = silent.awaitClose();
    assertThat(s.getCode()).as(s.toString()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
    assertThat(s.getDescription()).contains("server.grpc.firstMessageTimeout");
    assertThat(counter("sluice.extproc.stream.errors", "cause", "first_message_timeout"))
        .isEqualTo(1);
    assertThat(counter("sluice.extproc.streams.undecided", "phase", "first_message")).isEqualTo(1);
    assertThat(talking.closed.isDone()).as("waiting for its body: a longer bound").isFalse();
  }

  @Test
  void idleTimeout_beforeTheDecision_endsAStreamThatNeverSendsItsBody() throws Exception {
    ExtProcTestClient client = start("idleTimeout: 30s");
    ExtProcTestClient.Call c = client.open(Map.of());
    c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ticker.advance(Duration.ofSeconds(31));
    Status s = c.awaitClose();
    assertThat(s.getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
    assertThat(s.getDescription()).contains("server.grpc.idleTimeout");
    assertThat(counter("sluice.extproc.stream.errors", "cause", "idle_timeout")).isEqualTo(1);
    assertThat(counter("sluice.extproc.streams.undecided", "phase", "request_body")).isEqualTo(1);
    await().atMost(Duration.ofSeconds(5)).until(() -> open() == 0);
  }

  @Test
  void admittedIdleTimeout_isTheLongBound_waitingForTheUpstream_thenReleases() throws Exception {
    ExtProcTestClient client = start("idleTimeout: 30s, admittedIdleTimeout: 10m");
    ExtProcTestClient.Call c = client.open(Map.of());
    c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    c.send(body("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
    assertThat(inFlight()).isEqualTo(1);
    // minutes waiting for response headers: normal for an LLM, not cut at idleTimeout
    ticker.advance(Duration.ofMinutes(5));
    Thread.sleep(1500); // more than one sweep period
    assertThat(c.closed.isDone()).isFalse();
    assertThat(c.send(responseHeaders(200, "text/event-stream", false)).hasResponseHeaders())
        .isTrue();
    ticker.advance(Duration.ofMinutes(9)); // counted from the last message
    Thread.sleep(1500);
    assertThat(c.closed.isDone()).isFalse();
    ticker.advance(Duration.ofMinutes(2));
    Status s = c.awaitClose();
    assertThat(s.getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
    assertThat(s.getDescription()).contains("server.grpc.admittedIdleTimeout");
    await().atMost(Duration.ofSeconds(5)).until(() -> inFlight() == 0);
    assertThat(counter("sluice.extproc.stream.errors", "cause", "admitted_idle_timeout"))
        .isEqualTo(1);
    assertThat(server.registry().find("sluice.extproc.streams.undecided").counters()).isEmpty();
  }

  @Test
  void limits_validated_errorsNameTheFieldAndTheExpectedValue() {
    assertThatThrownBy(() -> ConfigLoader.parse(policy("maxStreams: 0")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("server.grpc.maxStreams")
        .hasMessageContaining("expected");
    assertThatThrownBy(() -> ConfigLoader.parse(policy("maxStreamsPerConnection: -1")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("server.grpc.maxStreamsPerConnection");
    assertThatThrownBy(() -> ConfigLoader.parse(policy("idleTimeout: -5s")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("server.grpc.idleTimeout");
    assertThatThrownBy(() -> ConfigLoader.parse(policy("firstMessageTimeout: 25h")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("server.grpc.firstMessageTimeout")
        .hasMessageContaining("24h");
    var d = ConfigLoader.parse(policy("")).server().streams();
    assertThat(d.maxStreams()).isEqualTo(50_000);
    assertThat(d.firstMessageTimeout()).isEqualTo(Duration.ofSeconds(10));
    assertThat(d.admittedIdleTimeout()).isGreaterThan(d.idleTimeout());
    var off = ConfigLoader.parse(policy("idleTimeout: 0s")).server().streams();
    assertThat(off.idleTimeout()).isZero();
  }

  private static Map<String, String> chat() {
    return ExtProcServerTestBase.chat();
  }
}
