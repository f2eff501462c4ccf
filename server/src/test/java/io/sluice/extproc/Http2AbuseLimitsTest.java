package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.headers;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import io.sluice.core.time.FakeTicker;
import io.sluice.testing.RawHttp2Client;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * HTTP/2 abuse limits of the gRPC port (server.grpc): rapid reset on one connection earns a GOAWAY
 * ENHANCE_YOUR_CALM while a well-behaved client keeps its rate; a header list over
 * maxHeaderListSize is a counted 431 on that stream and one log line, not a stack trace per stream.
 * A bare HTTP/2 client ({@link RawHttp2Client}) sends what a real client library refuses to.
 */
class Http2AbuseLimitsTest {
  private static final String PROCESS = "/envoy.service.ext_proc.v3.ExternalProcessor/Process";
  private static final String BASE =
      """
      server:
        grpc: {host: 127.0.0.1, port: 0 %s}
        admin: {host: 127.0.0.1, port: 0}
        warmup: {enabled: false}
      pools: {gpu: {capacity: 100000000}}
      classes: {interactive: {reservedShare: 1.0, defaultOutputTokens: 10, maxOutputTokens: 100}}
      signals: {tenant: [{metadata: x-sluice-tenant}]}
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      """;

  private SluiceServer server;

  private static String policy(String grpcExtra) {
    return BASE.formatted(grpcExtra.isEmpty() ? "" : ", " + grpcExtra);
  }

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private double refusals(String reason) {
    Counter c =
        server.registry().find("sluice.grpc.transport.refusals").tag("reason", reason).counter();
    return c == null ? 0 : c.count();
  }

  /**
   * Well-behaved streams (headers-only request answered, then half-close, server ends it OK: no
   * RST_STREAM) completed by 4 workers on one connection in {@code millis}.
   */
  private static int legitStreams(ExtProcTestClient client, long millis) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
      List<Future<Integer>> done = new ArrayList<>();
      for (int w = 0; w < 4; w++) {
        done.add(
            pool.submit(
                () -> {
                  int n = 0;
                  while (System.nanoTime() - end < 0 && n < 100_000) {
                    ExtProcTestClient.Call c = client.open(Map.of());
                    c.send(headers(ExtProcServerTestBase.chat(), true, null, null));
                    c.halfClose();
                    if (c.awaitClose().isOk()) {
                      n++;
                    }
                  }
                  return n;
                }));
      }
      int total = 0;
      for (Future<Integer> f : done) {
        total += f.get(millis + 10_000, TimeUnit.MILLISECONDS);
      }
      return total;
    } finally {
      pool.shutdownNow();
    }
  }

  /** HEADERS then RST_STREAM(CANCEL) on one connection as fast as it goes, bounded. */
  private static int rapidReset(RawHttp2Client abuser, int maxStreams, long maxMillis) {
    long t0 = System.nanoTime();
    int n = 0;
    try {
      while (n < maxStreams
          && System.nanoTime() - t0 < TimeUnit.MILLISECONDS.toNanos(maxMillis)
          && !abuser.isClosed()) {
        int id = abuser.headers(RawHttp2Client.grpcHeaders(PROCESS, Map.of()));
        abuser.reset(id);
        if (++n % 50 == 0) {
          abuser.flush();
        }
      }
      abuser.flush();
    } catch (IOException e) {
      // the server closed the connection under us: the point
    }
    return n;
  }

  @Test
  void rapidReset_oneConnection_getsGoAway_andAWellBehavedClientKeepsItsRate() throws Exception {
    server =
        SluiceServer.start(
            ConfigLoader.parse(policy("maxResetsPerWindow: 200, resetWindow: 1s")),
            new FakeTicker(),
            Clock.systemUTC());
    try (ExtProcTestClient legit = new ExtProcTestClient(server.grpcPort())) {
      legitStreams(legit, 500); // warm the path, so the baseline is not the cold one
      int alone = legitStreams(legit, 2_000);

      ExecutorService abuse = Executors.newSingleThreadExecutor();
      try (RawHttp2Client abuser = new RawHttp2Client(server.grpcPort())) {
        Future<Integer> sent = abuse.submit(() -> rapidReset(abuser, 200_000, 2_000));
        int beside = legitStreams(legit, 2_000);
        int resets = sent.get(10, TimeUnit.SECONDS);
        double ratio = (double) beside / alone;
        System.err.printf(
            "rapid reset: %d resets sent before the close; well-behaved streams in 2 s: %d alone,"
                + " %d beside the abuser (ratio %.2f)%n",
            resets, alone, beside, ratio);
        // loose: 2 cores shared with other builds. Until the abuser's connection is closed (the
        // read batch in which it crossed the limit is still decoded) streams on the same event
        // loop stall; without the limit they stall for the whole abuse (docs/operations.md)
        assertThat(ratio).as("well-behaved rate beside the abuser / alone").isGreaterThan(0.3);
      } finally {
        abuse.shutdownNow();
      }
      assertServesOn(legit);
    }
  }

  /**
   * Issue 32 item 5, cold: before the JIT the server decodes a rapid-reset flood slower than grpc's
   * 40000/s limit, so grpc never closes the connection. The premature-reset guard counts the
   * flood's streams (reset before any DATA) ahead of grpc's codec and closes it after 1000.
   */
  @Test
  void rapidReset_coldServer_closedByThePrematureResetGuard_beforeGrpcsLimit() throws Exception {
    server =
        SluiceServer.start(ConfigLoader.parse(policy("")), new FakeTicker(), Clock.systemUTC());
    try (ExtProcTestClient legit = new ExtProcTestClient(server.grpcPort())) {
      int alone = legitStreams(legit, 1_000);
      ExecutorService abuse = Executors.newSingleThreadExecutor();
      try (RawHttp2Client abuser = new RawHttp2Client(server.grpcPort())) {
        long t0 = System.nanoTime();
        Future<Integer> sent = abuse.submit(() -> rapidReset(abuser, 400_000, 5_000));
        int beside = legitStreams(legit, 1_000);
        int resets = sent.get(15, TimeUnit.SECONDS);
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        boolean closed = abuser.awaitClosed(2_000);
        System.err.printf(
            "cold rapid reset: %d resets written, connection closed %s (GOAWAY 0x%x) within %d ms;"
                + " well-behaved streams in 1 s: %d alone, %d beside%n",
            resets, closed, abuser.goAwayError(), millis, alone, beside);
        assertThat(closed).as("abuser's connection closed").isTrue();
        assertThat(abuser.goAwayError()).as("GOAWAY ENHANCE_YOUR_CALM").isEqualTo(0xb);
        assertThat(refusals("premature_resets")).isEqualTo(1);
        assertThat(refusals("too_many_resets")).as("grpc's own limit").isZero();
      } finally {
        abuse.shutdownNow();
      }
      assertServesOn(legit);
    }
  }

  /**
   * Envoy resets every ext_proc stream after its messages; one it resets before its first message
   * (the downstream client went away in between) is premature. Streams in that shape at full speed,
   * a third of them premature (far more than Envoy sends), with grpc's own reset limit off so that
   * only the guard could close the connection: it stays open, as its ratio (0.5) says.
   */
  @Test
  void envoyShapedStreams_aThirdResetBeforeTheirMessage_atFullSpeed_neverClosed() throws Exception {
    server =
        SluiceServer.start(
            ConfigLoader.parse(policy("maxResetsPerWindow: 0")),
            new FakeTicker(),
            Clock.systemUTC());
    byte[] message =
        RawHttp2Client.grpcMessage(
            headers(ExtProcServerTestBase.chat(), true, null, null).toByteArray());
    try (RawHttp2Client envoy = new RawHttp2Client(server.grpcPort())) {
      long t0 = System.nanoTime();
      int streams = 0;
      int premature = 0;
      while (streams < 30_000
          && System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(4)
          && !envoy.isClosed()) {
        int id = envoy.headers(RawHttp2Client.grpcHeaders(PROCESS, Map.of()));
        if (streams % 3 == 0) {
          premature++;
        } else {
          envoy.data(id, message, false);
        }
        envoy.reset(id);
        if (++streams % 50 == 0) {
          envoy.flush();
        }
      }
      long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      // one more stream, not reset: answered once the server has read everything before it
      int last = envoy.headers(RawHttp2Client.grpcHeaders(PROCESS, Map.of()));
      envoy.data(last, message, false);
      envoy.flush();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> envoy.headersReceived() >= 1 || envoy.isClosed());
      System.err.printf(
          "envoy-shaped: %d streams (%d reset before their message) in %d ms, then one answered%n",
          streams, premature, millis);
      assertThat(premature).as("past the minimum, so the ratio decides").isGreaterThan(1_000);
      assertThat(envoy.isClosed()).as("connection closed").isFalse();
      assertThat(envoy.goaways()).isZero();
      assertThat(envoy.headersReceived()).as("the last stream answered").isPositive();
      assertThat(refusals("premature_resets")).isZero();
    }
  }

  @Test
  void headerListOverTheLimit_431OnThatStream_countedAsOneLine_notAStackTracePerStream()
      throws Exception {
    server =
        SluiceServer.start(ConfigLoader.parse(policy("")), new FakeTicker(), Clock.systemUTC());
    List<LogRecord> grpcRecords = new java.util.concurrent.CopyOnWriteArrayList<>();
    Handler capture =
        new Handler() {
          @Override
          public void publish(LogRecord r) {
            grpcRecords.add(r);
          }

          @Override
          public void flush() {}

          @Override
          public void close() {}
        };
    Logger grpc = Logger.getLogger("io.grpc.netty.shaded.io.grpc.netty.NettyServerHandler");
    grpc.addHandler(capture);
    try (RawHttp2Client client = new RawHttp2Client(server.grpcPort())) {
      for (int i = 0; i < 5; i++) {
        client.headers(RawHttp2Client.grpcHeaders(PROCESS, Map.of("x-big", "a".repeat(9_000))));
      }
      client.flush();
      await().atMost(Duration.ofSeconds(5)).until(() -> client.headersReceived() >= 5);
      // Netty's 431 answer (HPACK-coded, so not asserted byte by byte) then RST_STREAM per stream
      await().atMost(Duration.ofSeconds(5)).until(() -> client.resetsReceived() >= 5);
      await().atMost(Duration.ofSeconds(5)).until(() -> refusals("header_list_size") == 5);
      assertThat(client.goaways()).as("the connection stays").isZero();
    } finally {
      grpc.removeHandler(capture);
    }
    assertThat(grpcRecords)
        .as("grpc's per-stream WARNING with its stack trace")
        .noneMatch(r -> r.getThrown() != null);
    // a well-behaved client with the default 8 KiB metadata is served
    try (ExtProcTestClient ok = new ExtProcTestClient(server.grpcPort())) {
      ExtProcTestClient.Call c = ok.open(Map.of("x-sluice-tenant", "t".repeat(4_000)));
      assertThat(
              c.send(headers(ExtProcServerTestBase.chat(), true, null, null)).hasRequestHeaders())
          .isTrue();
    }
  }

  @Test
  void limits_defaultsAndValidation() {
    var d = ConfigLoader.parse(policy("")).server().http2();
    assertThat(d.maxResetsPerWindow()).isEqualTo(40_000);
    assertThat(d.resetWindow()).isEqualTo(Duration.ofSeconds(1));
    assertThat(d.maxHeaderListBytes()).isEqualTo(8192);
    assertThat(d.permitKeepAliveTime()).isEqualTo(Duration.ofSeconds(10));
    assertThat(d.maxConnectionIdle()).isZero();
    assertThat(d.maxPrematureResets()).isEqualTo(1_000);
    assertThat(d.prematureResetRatio()).isEqualTo(0.5);
    var set =
        ConfigLoader.parse(
                policy(
                    "maxResetsPerWindow: 0, resetWindow: 10s, maxHeaderListSize: 16KiB,"
                        + " permitKeepAliveTime: 30s, maxConnectionIdle: 1h,"
                        + " maxPrematureResets: 0, prematureResetRatio: 0.25"))
            .server()
            .http2();
    assertThat(set.maxResetsPerWindow()).isZero();
    assertThat(set.resetWindow()).isEqualTo(Duration.ofSeconds(10));
    assertThat(set.maxHeaderListBytes()).isEqualTo(16_384);
    assertThat(set.maxConnectionIdle()).isEqualTo(Duration.ofHours(1));
    assertThat(set.maxPrematureResets()).isZero();
    assertThat(set.prematureResetRatio()).isEqualTo(0.25);
    assertThatThrownBy(() -> ConfigLoader.parse(policy("prematureResetRatio: 1.5")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("server.grpc.prematureResetRatio");
    assertThatThrownBy(() -> ConfigLoader.parse(policy("resetWindow: 1500ms")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("server.grpc.resetWindow")
        .hasMessageContaining("whole seconds");
    assertThatThrownBy(() -> ConfigLoader.parse(policy("maxHeaderListSize: 100")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("server.grpc.maxHeaderListSize");
    assertThatThrownBy(() -> ConfigLoader.parse(policy("maxResetsPerWindow: -1")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("server.grpc.maxResetsPerWindow");
  }

  /** The server serves on: a new stream on the well-behaved connection is answered. */
  private static void assertServesOn(ExtProcTestClient legit) throws Exception {
    ExtProcTestClient.Call c = legit.open(Map.of());
    assertThat(c.send(headers(ExtProcServerTestBase.chat(), true, null, null)).hasRequestHeaders())
        .isTrue();
    c.halfClose();
    assertThat(c.awaitClose()).isEqualTo(Status.OK);
  }
}
