package io.sluice.bench;

import static io.sluice.bench.ColdAdaptive.find;
import static io.sluice.bench.ColdAdaptive.limitRange;
import static io.sluice.bench.ColdAdaptive.onRedis;
import static io.sluice.bench.ColdAdaptive.prefix;
import static io.sluice.bench.ColdAdaptive.ratio;

import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code cold-knee}. */
@Command(
    name = "cold-knee",
    description =
        "Adaptive limit from cold: ceiling 4x the upstream's knee, floor 1/8 of the"
            + " ceiling; the right static limit vs adaptive starting at the ceiling, the floor and"
            + " a quarter of the ceiling (and after a restart on Redis).")
final class ColdKnee implements Callable<Integer> {
  @Option(names = "--duration", defaultValue = "25", description = "seconds of arrivals per run")
  int durationSeconds = 25;

  @Option(
      names = "--load",
      defaultValue = "1.75",
      description = "offered load as a multiple of what the knee's K slots serve")
  double load = 1.75;

  @Option(
      names = "--skip",
      defaultValue = "10",
      description = "seconds left out of the upstream concurrency mean")
  double skipSeconds = 10;

  @Option(
      names = "--runs",
      split = ",",
      defaultValue = "right,ceiling,floor,quarter,restart",
      description =
          "right (static K), ceiling / floor / quarter (adaptive, start: ceiling / floor /"
              + " 0.25), restart (start: ceiling on Redis, cold then restarted; skipped without"
              + " Redis) (default: ${DEFAULT-VALUE})")
  List<String> runs = List.of("right", "ceiling", "floor", "quarter", "restart");

  @Option(
      names = "--adaptive",
      defaultValue = "",
      description = "extra pools.llm.adaptive settings, YAML flow entries")
  String extraAdaptive = "";

  @Option(names = "--redis", defaultValue = "127.0.0.1:6379", description = "host:port")
  String redis = "127.0.0.1:6379";

  @Option(names = "--out", defaultValue = "target/sluice-bench-cold-knee")
  Path out = Path.of("target/sluice-bench-cold-knee");

  @Option(names = "--quiet", description = "no live progress lines")
  boolean quiet;

  static final int K = Knee.K;
  static final int CEILING = 4 * K;
  static final int FLOOR = CEILING / 8;

  /** The request classes (tests: shorter ones). */
  List<Workload.RequestClass> classes = Knee.classes();

  @Option(
      names = "--warmup",
      defaultValue = "4",
      description = "seconds of a first, unreported run (JIT warm-up) (default: ${DEFAULT-VALUE})")
  int warmup = 4;

  String adaptive(String start) {
    String s = "start: " + start;
    String yaml =
        AdaptiveRuns.policy(
            CEILING,
            FLOOR,
            extraAdaptive.isBlank() ? s : s + ", " + extraAdaptive,
            Knee.CLASSES,
            Knee.HOLD_MILLIS);
    return yaml;
  }

  @Override
  public Integer call() throws Exception {
    List<AdaptiveRuns.Result> results = run(System.out);
    String md = report(results);
    System.out.println();
    System.out.println(md);
    Files.createDirectories(out);
    Files.writeString(out.resolve("cold-knee.md"), md, StandardCharsets.UTF_8);
    System.out.println("chart: " + Knee.chart(results, out.resolve("cold-knee.png")));
    return 0;
  }

  List<AdaptiveRuns.Result> run(PrintStream o) throws Exception {
    Workload w = Knee.workload(classes, durationSeconds, load);
    o.printf(
        Locale.ROOT,
        "cold-knee: simulated LLM K=%d (processor sharing beyond); offered %.1f req/s (%.2fx)"
            + " from the first second for %d s; adaptive ceiling %d, floor %d.%n",
        K,
        w.phases().get(0).ratePerSecond(),
        load,
        durationSeconds,
        CEILING,
        FLOOR);
    if (warmup > 0) {
      o.printf(Locale.ROOT, "%nwarm-up (%d s, not reported)%n", warmup);
      one("warm-up", adaptive("ceiling"), CEILING, Knee.workload(classes, warmup, load), o);
    }
    List<AdaptiveRuns.Result> results = new ArrayList<>();
    String shared = prefix();
    for (String n : runs) {
      switch (n.trim()) {
        case "right" ->
            results.add(
                one(
                    "static " + K + " (right)",
                    AdaptiveRuns.policy(K, 0, "", Knee.CLASSES, Knee.HOLD_MILLIS),
                    K,
                    w,
                    o));
        case "ceiling" ->
            results.add(one("adaptive, start ceiling", adaptive("ceiling"), CEILING, w, o));
        case "floor" -> results.add(one("adaptive, start floor", adaptive("floor"), CEILING, w, o));
        case "quarter" -> results.add(one("adaptive, start 0.25", adaptive("0.25"), CEILING, w, o));
        case "restart" -> {
          if (!BenchNet.reachable(redis)) {
            o.println("cold-knee: no Redis at " + redis + ": restart runs skipped");
            continue;
          }
          String yaml = onRedis(adaptive("ceiling"), redis, shared);
          results.add(one("adaptive, start ceiling, Redis, cold", yaml, CEILING, w, o));
          results.add(one("adaptive, restarted (learned kept)", yaml, CEILING, w, o));
        }
        default ->
            throw new IllegalArgumentException(
                "--runs: " + n + " (expected: right, ceiling, floor, quarter, restart)");
      }
    }
    return results;
  }

  AdaptiveRuns.Result one(String name, String yaml, int ceiling, Workload w, PrintStream o)
      throws Exception {
    o.printf(Locale.ROOT, "%n== run: %s ==%n", name);
    return AdaptiveRuns.run(
        name,
        yaml,
        ceiling,
        w,
        Knee.UPSTREAM,
        Knee.HOLD_MILLIS,
        up -> {},
        List.of(),
        Math.min(skipSeconds, durationSeconds / 2.0),
        o,
        quiet);
  }

  String report(List<AdaptiveRuns.Result> results) {
    if (results.isEmpty()) {
      return "";
    }
    AdaptiveRuns.Result right = find(results, "static");
    long rightInteractive = right == null ? 0 : interactive(right.report());
    double skip = results.get(0).skipSeconds();
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "cold-knee: K = %d, adaptive ceiling %d (4× K), floor %d; offered %.2fx from the"
                + " first second, %d s; upstream concurrency: exact mean from %.0f s.%n%n",
            K,
            CEILING,
            FLOOR,
            load,
            durationSeconds,
            skip));
    b.append(
        "| run | interactive goodput | × right static | all goodput | upstream concurrency"
            + " mean after skip | vs knee | limit after skip | interactive TTFT p95 | limit"
            + " changes | upstream peak: sampled / exact after skip |\n");
    b.append("|---|---|---|---|---|---|---|---|---|---|\n");
    for (AdaptiveRuns.Result r : results) {
      RunReport rep = r.report();
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %.2f | %d | %.1f | %+.0f %% | %s | %s | %s | %s |%n",
              r.name(),
              interactive(rep),
              ratio(interactive(rep), rightInteractive),
              rep.outcomes().completed(),
              r.meanActiveAfterSkip(),
              100 * (r.meanActiveAfterSkip() / K - 1),
              limitRange(r, skip, durationSeconds),
              Tables.ms(rep.ttft().millis("interactive", 95)),
              r.limitChanges().isEmpty() ? "-" : r.limitChanges().toString(),
              ColdAdaptive.peak(r)));
    }
    b.append('\n');
    for (AdaptiveRuns.Result r : results) {
      if (r.adaptive()) {
        b.append(Knee.limitPerSecond(r)).append('\n');
      }
    }
    return b.toString();
  }

  static long interactive(RunReport r) {
    RunReport.Split s = r.byClass().get("interactive");
    return s == null ? 0 : s.completed();
  }
}
