package io.sluice.bench;

import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.share.ShareCoordinator;
import io.sluice.emulator.EnvoyExtProcEmulator;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.harness.Rig;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An MCP tool pool under twice the load it can take (part of {@code sluice-bench permits}): two
 * Sluice replicas on a redis-server of the bench's own (replica shares on), each behind an emulated
 * Envoy, in front of a fake MCP tool that serves each call in {@code toolMillis} and counts its
 * calls in flight. The tool's pool is capped at {@code cap} ({@code maxRequests}, across the
 * replicas); calls arrive open-loop at {@code 2 x cap / service time} per second, alternating the
 * replicas. Every answer is classified: a JSON-RPC result, a typed {@code TOOL_BACKPRESSURE} error
 * (retryable, with {@code retry_after_ms}), or anything else.
 */
final class ToolPoolLoad {
  static final String TOOL = "pdf_render";
  private static final Pattern ID = Pattern.compile("\"id\"\\s*:\\s*(\\d+)");
  private static final Pattern REASON = Pattern.compile("\"reason\"\\s*:\\s*\"([a-z_]+)\"");

  private final int cap;
  private final int toolMillis;
  private final int seconds;

  ToolPoolLoad(int cap, int toolMillis, int seconds) {
    this.cap = cap;
    this.toolMillis = toolMillis;
    this.seconds = seconds;
  }

  /** What the run counted. */
  record Result(
      int cap,
      int toolMillis,
      double offeredPerSecond,
      double capacityPerSecond,
      int sent,
      int results,
      int queuedThenServed,
      int backpressure,
      int backpressureWithRetryAfter,
      int other,
      String otherSample,
      int peak,
      long toolCalls,
      double toolBusyPercent,
      java.util.Map<String, Integer> reasons,
      Timing timing,
      String load) {
    String table() {
      return String.format(
              Locale.ROOT,
              "MCP tool pool `%s`: cap %d (maxRequests, 2 replicas on Redis), service time %d ms"
                  + " (capacity %.0f calls/s), offered %.0f calls/s (%.1fx) open-loop.%n%n"
                  + "| sent | results | of which queued first | TOOL_BACKPRESSURE | with retry_after_ms"
                  + " | other | peak in flight at the tool | calls the tool saw | tool busy (of cap x"
                  + " time) | refusal reasons | load after |%n"
                  + "|---|---|---|---|---|---|---|---|---|---|---|%n"
                  + "| %d | %d | %d | %d | %d | %d%s | %d (cap %d) | %d | %.0f %% | %s | %s |%n",
              TOOL,
              cap,
              toolMillis,
              capacityPerSecond,
              offeredPerSecond,
              offeredPerSecond / capacityPerSecond,
              sent,
              results,
              queuedThenServed,
              backpressure,
              backpressureWithRetryAfter,
              other,
              otherSample.isEmpty() ? "" : " (" + otherSample + ")",
              peak,
              cap,
              toolCalls,
              toolBusyPercent,
              reasons,
              load)
          + timing.table();
    }
  }

  /**
   * Where a served call's time went, per call (ms, p50 / p99 of the served calls): its request path
   * (sent by the client to the tool starting it: the request's ext_proc messages, Sluice's
   * decision, the emulated Envoy's forwarding), its response path (the tool's answer to the
   * client's receipt: the response's ext_proc messages, Sluice's release at the last one), and the
   * slot as Sluice held it ({@code sluice_mcp_tool_service_seconds}: admission to release, mean and
   * max over both replicas). A slot held much longer than the tool's service time with a short
   * response path is held on the request side; with a long response path, on the response side.
   */
  record Timing(
      double requestP50,
      double requestP99,
      double responseP50,
      double responseP99,
      double heldMean,
      double heldMax) {
    String table() {
      return String.format(
          Locale.ROOT,
          "%n| served calls: request path p50 / p99 ms | response path p50 / p99 ms | slot held by"
              + " Sluice mean / max ms |%n|---|---|---|%n| %.1f / %.1f | %.1f / %.1f | %.1f /"
              + " %.1f |%n",
          requestP50,
          requestP99,
          responseP50,
          responseP99,
          heldMean,
          heldMax);
    }
  }

  /** The fake MCP tool: answers each call after the service time; counts calls in flight. */
  static final class Tool implements Upstream, AutoCloseable {
    final ScheduledExecutorService timers = Executors.newScheduledThreadPool(2);
    final AtomicInteger active = new AtomicInteger();
    final AtomicInteger peak = new AtomicInteger();
    final AtomicLong calls = new AtomicLong();
    // per call id: when the tool started it and when it answered (System.nanoTime)
    final java.util.Map<String, long[]> spans = new java.util.concurrent.ConcurrentHashMap<>();
    final int millis;

    Tool(int millis) {
      this.millis = millis;
    }

    @Override
    public CompletableFuture<UpstreamResponse> send(UpstreamRequest request) {
      Matcher m = ID.matcher(request.bodyUtf8());
      String id = m.find() ? m.group(1) : "null";
      calls.incrementAndGet();
      long[] span = {System.nanoTime(), 0};
      spans.put(id, span);
      peak.accumulateAndGet(active.incrementAndGet(), Math::max);
      CompletableFuture<UpstreamResponse> out = new CompletableFuture<>();
      timers.schedule(
          () -> {
            active.decrementAndGet();
            span[1] = System.nanoTime();
            out.complete(
                UpstreamResponse.of(
                    200,
                    HttpHeaders.of("content-type", "application/json"),
                    "{\"jsonrpc\":\"2.0\",\"id\":"
                        + id
                        + ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}"));
          },
          millis,
          TimeUnit.MILLISECONDS);
      return out;
    }

    @Override
    public void close() {
      timers.shutdownNow();
    }
  }

  static String policy(int redisPort, String prefix, int cap) {
    return """
        server:
          grpc: {host: 127.0.0.1, port: 0}
          admin: {host: 127.0.0.1, port: 0}
          shutdownGrace: 1s
        pools:
          mcp: {capacity: 1000000, maxRequests: 1000}
          tool-pdf: {capacity: 1000000, maxRequests: %d, retryAfter: {min: 1s, max: 10s}}
        classes:
          interactive: {rank: 0, reservedShare: 1.0, borrow: true, deadline: 30s, maxQueueWait: 2s, defaultOutputTokens: 16, maxOutputTokens: 64}
        tiers:
          standard: {weight: 1, maxInFlight: 0}
        tenants: {anonymousTier: standard, unknown: admit, unknownTier: standard}
        signals:
          tenant: [{metadata: x-sluice-tenant}]
        routes:
          - {name: mcp, match: {pathPrefix: /mcp}, pool: mcp, class: interactive, format: auto}
        unmatched: {action: admit, pool: mcp, class: interactive}
        responses: {decisionHeader: false, estimateHeader: false}
        decisionLog: {enabled: false}
        limits: {maxBodyBytes: 1MiB}
        replicas: {renewInterval: 100ms, leaseTtl: 2s, keepShareFor: 1s}
        quotas: {keyPrefix: %s}
        rateLimit: {enabled: false, env: {BACKEND_TYPE: redis, REDIS_URL: "127.0.0.1:%d"}}
        mcp: {enabled: true, routes: [mcp], tools: [{name: %s, pool: tool-pdf}]}
        """
        .formatted(cap, prefix, redisPort, TOOL);
  }

  static HttpRequest call(int id) {
    return HttpRequest.post(
            "/mcp",
            "{\"jsonrpc\":\"2.0\",\"id\":"
                + id
                + ",\"method\":\"tools/call\",\"params\":{\"name\":\""
                + TOOL
                + "\",\"arguments\":{\"doc\":\"x\"}}}")
        .routeGrpcInitialMetadata("x-sluice-tenant", "acme")
        .header("accept", "application/json, text/event-stream")
        .build();
  }

  Result run() throws Exception {
    List<SluiceServer> servers = new ArrayList<>();
    List<EnvoyExtProcEmulator> envoys = new ArrayList<>();
    try (BudgetRedis redis = BudgetRedis.start();
        Tool tool = new Tool(toolMillis)) {
      String prefix = "sluice_bench_tool_" + UUID.randomUUID().toString().substring(0, 8) + "_";
      String yaml = policy(redis.port(), prefix, cap);
      FilterConfig filter =
          Rig.benchFilter()
              .messageTimeout(Duration.ofSeconds(10))
              .maxMessageTimeout(Duration.ofSeconds(10))
              .build();
      for (int i = 0; i < 2; i++) {
        SluiceServer s = SluiceServer.start(ConfigLoader.parse(yaml));
        servers.add(s);
        envoys.add(EnvoyExtProcEmulator.connect("127.0.0.1:" + s.grpcPort(), filter, tool));
      }
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      while (!settled(servers, "tool-pdf", cap) && System.nanoTime() < until) {
        Thread.sleep(100);
      }
      double capacity = cap * 1000.0 / toolMillis;
      double offered = 2 * capacity;
      int total = (int) Math.round(offered * seconds);
      long periodNanos = Math.round(1e9 / offered);
      List<CompletableFuture<HttpResult>> answers = new ArrayList<>();
      long[] sentAt = new long[total];
      long[] answeredAt = new long[total];
      long t0 = System.nanoTime();
      long callsBefore = tool.calls.get();
      for (int i = 0; i < total; i++) {
        long wait = t0 + i * periodNanos - System.nanoTime();
        if (wait > 0) {
          TimeUnit.NANOSECONDS.sleep(wait);
        }
        int n = i;
        sentAt[n] = System.nanoTime();
        answers.add(
            envoys
                .get(i % 2)
                .sendAsync(call(i))
                .whenComplete((r, e) -> answeredAt[n] = System.nanoTime()));
      }
      int results = 0;
      int queued = 0;
      int shed = 0;
      int shedTyped = 0;
      int other = 0;
      String sample = "";
      java.util.Map<String, Integer> reasons = new java.util.TreeMap<>();
      org.HdrHistogram.Histogram requestPath = new org.HdrHistogram.Histogram(3);
      org.HdrHistogram.Histogram responsePath = new org.HdrHistogram.Histogram(3);
      for (int i = 0; i < total; i++) {
        HttpResult r =
            answers.get(i).orTimeout(60, TimeUnit.SECONDS).exceptionally(e -> null).join();
        String body = r == null ? "" : r.bodyUtf8();
        if (r != null && r.status() == 200 && body.contains("\"result\"")) {
          long[] span = tool.spans.get(Integer.toString(i));
          if (span != null && span[1] != 0) {
            requestPath.recordValue(Math.max(0, span[0] - sentAt[i]));
            responsePath.recordValue(Math.max(0, answeredAt[i] - span[1]));
          }
          results++;
          queued += r.header("x-sluice-queue-wait-ms").isPresent() ? 1 : 0;
        } else if (r != null && body.contains("TOOL_BACKPRESSURE")) {
          shed++;
          Matcher why = REASON.matcher(body);
          reasons.merge(why.find() ? why.group(1) : "(none)", 1, Integer::sum);
          shedTyped +=
              body.contains("\"retryable\":true") && body.contains("\"retry_after_ms\":") ? 1 : 0;
        } else {
          other++;
          if (sample.isEmpty()) {
            sample = r == null ? "no answer" : r.status() + " " + body;
            sample = sample.length() > 120 ? sample.substring(0, 120) : sample;
          }
        }
      }
      double elapsedMillis = (System.nanoTime() - t0) / 1e6;
      double busy =
          100.0
              * (tool.calls.get() - callsBefore)
              * toolMillis
              / (cap * Math.max(1, elapsedMillis));
      return new Result(
          cap,
          toolMillis,
          offered,
          capacity,
          total,
          results,
          queued,
          shed,
          shedTyped,
          other,
          sample,
          tool.peak.get(),
          tool.calls.get(),
          busy,
          reasons,
          timing(requestPath, responsePath, servers),
          PermitsBench.load());
    } finally {
      envoys.forEach(EnvoyExtProcEmulator::close);
      servers.forEach(SluiceServer::close);
    }
  }

  /** The served calls' paths and the slot as Sluice held it (its own meter, both replicas). */
  static Timing timing(
      org.HdrHistogram.Histogram request,
      org.HdrHistogram.Histogram response,
      List<SluiceServer> servers) {
    double total = 0;
    long count = 0;
    double max = 0;
    for (SluiceServer s : servers) {
      io.micrometer.core.instrument.Timer t =
          s.registry().find(io.sluice.observability.McpMetrics.SERVICE).tag("tool", TOOL).timer();
      if (t != null) {
        total += t.totalTime(TimeUnit.MILLISECONDS);
        count += t.count();
        max = Math.max(max, t.max(TimeUnit.MILLISECONDS));
      }
    }
    return new Timing(
        request.getValueAtPercentile(50) / 1e6,
        request.getValueAtPercentile(99) / 1e6,
        response.getValueAtPercentile(50) / 1e6,
        response.getValueAtPercentile(99) / 1e6,
        count == 0 ? 0 : total / count,
        max);
  }

  /** Every replica leased on {@code pool}, their request slots adding up to {@code slots}. */
  static boolean settled(List<SluiceServer> servers, String pool, int slots) {
    int sum = 0;
    for (SluiceServer s : servers) {
      ShareCoordinator.Status st = s.replicaShares().get(pool);
      if (st == null || st.mode() != ShareCoordinator.Mode.LEASED || st.grantedRequests() <= 0) {
        return false;
      }
      sum += st.grantedRequests();
    }
    return sum == slots;
  }
}
