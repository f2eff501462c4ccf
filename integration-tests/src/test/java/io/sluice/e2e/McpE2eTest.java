package io.sluice.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.spec.McpSchema;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.share.ShareCoordinator;
import io.sluice.emulator.EnvoyExtProcEmulator;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.observability.MetricNames;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * MCP-aware admission end to end: three Sluice replicas on one Redis (127.0.0.1:6379), each behind
 * its own emulated Envoy, in front of one MCP server whose tools count their calls in flight. A
 * slow tool is capped at 5 across the replicas, a fast one at 50; an agent fans out 40 {@code
 * tools/call}. The slow tool never has more than 5 in flight, the fast one is never held behind it,
 * and every shed call gets a JSON-RPC error the official MCP Java SDK reads as such, retryable with
 * its retry-after.
 */
class McpE2eTest {
  static final String SLOW = "slow_report";
  static final String FAST = "fast_lookup";
  static final long SLOW_MILLIS = 500;
  static final long FAST_MILLIS = 10;
  private static final Pattern NAME = Pattern.compile("\"name\"\\s*:\\s*\"([^\"]+)\"");
  private static final Pattern ID = Pattern.compile("\"id\"\\s*:\\s*(\\d+|\"[^\"]*\")");
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final McpJsonMapper SDK = new JacksonMcpJsonMapper(new ObjectMapper());

  /**
   * The MCP server: each tool's calls in flight and their peak; SSE when asked. The fast tool's
   * JSON answers wait until {@link #FAST_WIDE} of its calls are in flight at once (at most 5 s), so
   * that its peak shows the width Sluice let through, whatever the machine's speed.
   */
  static final class McpServer implements Upstream, AutoCloseable {
    static final int FAST_WIDE = 6; // one more than the slow tool's cap
    final ScheduledExecutorService timers = Executors.newScheduledThreadPool(2);
    final CompletableFuture<Void> fastWide = new CompletableFuture<>();
    final Map<String, AtomicInteger> active = new ConcurrentHashMap<>();
    final Map<String, AtomicInteger> peak = new ConcurrentHashMap<>();
    volatile boolean sse;

    @Override
    public CompletableFuture<UpstreamResponse> send(UpstreamRequest request) {
      String body = request.bodyUtf8();
      Matcher n = NAME.matcher(body);
      Matcher i = ID.matcher(body);
      String tool = n.find() ? n.group(1) : "none";
      String id = i.find() ? i.group(1) : "null";
      int now = active.computeIfAbsent(tool, t -> new AtomicInteger()).incrementAndGet();
      peak.computeIfAbsent(tool, t -> new AtomicInteger()).accumulateAndGet(now, Math::max);
      String result =
          "{\"jsonrpc\":\"2.0\",\"id\":"
              + id
              + ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}";
      long delay = tool.equals(SLOW) ? SLOW_MILLIS : FAST_MILLIS;
      if (tool.equals(FAST) && now >= FAST_WIDE) {
        fastWide.complete(null);
      }
      CompletableFuture<UpstreamResponse> out = new CompletableFuture<>();
      if (sse) { // headers at once, the event after the delay: released at the stream's end
        out.complete(
            new UpstreamResponse(
                200,
                HttpHeaders.of("content-type", "text/event-stream"),
                sink -> {
                  sink.onData(": open\n\n".getBytes(StandardCharsets.UTF_8), false);
                  var f =
                      timers.schedule(
                          () -> {
                            active.get(tool).decrementAndGet();
                            sink.onData(
                                ("event: message\ndata: " + result + "\n\n")
                                    .getBytes(StandardCharsets.UTF_8),
                                true);
                          },
                          delay,
                          TimeUnit.MILLISECONDS);
                  return () -> f.cancel(false);
                }));
        return out;
      }
      Runnable answer =
          () -> {
            active.get(tool).decrementAndGet();
            out.complete(
                UpstreamResponse.of(
                    200, HttpHeaders.of("content-type", "application/json"), result));
          };
      if (tool.equals(FAST)) {
        var unused =
            fastWide
                .completeOnTimeout(null, 5, TimeUnit.SECONDS)
                .thenRun(() -> timers.schedule(answer, delay, TimeUnit.MILLISECONDS));
      } else {
        timers.schedule(answer, delay, TimeUnit.MILLISECONDS);
      }
      return out;
    }

    int peak(String tool) {
      AtomicInteger p = peak.get(tool);
      return p == null ? 0 : p.get();
    }

    @Override
    public void close() {
      timers.shutdownNow();
    }
  }

  private final List<SluiceServer> servers = new ArrayList<>();
  private final List<EnvoyExtProcEmulator> envoys = new ArrayList<>();
  private McpServer mcp;

  @BeforeEach
  void start() throws IOException {
    assumeTrue(Policy.redisReachable(), "redis-server on 127.0.0.1:6379");
    mcp = new McpServer();
    String prefix = "sluice_mcp_" + UUID.randomUUID().toString().substring(0, 8) + "_";
    String yaml =
        Policy.onRedis(prefix)
            .with("limits.maxBodyBytes", "4MiB")
            .with("pools.mcp", "{capacity: 1000000, maxRequests: 500}")
            .with("pools.tool-slow", "{capacity: 1000000, maxRequests: 5, retryAfter: {min: 1s}}")
            .with("pools.tool-fast", "{capacity: 1000000, maxRequests: 50}")
            .with(
                "routes",
                "[{name: mcp, match: {pathPrefix: /mcp}, pool: mcp, class: interactive,"
                    + " format: auto}]")
            .with(
                "mcp",
                "{enabled: true, routes: [mcp], tools: [{name: "
                    + SLOW
                    + ", pool: tool-slow}, {name: "
                    + FAST
                    + ", pool: tool-fast}]}")
            .yaml();
    for (int i = 0; i < 3; i++) {
      SluiceServer s = SluiceServer.start(ConfigLoader.parse(yaml));
      servers.add(s);
      envoys.add(
          EnvoyExtProcEmulator.connect(
              "127.0.0.1:" + s.grpcPort(), SluiceEnvoyHarness.recommendedFilter().build(), mcp));
    }
    // every pool leased on every replica, and the shares settled on the even idle split of each
    // tool's slots: while the last replica to join still waits for the others to give it its part,
    // the grants can add up to the slots with one of them small (7 of 50 once: a burst of 7 there
    // was refused while the pool had room)
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> settled("tool-slow", 5) && settled("tool-fast", 50));
  }

  /**
   * Every replica leased on {@code pool}, each granted its target (the allocation's even split when
   * idle: at least its third of the slots, rounded down), adding up to them all.
   */
  private boolean settled(String pool, int slots) {
    int sum = 0;
    for (SluiceServer s : servers) {
      ShareCoordinator.Status st = s.replicaShares().get(pool);
      if (st == null
          || st.mode() != ShareCoordinator.Mode.LEASED
          || st.grantedRequests() != st.targetRequests()
          || st.grantedRequests() < slots / servers.size()) {
        return false;
      }
      sum += st.grantedRequests();
    }
    return sum == slots;
  }

  /** {@code sluice_decisions_total} of {@code pool} with {@code decision}, over the replicas. */
  private double decisions(String pool, String decision) {
    double n = 0;
    for (SluiceServer s : servers) {
      n +=
          s
              .registry()
              .find(MetricNames.DECISIONS)
              .tag("pool", pool)
              .tag("decision", decision)
              .counters()
              .stream()
              .mapToDouble(io.micrometer.core.instrument.Counter::count)
              .sum();
    }
    return n;
  }

  @AfterEach
  void stop() {
    envoys.forEach(EnvoyExtProcEmulator::close);
    servers.forEach(SluiceServer::close);
    if (mcp != null) {
      mcp.close();
    }
  }

  static String call(int id, String tool) {
    return "{\"jsonrpc\":\"2.0\",\"id\":"
        + id
        + ",\"method\":\"tools/call\",\"params\":{\"name\":\""
        + tool
        + "\",\"arguments\":{\"q\":\"x\"}}}";
  }

  static HttpRequest post(String body) {
    return HttpRequest.post("/mcp", body)
        .routeGrpcInitialMetadata("x-sluice-tenant", "acme")
        .header("accept", "application/json, text/event-stream")
        .build();
  }

  // Once saw 6 slow calls in flight (cap 5 over three replicas): a replica's shrink was recorded
  // in the store before it applied there (PoolBoundAtEveryInstantTest.mcpShape_…, fixed). The
  // fast tool's "never held" is shown by its decisions, not by a wall-clock bound.
  @Test
  void agentFansOut40Calls_slowToolCappedAcrossReplicas_fastNeverHeld_shedCallsTyped()
      throws Exception {
    List<CompletableFuture<HttpResult>> slow = new ArrayList<>();
    List<CompletableFuture<HttpResult>> fast = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      boolean isSlow = i % 2 == 0;
      var f = envoys.get(i % 3).sendAsync(post(call(i, isSlow ? SLOW : FAST)));
      (isSlow ? slow : fast).add(f);
    }
    int slowOk = 0;
    int shed = 0;
    for (var f : slow) {
      HttpResult r = SluiceEnvoyHarness.result(f);
      assertThat(r.status()).isEqualTo(200); // a JSON-RPC answer either way
      McpSchema.JSONRPCResponse m =
          (McpSchema.JSONRPCResponse) McpSchema.deserializeJsonRpcMessage(SDK, r.bodyUtf8());
      if (m.error() == null) {
        slowOk++;
        continue;
      }
      shed++;
      assertThat(m.error().code()).isEqualTo(-32000);
      @SuppressWarnings("unchecked")
      Map<String, Object> data = (Map<String, Object>) m.error().data();
      assertThat(data).containsEntry("retryable", true).containsEntry("type", "TOOL_BACKPRESSURE");
      assertThat(((Number) data.get("retry_after_ms")).longValue()).isGreaterThanOrEqualTo(1000);
      assertThat(data.get("suggestion")).isEqualTo("defer or drop, do not resubmit immediately");
      assertThat(r.header("retry-after")).isPresent();
      assertThat(r.header("content-type")).contains("application/json");
    }
    for (var f : fast) {
      HttpResult r = SluiceEnvoyHarness.result(f);
      assertThat(r.status()).isEqualTo(200);
      JsonNode n = JSON.readTree(r.bodyUtf8());
      assertThat(n.has("result")).as(r.bodyUtf8()).isTrue();
      // admitted at once: a call that waited in its pool's queue carries the wait it had
      assertThat(r.header("x-sluice-queue-wait-ms")).as("fast call held").isEmpty();
    }
    // the fast tool's pool admitted every call at its first decision, none queued, on any replica
    assertThat(decisions("tool-fast", "queue")).isZero();
    assertThat(decisions("tool-fast", "admit")).isEqualTo(20);
    assertThat(mcp.peak(SLOW)).isBetween(1, 5);
    assertThat(slowOk + shed).isEqualTo(20);
    assertThat(slowOk).isBetween(1, 5);
    assertThat(shed).isGreaterThanOrEqualTo(15);
    assertThat(mcp.peak(FAST)).isGreaterThan(5); // the fast tool ran wider than the slow cap
    assertNothingInFlight();
  }

  @Test
  void controlMessages_passInTheRoutesPool() {
    for (String body :
        List.of(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"unknown/method\"}")) {
      HttpResult r = SluiceEnvoyHarness.result(envoys.get(0).sendAsync(post(body)));
      assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.UPSTREAM_RESPONSE);
      assertThat(r.status()).isEqualTo(200);
    }
    assertNothingInFlight();
  }

  @Test
  void sseAnswer_holdsItsPermitUntilTheStreamEnds() {
    mcp.sse = true;
    var f = envoys.get(0).sendAsync(post(call(1, SLOW)));
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> inFlight(servers.get(0), "tool-slow") == 1 && mcp.peak(SLOW) == 1);
    HttpResult r = SluiceEnvoyHarness.result(f);
    assertThat(r.bodyUtf8()).contains("event: message").contains("\"result\"");
    assertNothingInFlight();
  }

  @Test
  void badInput_typedJsonRpcErrors_nothingHeld() throws Exception {
    StringBuilder batch = new StringBuilder("[");
    for (int i = 0; i < 10_000; i++) {
      batch.append(i == 0 ? "" : ",").append(call(i, FAST));
    }
    Map<String, String> cases =
        Map.of(
            "{\"jsonrpc\":\"2.0\",",
            "malformed",
            batch.append(']').toString(),
            "batch_too_large",
            call(1, "n".repeat(100_000)),
            "invalid_tool_name",
            "[".repeat(5_000) + "]".repeat(5_000),
            "malformed",
            "[" + call(1, FAST) + "," + call(2, SLOW) + "]",
            "batch_tool_calls");
    for (var c : cases.entrySet()) {
      HttpResult r = SluiceEnvoyHarness.result(envoys.get(1).sendAsync(post(c.getKey())));
      assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.LOCAL_REPLY);
      assertThat(r.header("x-sluice-reason")).contains("mcp_invalid");
      JsonNode n = JSON.readTree(r.bodyUtf8());
      JsonNode e = n.isArray() ? n.get(0) : n;
      assertThat(e.at("/error/data/reason").asText()).isEqualTo(c.getValue());
      assertThat(e.at("/error/data/retryable").asBoolean()).isFalse();
    }
    assertThat(mcp.peak(FAST)).isZero();
    assertNothingInFlight();
  }

  private static int inFlight(SluiceServer s, String pool) {
    return s.runtime().controller().pool(pool).snapshot(0).requestsInFlight();
  }

  private void assertNothingInFlight() {
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () -> {
              for (SluiceServer s : servers) {
                for (String p : List.of("mcp", "tool-slow", "tool-fast")) {
                  assertThat(inFlight(s, p)).as(p).isZero();
                }
              }
            });
  }
}
