package io.sluice.bench;

import io.sluice.emulator.FilterConfig;
import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import io.sluice.upstream.SimulatedLlmUpstream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The cold-start benches of the adaptive limit: every run on a fresh server with no learned state,
 * offered above the upstream's capacity from the first second, the runs compared in one invocation
 * (the machine is shared: compare ratios of one run, not figures of different ones); a run after a
 * restart keeps the learned limit in Redis when one answers.
 *
 * <ul>
 *   <li>{@code cold-throttle}: an upstream that answers 429 above {@code --throttle} in flight and
 *       has an outage of 503 + Retry-After; the pool static at its ceiling, no admission at all,
 *       and adaptive (start: ceiling); response body STREAMED and NONE.
 *   <li>{@code cold-knee}: a pool whose ceiling is 4× the upstream's knee, floor 1/8 of the
 *       ceiling: the right static limit against adaptive starting at the ceiling, the floor and a
 *       quarter of the ceiling.
 * </ul>
 */
final class ColdAdaptive {
  private ColdAdaptive() {}

  /** A Redis policy: the store at {@code redis}, keys under {@code prefix}. */
  static String onRedis(String yaml, String redis, String prefix) {
    String out =
        yaml.replace(
            "rateLimit: {enabled: false}\n",
            "rateLimit: {enabled: false, env: {BACKEND_TYPE: redis, REDIS_URL: \""
                + redis
                + "\"}}\nquotas: {keyPrefix: "
                + prefix
                + "}\n");
    if (out.equals(yaml)) {
      throw new IllegalStateException("bench policy changed shape; update ColdAdaptive.onRedis");
    }
    return out;
  }

  static String prefix() {
    return "coldbench" + Long.toHexString(System.nanoTime()) + "_";
  }

  /** Min, max and mean of the sampled limit within [from, to); "-" when no sample. */
  static String limitRange(AdaptiveRuns.Result r, double from, double to) {
    List<AdaptiveRuns.Sample> s = r.between(from, to);
    if (s.isEmpty() || !r.adaptive()) {
      return "-";
    }
    int min = s.stream().mapToInt(AdaptiveRuns.Sample::limitRequests).min().orElse(0);
    int max = s.stream().mapToInt(AdaptiveRuns.Sample::limitRequests).max().orElse(0);
    return String.format(Locale.ROOT, "%d–%d (%.1f)", min, max, r.meanLimit(from, to));
  }

  /**
   * The upstream's peak concurrency: the most running in any 100 ms sample of the whole run, and
   * the exact peak from the run's skip to its end ("safety holds throughout": never above the
   * ceiling).
   */
  static String peak(AdaptiveRuns.Result r) {
    int sampled =
        r.samples().stream().mapToInt(AdaptiveRuns.Sample::upstreamActive).max().orElse(0);
    return sampled + " / " + r.peakActiveAfterSkip();
  }

  /**
   * The upstream's own refusals with {@code status}: as Sluice types them now ({@code
   * upstream_rate_limited} for 429, {@code upstream_unavailable} for 503, in {@code
   * x-sluice-reason}) or untyped ({@code upstream_429}, {@code upstream_503}: an answer without
   * Sluice's reason).
   */
  static long upstream(RunReport r, String status) {
    String typed = "429".equals(status) ? "upstream_rate_limited" : "upstream_unavailable";
    return r.refusals().byReason().getOrDefault("upstream_" + status, 0L)
        + r.refusals().byReason().getOrDefault(typed, 0L);
  }

  static long sluiceRefusals(RunReport r) {
    return r.refusals().byReason().entrySet().stream()
        .filter(e -> !e.getKey().startsWith("upstream_"))
        .mapToLong(java.util.Map.Entry::getValue)
        .sum();
  }

  static double ratio(double a, double b) {
    return b <= 0 ? Double.NaN : a / b;
  }

  /** {@code cold-throttle}. */
  @Command(
      name = "cold-throttle",
      description =
          "Adaptive limit from cold: an upstream that answers 429 above --throttle in"
              + " flight and has a 503 + Retry-After outage; static at the ceiling, no admission,"
              + " adaptive (and after a restart on Redis); response body STREAMED and NONE.")
  static final class ColdThrottle implements Callable<Integer> {
    @Option(names = "--ceiling", defaultValue = "16", description = "the pool's maxRequests")
    int ceiling = 16;

    @Option(
        names = "--throttle",
        defaultValue = "10",
        description = "the upstream answers 429 to a request that would make more run")
    int throttle = 10;

    @Option(
        names = "--load",
        defaultValue = "1.75",
        description = "offered load as a multiple of what --throttle requests serve")
    double load = 1.75;

    @Option(names = "--before", defaultValue = "10", description = "seconds before the outage")
    int before = 10;

    @Option(names = "--outage", defaultValue = "4", description = "seconds of the outage")
    int outage = 4;

    @Option(names = "--after", defaultValue = "10", description = "seconds after the outage")
    int after = 10;

    @Option(
        names = "--body",
        split = ",",
        defaultValue = "streamed,none",
        description = "response body modes, each a set of runs (default: ${DEFAULT-VALUE})")
    List<String> bodies = List.of("streamed", "none");

    @Option(
        names = "--runs",
        split = ",",
        defaultValue = "static,none,adaptive,restart",
        description =
            "static (at the ceiling), none (no admission: a cap of 10000), adaptive (start:"
                + " ceiling), restart (adaptive on Redis, cold then restarted with the learned"
                + " limit kept; skipped without Redis) (default: ${DEFAULT-VALUE})")
    List<String> runs = List.of("static", "none", "adaptive", "restart");

    @Option(
        names = "--adaptive",
        defaultValue = "",
        description = "extra pools.llm.adaptive settings, YAML flow entries")
    String extraAdaptive = "";

    @Option(names = "--redis", defaultValue = "127.0.0.1:6379", description = "host:port")
    String redis = "127.0.0.1:6379";

    @Option(names = "--out", defaultValue = "target/sluice-bench-cold-throttle")
    Path out = Path.of("target/sluice-bench-cold-throttle");

    @Option(names = "--quiet", description = "no live progress lines")
    boolean quiet;

    @Option(
        names = "--warmup",
        defaultValue = "4",
        description =
            "seconds of a first, unreported run (JIT warm-up: otherwise the first run compared"
                + " pays for it) (default: ${DEFAULT-VALUE})")
    int warmup = 4;

    static final Duration CEILING_RETRY_AFTER = Duration.ofSeconds(1);
    static final Duration OUTAGE_RETRY_AFTER = Duration.ofSeconds(2);

    /** The request classes (tests: shorter ones). */
    List<Workload.RequestClass> classes = Knee.classes();

    int floor() {
      return Math.max(1, ceiling / 4);
    }

    Workload workload() {
      Workload k = Knee.workload(classes, 1, 1.0);
      double rate = k.phases().get(0).ratePerSecond() * load * throttle / Knee.K;
      return Throttle.outageWorkload(k, classes, rate, before, outage, after);
    }

    @Override
    public Integer call() throws Exception {
      Files.createDirectories(out);
      StringBuilder md = new StringBuilder();
      for (String body : bodies) {
        FilterConfig.BodyMode mode =
            FilterConfig.BodyMode.valueOf(body.trim().toUpperCase(Locale.ROOT));
        List<AdaptiveRuns.Result> results = run(mode, System.out);
        String table = report(results, mode);
        md.append(table).append('\n');
        System.out.println();
        System.out.println(table);
        String png = "cold-throttle-" + mode.name().toLowerCase(Locale.ROOT) + ".png";
        System.out.println("chart: " + Throttle.chart(results, out.resolve(png)));
      }
      Files.writeString(out.resolve("cold-throttle.md"), md.toString(), StandardCharsets.UTF_8);
      return 0;
    }

    List<AdaptiveRuns.Result> run(FilterConfig.BodyMode mode, PrintStream o) throws Exception {
      Workload w = workload();
      o.printf(
          Locale.ROOT,
          "cold-throttle (%s): simulated LLM K=%d; 429 + retry-after %d s above %d running, 503 +"
              + " retry-after %d s from %d s to %d s; offered %.1f req/s (%.2fx what %d serve) from"
              + " the first second; pool ceiling %d, adaptive floor %d.%n",
          mode,
          Knee.K,
          CEILING_RETRY_AFTER.toSeconds(),
          throttle,
          OUTAGE_RETRY_AFTER.toSeconds(),
          before,
          before + outage,
          w.phases().get(0).ratePerSecond(),
          load,
          throttle,
          ceiling,
          floor());
      if (warmup > 0) {
        o.printf(Locale.ROOT, "%nwarm-up (%d s, not reported)%n", warmup);
        AdaptiveRuns.run(
            "warm-up",
            policy(ceiling, floor()),
            ceiling,
            Knee.workload(classes, warmup, load * throttle / Knee.K),
            Knee.UPSTREAM,
            Knee.HOLD_MILLIS,
            up -> up.concurrencyCeiling(throttle, 429, CEILING_RETRY_AFTER),
            List.of(),
            0,
            o,
            true,
            x -> {},
            x -> {},
            mode);
      }
      List<AdaptiveRuns.Result> results = new ArrayList<>();
      boolean redisUp = BenchNet.reachable(redis);
      String shared = prefix();
      for (String n : runs) {
        switch (n.trim()) {
          case "static" ->
              results.add(one("static " + ceiling, policy(ceiling, 0), ceiling, w, mode, o));
          case "none" -> results.add(one("no admission", policy(10_000, 0), ceiling, w, mode, o));
          case "adaptive" ->
              results.add(
                  one("adaptive " + ceiling, policy(ceiling, floor()), ceiling, w, mode, o));
          case "restart" -> {
            if (!redisUp) {
              o.println("cold-throttle: no Redis at " + redis + ": restart runs skipped");
              continue;
            }
            String yaml = onRedis(policy(ceiling, floor()), redis, shared);
            results.add(one("adaptive " + ceiling + ", Redis, cold", yaml, ceiling, w, mode, o));
            results.add(one("adaptive " + ceiling + ", restarted", yaml, ceiling, w, mode, o));
          }
          default ->
              throw new IllegalArgumentException(
                  "--runs: " + n + " (expected: static, none, adaptive, restart)");
        }
      }
      return results;
    }

    String policy(int maxRequests, int floor) {
      return AdaptiveRuns.policy(maxRequests, floor, extraAdaptive, Knee.CLASSES, Knee.HOLD_MILLIS);
    }

    AdaptiveRuns.Result one(
        String name,
        String yaml,
        int chartCeiling,
        Workload w,
        FilterConfig.BodyMode mode,
        PrintStream o)
        throws Exception {
      String full = name + " (" + mode.name().toLowerCase(Locale.ROOT) + ")";
      o.printf(Locale.ROOT, "%n== run: %s ==%n", full);
      return AdaptiveRuns.run(
          full,
          yaml,
          chartCeiling,
          w,
          Knee.UPSTREAM,
          Knee.HOLD_MILLIS,
          up -> up.concurrencyCeiling(throttle, 429, CEILING_RETRY_AFTER),
          List.of(
              new AdaptiveRuns.Action(before, up -> up.throttle(503, OUTAGE_RETRY_AFTER)),
              new AdaptiveRuns.Action(before + outage, SimulatedLlmUpstream::stopThrottling)),
          Math.min(5, before),
          o,
          quiet,
          x -> {},
          s -> {},
          mode);
    }

    String report(List<AdaptiveRuns.Result> results, FilterConfig.BodyMode mode) {
      if (results.isEmpty()) {
        return "";
      }
      AdaptiveRuns.Result stat = find(results, "static");
      AdaptiveRuns.Result none = find(results, "no admission");
      StringBuilder b = new StringBuilder();
      b.append(
          String.format(
              Locale.ROOT,
              "cold-throttle, response body %s: 429 above %d running, outage %d-%d s, arrivals"
                  + " until %d s; limit ranges: min-max (mean) of 100 ms samples.%n%n",
              mode,
              throttle,
              before,
              before + outage,
              before + outage + after));
      b.append(
          "| run | goodput | × static | × no admission | upstream 429 | × static | upstream 503 |"
              + " Sluice refusals | limit 5 s → outage | limit from outage end + 1 s |"
              + " limit changes | upstream peak: sampled / exact after skip |\n");
      b.append("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
      for (AdaptiveRuns.Result r : results) {
        RunReport rep = r.report();
        b.append(
            String.format(
                Locale.ROOT,
                "| %s | %d | %.2f | %.2f | %d | %.2f | %d | %d | %s | %s | %s | %s |%n",
                r.name(),
                rep.outcomes().completed(),
                stat == null
                    ? Double.NaN
                    : ratio(rep.outcomes().completed(), stat.report().outcomes().completed()),
                none == null
                    ? Double.NaN
                    : ratio(rep.outcomes().completed(), none.report().outcomes().completed()),
                upstream(rep, "429"),
                stat == null
                    ? Double.NaN
                    : ratio(upstream(rep, "429"), upstream(stat.report(), "429")),
                upstream(rep, "503"),
                sluiceRefusals(rep),
                limitRange(r, 5, before),
                limitRange(r, before + outage + 1, before + outage + after),
                r.limitChanges().isEmpty() ? "-" : r.limitChanges().toString(),
                peak(r)));
      }
      b.append('\n');
      b.append(AdaptiveRuns.refusals(results)).append('\n');
      for (AdaptiveRuns.Result r : results) {
        if (r.adaptive()) {
          b.append(Knee.limitPerSecond(r)).append('\n');
        }
      }
      return b.toString();
    }
  }

  static AdaptiveRuns.@org.jspecify.annotations.Nullable Result find(
      List<AdaptiveRuns.Result> results, String prefix) {
    for (AdaptiveRuns.Result r : results) {
      if (r.name().startsWith(prefix)) {
        return r;
      }
    }
    return null;
  }
}
