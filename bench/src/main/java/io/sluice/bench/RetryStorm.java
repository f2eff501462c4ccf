package io.sluice.bench;

import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.emulator.EnvoyExtProcEmulator;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.harness.Rig;
import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamResponse;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code retry-storm} bench: an upstream that answers 503 (Retry-After 2 s) to everything
 * during an outage window; two tenants at the same arrival rate: well-behaved clients (one
 * idempotency key per operation, a retry only after the Retry-After they were given, at most 3
 * attempts) and storm clients (a retry at once on any failure, ignoring Retry-After, up to 5
 * attempts; half send the SDK's {@code x-stainless-retry-count}, half an idempotency key). Three
 * runs, same arrivals: no storm, storm with the retry budget off, storm with it on.
 *
 * <pre>java -jar bench/target/sluice-bench.jar retry-storm [--rate 20] [--outage 10]</pre>
 */
@Command(
    name = "retry-storm",
    description =
        "Retry control: an upstream outage window, storm clients retrying at once (5"
            + " attempts) next to well-behaved ones; amplification at the upstream, well-behaved"
            + " goodput and upstream load, retry budget off vs on.")
final class RetryStorm implements Callable<Integer> {
  @Option(names = "--rate", defaultValue = "20", description = "operations/s per tenant")
  double rate = 20;

  @Option(names = "--before", defaultValue = "10", description = "seconds before the outage")
  int before = 10;

  @Option(names = "--outage", defaultValue = "10", description = "seconds of outage")
  int outage = 10;

  @Option(names = "--after", defaultValue = "15", description = "seconds after the outage")
  int after = 15;

  @Option(names = "--service-ms", defaultValue = "200", description = "upstream service time")
  int serviceMillis = 200;

  @Option(names = "--max-requests", defaultValue = "16", description = "the pool's maxRequests")
  int maxRequests = 16;

  @Option(
      names = "--out",
      defaultValue = "target/sluice-bench-retry-storm",
      description = "directory for the chart and the markdown table")
  Path out = Path.of("target/sluice-bench-retry-storm");

  static final int GOOD_ATTEMPTS = 3;
  static final int STORM_ATTEMPTS = 5;
  static final int OUTAGE_RETRY_AFTER_SECONDS = 2;

  @Override
  public Integer call() throws Exception {
    PrintStream o = System.out;
    o.printf(
        Locale.ROOT,
        "retry-storm: %.0f operations/s per tenant (good, storm), upstream %d ms per request,"
            + " 503 + Retry-After %d s from %d s to %d s, pool maxRequests %d%n",
        rate,
        serviceMillis,
        OUTAGE_RETRY_AFTER_SECONDS,
        before,
        before + outage,
        maxRequests);
    int[] kept = {before, outage, after};
    before = 5; // a short warm-up run, not reported: the first run must not pay for the JIT
    outage = 1;
    after = 1;
    run("warm-up (not reported)", true, true, o);
    before = kept[0];
    outage = kept[1];
    after = kept[2];
    List<Result> results = new ArrayList<>();
    results.add(run("no storm", false, true, o));
    results.add(run("storm, budget off", true, false, o));
    results.add(run("storm, budget on", true, true, o));
    String md = report(results);
    o.println();
    o.println(md);
    Files.createDirectories(out);
    Files.writeString(out.resolve("retry-storm.md"), md, StandardCharsets.UTF_8);
    o.println("chart: " + chart(results, out.resolve("retry-storm-upstream.png")));
    return 0;
  }

  String policy(boolean budget) {
    return """
        server:
          grpc: {host: 127.0.0.1, port: 0}
          admin: {host: 127.0.0.1, port: 0}
          shutdownGrace: 1s
          warmup: {enabled: false}
        pools:
          llm: {capacity: 100000000, maxRequests: %d, retryAfter: {min: 1s, max: 10s}}
        classes:
          interactive: {rank: 0, reservedShare: 1.0, deadline: 60s, maxQueueWait: 0s,
                        defaultOutputTokens: 10, maxOutputTokens: 100}
        tiers: {standard: {weight: 1, maxInFlight: 0}}
        tenants: {anonymousTier: standard, unknown: admit, unknownTier: standard}
        signals:
          tenant: [{metadata: x-sluice-tenant}]
          operationId: [{header: idempotency-key}]
        routes:
          - {name: chat, match: {pathPrefix: /v1/chat/completions}, pool: llm, class: interactive,
             format: openai-chat}
        responses: {decisionHeader: false, estimateHeader: false}
        decisionLog: {enabled: false}
        rateLimit: {enabled: false}
        retries: {budget: {enabled: %s, maxTokens: 10, tokenRatio: 0.1}}
        """
        .formatted(maxRequests, budget);
  }

  /** One run's counts; per-second upstream arrivals. */
  record Result(
      String name,
      int goodOps,
      int goodOk,
      int stormOps,
      int stormOk,
      long upstreamGood,
      long upstreamStorm,
      long upstreamStormOutageAndAfter,
      long stormOpsOutageAndAfter,
      double[] upstreamPerSecond,
      int seconds) {}

  Result run(String name, boolean storm, boolean budget, PrintStream o) throws Exception {
    o.printf(Locale.ROOT, "== run: %s ==%n", name);
    int seconds = before + outage + after;
    AtomicLongArray perSecond = new AtomicLongArray(seconds + 60);
    long[] upstreamBy = new long[2];
    long[] stormLater = new long[1];
    ScheduledExecutorService timers = Executors.newScheduledThreadPool(2);
    long start = System.nanoTime();
    Upstream upstream =
        req -> {
          long at = System.nanoTime() - start;
          int s = (int) (at / 1_000_000_000L);
          perSecond.incrementAndGet(Math.min(s, perSecond.length() - 1));
          boolean isStorm = req.headers().first("x-bench-group").orElse("").equals("storm");
          synchronized (upstreamBy) {
            upstreamBy[isStorm ? 1 : 0]++;
            if (isStorm && s >= before) {
              stormLater[0]++;
            }
          }
          CompletableFuture<UpstreamResponse> f = new CompletableFuture<>();
          if (s >= before && s < before + outage) {
            f.complete(
                UpstreamResponse.of(
                    503,
                    HttpHeaders.of(
                        "content-type",
                        "application/json",
                        "retry-after",
                        Integer.toString(OUTAGE_RETRY_AFTER_SECONDS)),
                    "{\"error\":{\"type\":\"overloaded\"}}"));
          } else {
            timers.schedule(
                () ->
                    f.complete(
                        UpstreamResponse.of(
                            200,
                            HttpHeaders.of("content-type", "application/json"),
                            "{\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,"
                                + "\"completion_tokens\":10,\"total_tokens\":20}}")),
                serviceMillis,
                TimeUnit.MILLISECONDS);
          }
          return f;
        };
    AtomicInteger goodOps = new AtomicInteger();
    AtomicInteger goodOk = new AtomicInteger();
    AtomicInteger stormOps = new AtomicInteger();
    AtomicInteger stormOk = new AtomicInteger();
    AtomicInteger stormOpsLater = new AtomicInteger();
    List<CompletableFuture<Boolean>> ops = new ArrayList<>();
    try (SluiceServer server = SluiceServer.start(ConfigLoader.parse(policy(budget)));
        EnvoyExtProcEmulator envoy =
            EnvoyExtProcEmulator.connect(
                "127.0.0.1:" + server.grpcPort(), Rig.benchFilter().build(), upstream)) {
      long periodNanos = (long) (1e9 / rate);
      long n = (long) (seconds * rate);
      for (long i = 0; i < n; i++) {
        long due = start + i * periodNanos;
        long wait = due - System.nanoTime();
        if (wait > 0) {
          TimeUnit.NANOSECONDS.sleep(wait);
        }
        boolean later = (System.nanoTime() - start) / 1_000_000_000L >= before;
        ops.add(
            operation(envoy, timers, "good", i, GOOD_ATTEMPTS, false)
                .whenComplete((ok, e) -> count(goodOps, goodOk, ok)));
        if (storm) {
          if (later) {
            stormOpsLater.incrementAndGet();
          }
          ops.add(
              operation(envoy, timers, "storm", i, STORM_ATTEMPTS, true)
                  .whenComplete((ok, e) -> count(stormOps, stormOk, ok)));
        }
      }
      CompletableFuture.allOf(ops.toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
    } finally {
      timers.shutdownNow();
    }
    double[] ps = new double[seconds + 5];
    for (int i = 0; i < ps.length; i++) {
      ps[i] = perSecond.get(i);
    }
    Result r;
    synchronized (upstreamBy) {
      r =
          new Result(
              name,
              goodOps.get(),
              goodOk.get(),
              stormOps.get(),
              stormOk.get(),
              upstreamBy[0],
              upstreamBy[1],
              stormLater[0],
              stormOpsLater.get(),
              ps,
              seconds);
    }
    o.printf(
        Locale.ROOT,
        "  good %d/%d ok, storm %d/%d ok, upstream requests good %d storm %d%n",
        r.goodOk(),
        r.goodOps(),
        r.stormOk(),
        r.stormOps(),
        r.upstreamGood(),
        r.upstreamStorm());
    return r;
  }

  private static void count(AtomicInteger ops, AtomicInteger ok, Boolean success) {
    ops.incrementAndGet();
    if (Boolean.TRUE.equals(success)) {
      ok.incrementAndGet();
    }
  }

  /**
   * One client operation: its attempts, by the group's retry behaviour; true when one got a 2xx.
   */
  private static CompletableFuture<Boolean> operation(
      EnvoyExtProcEmulator envoy,
      ScheduledExecutorService timers,
      String group,
      long id,
      int maxAttempts,
      boolean storm) {
    CompletableFuture<Boolean> done = new CompletableFuture<>();
    attempt(envoy, timers, group, id, 1, maxAttempts, storm, done);
    return done;
  }

  private static void attempt(
      EnvoyExtProcEmulator envoy,
      ScheduledExecutorService timers,
      String group,
      long id,
      int n,
      int maxAttempts,
      boolean storm,
      CompletableFuture<Boolean> done) {
    HttpRequest.Builder b =
        HttpRequest.post(
                "/v1/chat/completions",
                "{\"model\":\"gpt-4o\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\","
                    + "\"content\":\"hello\"}]}")
            .routeGrpcInitialMetadata("x-sluice-tenant", group)
            .header("x-bench-group", group);
    if (storm && id % 2 == 0) {
      b.header("x-stainless-retry-count", Integer.toString(n - 1)); // an SDK's counter
    } else {
      b.header("idempotency-key", group + "-" + id);
    }
    envoy
        .sendAsync(b.build())
        .whenComplete(
            (r, e) -> {
              int status = r == null ? 0 : r.status();
              if (status / 100 == 2) {
                done.complete(true);
                return;
              }
              if (n >= maxAttempts) {
                done.complete(false);
                return;
              }
              long delayMillis = storm ? 0 : retryAfterMillis(r);
              Runnable next =
                  () -> attempt(envoy, timers, group, id, n + 1, maxAttempts, storm, done);
              if (delayMillis <= 0) {
                next.run();
              } else {
                timers.schedule(next, delayMillis, TimeUnit.MILLISECONDS);
              }
            });
  }

  private static long retryAfterMillis(HttpResult r) {
    if (r == null) {
      return 1000;
    }
    try {
      return Long.parseLong(r.header("retry-after").orElse("1").trim()) * 1000;
    } catch (NumberFormatException e) {
      return 1000;
    }
  }

  String report(List<Result> rs) {
    Result base = rs.get(0);
    StringBuilder b = new StringBuilder();
    b.append(
        "| run | storm amplification at the upstream (outage + after) | storm amplification (whole"
            + " run) | well-behaved goodput | vs no storm | upstream req/s during outage | upstream"
            + " req/s, 5 s after | upstream req/s before |\n");
    b.append("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (Result r : rs) {
      double goodput = r.goodOps() == 0 ? 0 : (double) r.goodOk() / r.goodOps();
      double baseGoodput = base.goodOps() == 0 ? 0 : (double) base.goodOk() / base.goodOps();
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %s | %s | %.3f | %.3f | %.1f | %.1f | %.1f |%n",
              r.name(),
              r.stormOpsOutageAndAfter() == 0
                  ? "-"
                  : String.format(
                      Locale.ROOT,
                      "%.2f",
                      (double) r.upstreamStormOutageAndAfter() / r.stormOpsOutageAndAfter()),
              r.stormOps() == 0
                  ? "-"
                  : String.format(Locale.ROOT, "%.2f", (double) r.upstreamStorm() / r.stormOps()),
              goodput,
              baseGoodput == 0 ? 0 : goodput / baseGoodput,
              mean(r.upstreamPerSecond(), before, before + outage),
              mean(r.upstreamPerSecond(), before + outage, before + outage + 5),
              mean(r.upstreamPerSecond(), 1, before)));
    }
    return b.toString();
  }

  private static double mean(double[] v, int from, int to) {
    double s = 0;
    int n = 0;
    for (int i = from; i < to && i < v.length; i++) {
      s += v[i];
      n++;
    }
    return n == 0 ? 0 : s / n;
  }

  Path chart(List<Result> rs, Path file) throws java.io.IOException {
    XYChart c =
        new XYChartBuilder()
            .width(900)
            .height(360)
            .title(
                String.format(
                    Locale.ROOT,
                    "retry-storm: upstream requests per second; outage %d-%d s",
                    before,
                    before + outage))
            .xAxisTitle("time (s)")
            .yAxisTitle("upstream requests / s")
            .build();
    for (Result r : rs) {
      List<Double> x = new ArrayList<>();
      List<Double> y = new ArrayList<>();
      for (int i = 0; i < r.seconds(); i++) {
        x.add((double) i);
        y.add(r.upstreamPerSecond()[i]);
      }
      c.addSeries(r.name(), x, y).setMarker(SeriesMarkers.NONE);
    }
    return Charts.save(List.of(c), 1, 1, file);
  }
}
