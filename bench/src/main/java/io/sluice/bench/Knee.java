package io.sluice.bench;

import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import io.sluice.upstream.SimulatedLlmUpstream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code knee} bench: a pool configured too high ({@code maxRequests} 32 on an upstream of K =
 * 16 batch slots that slows down beyond them) with a static limit, the same pool with the right
 * static limit (16), and adaptive (ceiling 32, floor 4), one run after the other with the same
 * arrivals: an interactive and a batch class offered above what the 16 slots serve.
 *
 * <pre>java -jar bench/target/sluice-bench.jar knee [--duration 40] [--runs right,high,adaptive]
 * </pre>
 */
@Command(
    name = "knee",
    description =
        "Adaptive limits: a pool configured too high (maxRequests 32 on a 16-slot"
            + " upstream) static vs the right static limit (16) vs adaptive (ceiling 32, floor 4),"
            + " same arrivals above the knee; upstream concurrency, goodput, TTFT.")
final class Knee implements Callable<Integer> {
  @Option(
      names = "--duration",
      defaultValue = "45",
      description = "seconds of arrivals per run, 2..600 (default: ${DEFAULT-VALUE})")
  int durationSeconds = 45;

  @Option(
      names = "--load",
      defaultValue = "1.75",
      description =
          "offered load as a multiple of what the upstream's K slots serve (default:"
              + " ${DEFAULT-VALUE})")
  double load = 1.75;

  @Option(
      names = "--skip",
      defaultValue = "15",
      description =
          "seconds of learning left out of the means after learning (default: ${DEFAULT-VALUE})")
  double skipSeconds = 15;

  @Option(
      names = "--runs",
      split = ",",
      defaultValue = "right,high,adaptive,high64,adaptive64",
      description =
          "which runs, in order: right (static 16), high (static 32), adaptive (ceiling 32, the"
              + " controller's defaults), adaptive-wide (ceiling 32, latency dead band 1.2-1.5),"
              + " high64, adaptive64, adaptive64-wide (the same with 64) (default:"
              + " ${DEFAULT-VALUE})")
  List<String> runs = List.of("right", "high", "adaptive", "high64", "adaptive64");

  @Option(
      names = "--adaptive",
      defaultValue = "",
      description =
          "extra pools.llm.adaptive settings of every adaptive run, YAML flow entries, e.g."
              + " 'interval: 2s, minSamples: 20' (default: none)")
  String extraAdaptive = "";

  @Option(
      names = "--prompts",
      defaultValue = "300-700",
      description =
          "prompt tokens of both classes, uniform MIN-MAX (default: ${DEFAULT-VALUE}); a narrow"
              + " range shows how much of the TTFT signal's spread is the prompts' own")
  String prompts = "300-700";

  @Option(
      names = "--out",
      defaultValue = "target/sluice-bench-knee",
      description = "directory for the chart and the markdown tables (default: ${DEFAULT-VALUE})")
  Path out = Path.of("target/sluice-bench-knee");

  @Option(names = "--quiet", description = "no live progress lines")
  boolean quiet;

  static final SimulatedLlmUpstream.Settings UPSTREAM = Scenario.UPSTREAM;
  static final int K = UPSTREAM.batchSlots();
  static final int FLOOR = 4;
  static final long HOLD_MILLIS = 10_000;
  static final Duration BATCH_DEADLINE = Duration.ofSeconds(20);

  static final String CLASSES =
      """
        interactive: {rank: 0, reservedShare: 0.7, lendableShare: 0.5, borrow: true, deadline: 8s,
                      maxQueueWait: 2s, defaultOutputTokens: 256, maxOutputTokens: 4096}
        batch:       {rank: 1, reservedShare: 0.3, lendableShare: 0.3, borrow: true, deadline: 20s,
                      maxQueueWait: 8s, defaultOutputTokens: 256, maxOutputTokens: 4096}
      """;

  /** The bench's own adaptive setting of the {@code -wide} runs: a wider latency dead band. */
  static final String WIDE = "latency: {growBelow: 1.2, shrinkAbove: 1.5}";

  /**
   * One run: its name, the configured maxRequests, whether it adapts below it, and the adaptive
   * settings it sets itself (empty: the controller's defaults).
   */
  record RunSpec(String name, int maxRequests, boolean adaptive, String settings) {
    static RunSpec named(String n) {
      return switch (n) {
        case "right" -> new RunSpec("static " + K + " (right)", K, false, "");
        case "high" -> new RunSpec("static " + 2 * K + " (too high)", 2 * K, false, "");
        case "adaptive" -> new RunSpec("adaptive " + 2 * K + ", defaults", 2 * K, true, "");
        case "adaptive-wide" ->
            new RunSpec("adaptive " + 2 * K + ", dead band 1.2-1.5", 2 * K, true, WIDE);
        case "high64" -> new RunSpec("static " + 4 * K + " (too high)", 4 * K, false, "");
        case "adaptive64" -> new RunSpec("adaptive " + 4 * K + ", defaults", 4 * K, true, "");
        case "adaptive64-wide" ->
            new RunSpec("adaptive " + 4 * K + ", dead band 1.2-1.5", 4 * K, true, WIDE);
        default ->
            throw new IllegalArgumentException(
                "--runs: "
                    + n
                    + " (expected: right, high, adaptive, adaptive-wide, high64, adaptive64,"
                    + " adaptive64-wide; comma-separated)");
      };
    }

    String policy(String extraAdaptive) {
      String extra =
          settings.isEmpty() || extraAdaptive.isBlank()
              ? settings + extraAdaptive
              : settings + ", " + extraAdaptive;
      return AdaptiveRuns.policy(maxRequests, adaptive ? FLOOR : 0, extra, CLASSES, HOLD_MILLIS);
    }
  }

  /** Interactive chat (60 %, 8 s deadline) and batch (40 %, longer answers, 20 s deadline). */
  static List<Workload.RequestClass> classes() {
    return classes(300, 700);
  }

  /** As {@link #classes()} with prompts of {@code min}..{@code max} tokens. */
  static List<Workload.RequestClass> classes(int min, int max) {
    Workload.RequestClass chat = Scenario.chat("interactive", "interactive", 0.6);
    return List.of(
        Workload.RequestClass.of(
            chat.name(),
            chat.sluiceClass(),
            chat.path(),
            chat.share(),
            min,
            max,
            chat.outputTokensMin(),
            chat.outputTokensMax(),
            chat.deadline(),
            chat.ttftSlo()),
        Workload.RequestClass.of(
            "batch",
            "batch",
            "/v1/chat/completions",
            0.4,
            min,
            max,
            200,
            600,
            BATCH_DEADLINE,
            Duration.ofSeconds(8)));
  }

  static Workload workload(List<Workload.RequestClass> classes, int seconds, double multiple) {
    double cap = io.sluice.harness.LoadGenerator.capacityPerSecond(probe(classes), UPSTREAM);
    return Workload.of(
        classes,
        List.of(
            new Workload.Tenant("acme", 1),
            new Workload.Tenant("globex", 1),
            new Workload.Tenant("initech", 1),
            new Workload.Tenant("umbrella", 1)),
        List.of(
            new Workload.Phase(
                String.format(Locale.ROOT, "%.2fx", multiple),
                Duration.ofSeconds(seconds),
                multiple * cap)),
        0,
        Duration.ZERO,
        Duration.ZERO,
        2,
        classes.stream()
            .map(Workload.RequestClass::deadline)
            .max(Duration::compareTo)
            .orElseThrow()
            .plusSeconds(1),
        42);
  }

  private static Workload probe(List<Workload.RequestClass> classes) {
    return Workload.of(
        classes,
        List.of(new Workload.Tenant("t", 1)),
        List.of(new Workload.Phase("p", Duration.ofSeconds(1), 1)),
        0,
        Duration.ZERO,
        Duration.ZERO,
        0,
        Duration.ZERO,
        1);
  }

  @Override
  public Integer call() throws Exception {
    if (durationSeconds < 2 || durationSeconds > 600) {
      throw new picocli.CommandLine.ParameterException(
          new picocli.CommandLine(this), "--duration: " + durationSeconds + " (expected: 2..600)");
    }
    List<RunSpec> specs = runs.stream().map(n -> RunSpec.named(n.trim())).toList();
    String[] pr = prompts.split("-", 2);
    List<AdaptiveRuns.Result> results;
    try {
      results =
          run(
              specs,
              workload(
                  classes(
                      Integer.parseInt(pr[0].trim()), Integer.parseInt(pr[pr.length - 1].trim())),
                  durationSeconds,
                  load),
              System.out);
    } catch (NumberFormatException e) {
      throw new picocli.CommandLine.ParameterException(
          new picocli.CommandLine(this), "--prompts: " + prompts + " (expected: MIN-MAX tokens)");
    }
    String md = report(results, load);
    System.out.println();
    System.out.println(md);
    Files.createDirectories(out);
    Files.writeString(out.resolve("knee.md"), md, StandardCharsets.UTF_8);
    System.out.println("chart: " + chart(results, out.resolve("knee-limit.png")));
    return 0;
  }

  List<AdaptiveRuns.Result> run(List<RunSpec> specs, Workload w, PrintStream o) throws Exception {
    double cap = io.sluice.harness.LoadGenerator.capacityPerSecond(probe(w.classes()), UPSTREAM);
    o.printf(
        Locale.ROOT,
        "knee: simulated LLM, K=%d slots (processor sharing beyond them), %.1f req/s at full"
            + " speed; offered %.1f req/s (%.2fx) for %.0f s per run, interactive 60%% / batch 40%%;"
            + " means after the first %.0f s.%n",
        K,
        cap,
        w.phases().get(0).ratePerSecond(),
        w.phases().get(0).ratePerSecond() / cap,
        w.duration().toMillis() / 1000.0,
        skipSeconds);
    List<AdaptiveRuns.Result> results = new ArrayList<>();
    for (RunSpec spec : specs) {
      o.printf(Locale.ROOT, "%n== run: %s ==%n", spec.name());
      results.add(
          AdaptiveRuns.run(
              spec.name(),
              spec.policy(extraAdaptive),
              spec.maxRequests(),
              w,
              UPSTREAM,
              HOLD_MILLIS,
              up -> {},
              List.of(),
              Math.min(skipSeconds, w.duration().toMillis() / 2000.0),
              o,
              quiet));
    }
    return results;
  }

  static String report(List<AdaptiveRuns.Result> results, double load) {
    StringBuilder b = new StringBuilder();
    double skip = results.isEmpty() ? 0 : results.get(0).skipSeconds();
    double end = results.isEmpty() ? 0 : results.get(0).report().arrivalSeconds();
    b.append(
        String.format(
            Locale.ROOT,
            "Upstream K = %d slots; offered %.2fx; concurrency and limit over seconds %.0f-%.0f"
                + " (after learning), mean exact (every start and end of a generation), p95 of 100"
                + " ms samples.%n%n",
            K,
            load,
            skip,
            end));
    b.append(
        "| run | maxRequests | mean limit after learning | upstream concurrency mean (vs knee"
            + " 16) | p95 | peak | goodput req/s (interactive / batch) | useful tokens/s |"
            + " interactive TTFT p95 | from arrival | batch TTFT p95 | missed deadline |"
            + " refused (final) | limit changes |\n");
    b.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (AdaptiveRuns.Result r : results) {
      RunReport rep = r.report();
      double secs = rep.arrivalSeconds();
      RunReport.Split in = rep.byClass().get("interactive");
      RunReport.Split ba = rep.byClass().get("batch");
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %d%s | %s | %.1f (%+.0f%%) | %.0f | %d | %.2f (%.2f / %.2f) | %.0f | %s | %s |"
                  + " %s | %d | %d | %s |\n",
              r.name(),
              r.ceiling(),
              r.adaptive() ? " (ceiling), floor " + FLOOR : " (static)",
              r.adaptive()
                  ? String.format(Locale.ROOT, "%.1f", r.meanLimit(skip, end))
                  : "n/a (static)",
              r.meanActiveAfterSkip(),
              100 * (r.meanActiveAfterSkip() / K - 1),
              r.activePercentile(skip, end, 95),
              r.peakActiveAfterSkip(),
              rep.goodputPerSecond(),
              in == null ? 0 : in.completed() / secs,
              ba == null ? 0 : ba.completed() / secs,
              r.usefulTokensPerSecond(),
              Tables.ms(rep.ttft().millis("interactive", 95)),
              Tables.ms(rep.ttft().fromArrivalMillis("interactive", 95)),
              Tables.ms(rep.ttft().millis("batch", 95)),
              rep.outcomes().deadlineMissed(),
              rep.outcomes().rejectedFinalTotal(),
              r.limitChanges().isEmpty() ? "-" : r.limitChanges().toString()));
    }
    b.append('\n');
    List<RunReport> reports = results.stream().map(AdaptiveRuns.Result::report).toList();
    b.append(Tables.summary(reports)).append('\n');
    b.append(Tables.ttft(reports)).append('\n');
    b.append(Tables.rejections(reports)).append('\n');
    for (AdaptiveRuns.Result r : results) {
      if (r.adaptive()) {
        b.append(limitPerSecond(r)).append('\n');
        b.append(AdaptiveRuns.limitChanges(r)).append('\n');
      }
    }
    return b.toString();
  }

  /** The adaptive limit at each whole second (the first sample at or after it), one line. */
  static String limitPerSecond(AdaptiveRuns.Result r) {
    StringBuilder b = new StringBuilder(r.name() + ", limit at each second:");
    int next = 0;
    for (AdaptiveRuns.Sample s : r.samples()) {
      if (s.seconds() >= next) {
        b.append(next % 10 == 0 ? " |" + next + "s: " : " ").append(s.limitRequests());
        next++;
      }
    }
    return b.append('\n').toString();
  }

  static Path chart(List<AdaptiveRuns.Result> results, Path file) throws IOException {
    List<XYChart> charts = new ArrayList<>();
    for (AdaptiveRuns.Result r : results) {
      XYChart c =
          new XYChartBuilder()
              .width(900)
              .height(300)
              .title(
                  r.name()
                      + ": upstream active"
                      + (r.adaptive() ? ", limit" : "")
                      + " (100 ms samples); knee K = "
                      + K)
              .xAxisTitle("time (s)")
              .yAxisTitle("requests")
              .build();
      c.getStyler().setYAxisMin(0.0).setYAxisMax((double) Math.max(2 * K, r.ceiling()) + 2);
      List<Double> x = new ArrayList<>();
      List<Double> active = new ArrayList<>();
      List<Double> limit = new ArrayList<>();
      List<Double> knee = new ArrayList<>();
      for (AdaptiveRuns.Sample s : r.samples()) {
        x.add(s.seconds());
        active.add((double) s.upstreamActive());
        limit.add((double) s.limitRequests());
        knee.add((double) K);
      }
      if (x.isEmpty()) {
        continue;
      }
      c.addSeries("upstream active", x, active).setMarker(SeriesMarkers.NONE);
      c.addSeries(r.adaptive() ? "adaptive limit" : "limit (static)", x, limit)
          .setMarker(SeriesMarkers.NONE);
      c.addSeries("knee (K)", x, knee).setMarker(SeriesMarkers.NONE);
      charts.add(c);
    }
    return Charts.save(charts, charts.size(), 1, file);
  }
}
