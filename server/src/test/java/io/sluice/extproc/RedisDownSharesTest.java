package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.admission.PoolState;
import io.sluice.core.share.ShareCoordinator;
import io.sluice.core.time.Ticker;
import io.sluice.store.LocalRedis;
import io.sluice.store.RedisProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 15 (a), for real: a Sluice server on its own redis-server with replica shares, requests in
 * flight through ext_proc, then Redis killed under them. The pool's share leaves {@code leased} for
 * the configured store-down mode after {@code keepShareFor} (status, mode gauge, /readyz),
 * admissions follow that mode ({@code capacity / expectedReplicas}, or nothing new), the requests
 * in flight end and release exactly once, and once Redis is back on the same port the share is
 * {@code leased} again with the pool's work in flight intact.
 */
class RedisDownSharesTest {
  private static final String POLICY =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      pools: {gpu: {capacity: 100000, maxRequests: 4}}
      classes: {interactive: {reservedShare: 1.0, defaultOutputTokens: 10, maxOutputTokens: 100}}
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      tiers: {capped: {weight: 1, maxInFlight: 5}}
      tenants: {anonymousTier: capped, unknownTier: capped}
      quotas: {keyPrefix: %s}
      replicas:
        leaseTtl: 1s
        renewInterval: 100ms
        keepShareFor: 500ms
        storeDown: %s
        expectedReplicas: 2
        floor: 0
      rateLimit:
        enabled: false
        env: {BACKEND_TYPE: redis, REDIS_URL: "127.0.0.1:%d"}
      """;

  @Test
  void fallback_admitsOnCapacityOverExpectedReplicas_andReconcilesWhenRedisReturns()
      throws Exception {
    run("fallback", ShareCoordinator.Mode.FALLBACK);
  }

  @Test
  void refuse_admitsNothingNew_andReconcilesWhenRedisReturns() throws Exception {
    run("refuse", ShareCoordinator.Mode.REFUSING);
  }

  private void run(String storeDown, ShareCoordinator.Mode downMode) throws Exception {
    assumeTrue(RedisProcess.available(), "redis-server not installed");
    int port = LocalRedis.freePort();
    RedisProcess redis = new RedisProcess(port).start();
    String policy = POLICY.formatted(LocalRedis.uniquePrefix(), storeDown, port);
    SluiceServer.Options opts =
        new SluiceServer.Options(null, Map.of(), Ticker.system(), Clock.systemUTC());
    try (SluiceServer server = SluiceServer.start(ConfigLoader.parse(policy), opts)) {
      ExtProcTestClient client = new ExtProcTestClient(server.grpcPort());
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> mode(server) == ShareCoordinator.Mode.LEASED && granted(server) == 4);
      assertThat(modeGauge(server, "leased")).isEqualTo(1.0);

      // three requests in flight on the leased share (the whole pool: 4 requests)
      List<ExtProcTestClient.Call> running = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        running.add(admitted(client));
      }
      assertThat(snapshot(server).requestsInFlight()).isEqualTo(3);
      assertThat(slotsHeld(server)).as("the tenant's slots (maxInFlight 5)").isEqualTo(3.0);
      assertThat(slotsInRedis(port)).isEqualTo(3);

      redis.kill();

      // past keepShareFor the store-down mode applies, everywhere it is reported
      await("the store-down mode after keepShareFor")
          .atMost(Duration.ofSeconds(10))
          .until(() -> mode(server) == downMode);
      ShareCoordinator.Status down = server.replicaShares().get("gpu");
      assertThat(down.failures()).isPositive();
      assertThat(down.grantedRequests())
          .as("capacity / expectedReplicas, or nothing")
          .isEqualTo(downMode == ShareCoordinator.Mode.FALLBACK ? 2 : 0);
      assertThat(modeGauge(server, downMode.label())).isEqualTo(1.0);
      assertThat(modeGauge(server, "leased")).isEqualTo(0.0);
      assertThat(failedRenewals(server)).isPositive();
      String readyz = readyz(server);
      assertThat(readyz).contains("replica share gpu: " + downMode.label()).contains("store: ");
      assertThat(snapshot(server).requestsInFlight()).as("in flight survives").isEqualTo(3);

      // admissions follow the mode: 3 in flight is over both outage shares, nothing new starts
      assertThat(refused(client)).isTrue();
      // two end: each releases once
      end(running.remove(0));
      end(running.remove(0));
      assertThat(snapshot(server).requestsInFlight()).isEqualTo(1);
      assertThat(released(server)).isEqualTo(2.0);
      if (downMode == ShareCoordinator.Mode.FALLBACK) {
        running.add(admitted(client)); // 1 in flight < 2: one more fits the fallback share
        assertThat(refused(client)).as("2 of 2 held").isTrue();
      } else {
        assertThat(refused(client)).as("refuse admits nothing new").isTrue();
      }
      int inFlight = snapshot(server).requestsInFlight();

      // Redis returns (empty, same port): leased again, the work in flight intact
      redis = new RedisProcess(port).start();
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> mode(server) == ShareCoordinator.Mode.LEASED);
      assertThat(snapshot(server).requestsInFlight()).isEqualTo(inFlight);
      // the tenant's slot still held (released in the outage: not at all in the store) is
      // written back by the renewals; the one admitted in the outage (fail open) holds none
      assertThat(slotsHeld(server)).isEqualTo(1.0);
      await().atMost(Duration.ofSeconds(10)).until(() -> slotsInRedis(port) == 1);
      await().atMost(Duration.ofSeconds(10)).until(() -> granted(server) == 4);
      assertThat(readyz(server)).contains("replica share gpu: leased");
      assertThat(modeGauge(server, "leased")).isEqualTo(1.0);
      double before = released(server);
      int admittedAfter = 0;
      while (snapshot(server).requestsInFlight() < 4) {
        running.add(admitted(client));
        admittedAfter++;
      }
      assertThat(admittedAfter).isEqualTo(4 - inFlight);
      assertThat(refused(client)).as("the pool's 4 again, not more").isTrue();

      // everything ends: each request released exactly once, nothing left over
      int ending = running.size();
      for (ExtProcTestClient.Call c : running) {
        end(c);
      }
      assertThat(snapshot(server).requestsInFlight()).isZero();
      assertThat(snapshot(server).workInFlight()).isZero();
      assertThat(released(server) - before).isEqualTo(ending);
      assertThat(slotsHeld(server)).isZero();
      assertThat(slotsInRedis(port)).as("no tenant slot left in the store").isZero();
      client.close();
    } finally {
      redis.close();
    }
  }

  private static ExtProcTestClient.Call admitted(ExtProcTestClient client)
      throws InterruptedException {
    ExtProcTestClient.Call c = client.open(Map.of());
    ProcessingResponse r =
        c.send(headers(ExtProcServerTestBase.chat(), true, BodySendMode.NONE, BodySendMode.NONE));
    assertThat(r.hasRequestHeaders()).as(r.toString()).isTrue();
    return c;
  }

  /** A new request is refused (503): the call is closed afterwards. */
  private static boolean refused(ExtProcTestClient client) throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    ProcessingResponse r =
        c.send(headers(ExtProcServerTestBase.chat(), true, BodySendMode.NONE, BodySendMode.NONE));
    c.reset();
    return r.hasImmediateResponse() && r.getImmediateResponse().getStatus().getCodeValue() == 503;
  }

  private static void end(ExtProcTestClient.Call c) throws Exception {
    c.send(responseHeaders(200, "application/json", false));
    c.halfClose();
    c.awaitClose();
  }

  private static PoolState.Snapshot snapshot(SluiceServer server) {
    return server.runtime().controller().pool("gpu").snapshot(server.runtime().ticker().nanos());
  }

  private static ShareCoordinator.Mode mode(SluiceServer server) {
    ShareCoordinator.Status s = server.replicaShares().get("gpu");
    return s == null ? null : s.mode();
  }

  private static int granted(SluiceServer server) {
    return server.replicaShares().get("gpu").grantedRequests();
  }

  private static double modeGauge(SluiceServer server, String mode) {
    Gauge g =
        server
            .registry()
            .find("sluice.replica.share.mode")
            .tag("pool", "gpu")
            .tag("mode", mode)
            .gauge();
    return g == null ? -1 : g.value();
  }

  private static double failedRenewals(SluiceServer server) {
    var c =
        server
            .registry()
            .find("sluice.replica.share.renewals")
            .tag("pool", "gpu")
            .tag("result", "failed")
            .functionCounter();
    return c == null ? 0 : c.count();
  }

  private static double released(SluiceServer server) {
    return server.registry().find("sluice.permits.released").tag("pool", "gpu").counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  private static double slotsHeld(SluiceServer server) {
    return server.registry().get("sluice.tenant.slots.held").gauge().value();
  }

  /** The tenant slots counted in Redis, all tenants and replicas (tenant_slots.lua's hashes). */
  private static long slotsInRedis(int port) throws Exception {
    String script =
        "local n = 0 for _, k in ipairs(redis.call('KEYS', '*:tenant:*')) do"
            + " local h = redis.call('HGETALL', k) for i = 2, #h, 2 do"
            + " n = n + tonumber(string.match(h[i], ' (%d+)$')) end end return n";
    Process p =
        new ProcessBuilder("redis-cli", "-p", Integer.toString(port), "EVAL", script, "0")
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes()).trim();
    assertThat(p.waitFor(5, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    return Long.parseLong(out.replace("(integer)", "").trim());
  }

  private static String readyz(SluiceServer server) throws Exception {
    HttpResponse<String> r =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + server.adminPort() + "/readyz"))
                    .timeout(Duration.ofSeconds(5))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    return r.body();
  }
}
