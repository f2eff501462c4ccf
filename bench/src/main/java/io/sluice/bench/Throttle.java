package io.sluice.bench;

import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
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
 * The {@code throttle} bench: the simulated upstream answers 429 with Retry-After whenever a
 * request would make more than {@code --ceiling} run at once ({@code concurrencyCeiling}) and
 * answers everything 503 with Retry-After during an outage window in the middle of the run; a
 * static limit above that ceiling against an adaptive one (same ceiling in the policy), same
 * arrivals.
 *
 * <pre>java -jar bench/target/sluice-bench.jar throttle [--ceiling 12] [--outage 10]</pre>
 */
@Command(
    name = "throttle",
    description =
        "Adaptive limits: an upstream that answers 429 + Retry-After above N in flight"
            + " and 503 + Retry-After during an outage window; a static limit above N vs adaptive:"
            + " upstream 429s, refusals and their Retry-After, 504s, recovery after the window.")
final class Throttle implements Callable<Integer> {
  @Option(
      names = "--ceiling",
      defaultValue = "12",
      description =
          "the upstream answers 429 to a request that would make more than this many run"
              + " (default: ${DEFAULT-VALUE})")
  int ceiling = 12;

  @Option(
      names = "--max-requests",
      defaultValue = "32",
      description =
          "the pool's maxRequests: the static limit, and the adaptive runs' ceiling (default:"
              + " ${DEFAULT-VALUE})")
  int maxRequests = 32;

  @Option(
      names = "--before",
      defaultValue = "20",
      description = "seconds of arrivals before the outage (default: ${DEFAULT-VALUE})")
  int beforeSeconds = 20;

  @Option(
      names = "--outage",
      defaultValue = "10",
      description = "seconds of the outage window (default: ${DEFAULT-VALUE})")
  int outageSeconds = 10;

  @Option(
      names = "--after",
      defaultValue = "20",
      description = "seconds of arrivals after the outage (default: ${DEFAULT-VALUE})")
  int afterSeconds = 20;

  @Option(
      names = "--load",
      defaultValue = "1.5",
      description =
          "offered load as a multiple of what --ceiling requests at full speed serve (default:"
              + " ${DEFAULT-VALUE})")
  double load = 1.5;

  @Option(
      names = "--runs",
      split = ",",
      defaultValue = "static,adaptive,adaptive-wide",
      description =
          "which runs, in order: static, adaptive (the controller's defaults), adaptive-wide"
              + " (latency dead band 1.2-1.5, as knee's) (default: ${DEFAULT-VALUE})")
  List<String> runs = List.of("static", "adaptive", "adaptive-wide");

  @Option(
      names = "--adaptive",
      defaultValue = "",
      description =
          "extra pools.llm.adaptive settings of the adaptive run, YAML flow entries (default: the"
              + " controller's)")
  String extraAdaptive = "";

  @Option(
      names = "--out",
      defaultValue = "target/sluice-bench-throttle",
      description = "directory for the chart and the markdown tables (default: ${DEFAULT-VALUE})")
  Path out = Path.of("target/sluice-bench-throttle");

  @Option(names = "--quiet", description = "no live progress lines")
  boolean quiet;

  static final int FLOOR = 4;
  static final Duration CEILING_RETRY_AFTER = Duration.ofSeconds(1);
  static final Duration OUTAGE_RETRY_AFTER = Duration.ofSeconds(2);
  static final int OUTAGE_STATUS = 503;

  @Override
  public Integer call() throws Exception {
    if (beforeSeconds < 1 || outageSeconds < 1 || afterSeconds < 1 || ceiling < 1) {
      throw new picocli.CommandLine.ParameterException(
          new picocli.CommandLine(this),
          "--before/--outage/--after/--ceiling: at least 1 (expected: seconds, requests)");
    }
    Workload w = workload(Knee.classes(), beforeSeconds, outageSeconds, afterSeconds);
    List<AdaptiveRuns.Result> results = run(w, System.out);
    String md = report(results);
    System.out.println();
    System.out.println(md);
    Files.createDirectories(out);
    Files.writeString(out.resolve("throttle.md"), md, StandardCharsets.UTF_8);
    System.out.println("chart: " + chart(results, out.resolve("throttle-limit.png")));
    return 0;
  }

  /** Three phases at the same rate: before, during and after the outage. */
  Workload workload(List<Workload.RequestClass> classes, int before, int outage, int after) {
    Workload k = Knee.workload(classes, 1, 1.0);
    double rate = k.phases().get(0).ratePerSecond() * load * ceiling / Knee.K;
    return outageWorkload(k, classes, rate, before, outage, after);
  }

  /** {@code k}'s tenants, retries, drain and seed; three phases at {@code rate} per second. */
  static Workload outageWorkload(
      Workload k,
      List<Workload.RequestClass> classes,
      double rate,
      int before,
      int outage,
      int after) {
    return Workload.of(
        classes,
        k.tenants(),
        List.of(
            new Workload.Phase("before", Duration.ofSeconds(before), rate),
            new Workload.Phase("outage", Duration.ofSeconds(outage), rate),
            new Workload.Phase("after", Duration.ofSeconds(after), rate)),
        0,
        Duration.ZERO,
        Duration.ZERO,
        k.maxRetries(),
        k.drain(),
        k.seed());
  }

  List<AdaptiveRuns.Result> run(Workload w, PrintStream o) throws Exception {
    double before = w.phases().get(0).duration().toMillis() / 1000.0;
    double outage = w.phases().get(1).duration().toMillis() / 1000.0;
    o.printf(
        Locale.ROOT,
        "throttle: simulated LLM, K=%d slots; it answers 429 (retry-after %d s) to a request that"
            + " would make more than %d run, and %d (retry-after %d s) to all from %.0f s to %.0f"
            + " s; offered %.1f req/s (%.2fx what %d slots serve); pool maxRequests %d, adaptive"
            + " floor %d.%n",
        Knee.K,
        CEILING_RETRY_AFTER.toSeconds(),
        ceiling,
        OUTAGE_STATUS,
        OUTAGE_RETRY_AFTER.toSeconds(),
        before,
        before + outage,
        w.phases().get(0).ratePerSecond(),
        load,
        ceiling,
        maxRequests,
        FLOOR);
    List<AdaptiveRuns.Result> results = new ArrayList<>();
    for (String n : runs) {
      String settings =
          switch (n.trim()) {
            case "static", "adaptive" -> "";
            case "adaptive-wide" -> Knee.WIDE;
            default ->
                throw new IllegalArgumentException(
                    "--runs: "
                        + n
                        + " (expected: static, adaptive, adaptive-wide; comma-separated)");
          };
      boolean adaptive = !n.trim().equals("static");
      String name =
          !adaptive
              ? "static " + maxRequests
              : "adaptive "
                  + maxRequests
                  + (settings.isEmpty() ? ", defaults" : ", dead band 1.2-1.5");
      o.printf(Locale.ROOT, "%n== run: %s ==%n", name);
      String extra =
          settings.isEmpty() || extraAdaptive.isBlank()
              ? settings + extraAdaptive
              : settings + ", " + extraAdaptive;
      String yaml =
          AdaptiveRuns.policy(
              maxRequests, adaptive ? FLOOR : 0, extra, Knee.CLASSES, Knee.HOLD_MILLIS);
      results.add(
          AdaptiveRuns.run(
              name,
              yaml,
              maxRequests,
              w,
              Knee.UPSTREAM,
              Knee.HOLD_MILLIS,
              up -> up.concurrencyCeiling(ceiling, 429, CEILING_RETRY_AFTER),
              List.of(
                  new AdaptiveRuns.Action(
                      before, up -> up.throttle(OUTAGE_STATUS, OUTAGE_RETRY_AFTER)),
                  new AdaptiveRuns.Action(
                      before + outage, io.sluice.upstream.SimulatedLlmUpstream::stopThrottling)),
              Math.min(5, before),
              o,
              quiet));
    }
    return results;
  }

  String report(List<AdaptiveRuns.Result> results) {
    StringBuilder b = new StringBuilder();
    if (results.isEmpty()) {
      return "";
    }
    List<RunReport.PhaseRow> ph = results.get(0).report().byPhase();
    double before = ph.get(0).seconds();
    double outageEnd = before + ph.get(1).seconds();
    double end = outageEnd + ph.get(2).seconds();
    b.append(
        String.format(
            Locale.ROOT,
            "Upstream: K = %d slots, 429 + retry-after %d s above %d running, %d + retry-after %d s"
                + " to everything from %.0f s to %.0f s; arrivals until %.0f s.%n%n",
            Knee.K,
            CEILING_RETRY_AFTER.toSeconds(),
            ceiling,
            OUTAGE_STATUS,
            OUTAGE_RETRY_AFTER.toSeconds(),
            before,
            outageEnd,
            end));
    b.append(
        "| run | upstream 429 (ceiling) | upstream 503 (outage) | Sluice refusals | refusals"
            + " without Retry-After | 504 | other errors | goodput/s before | during | after |"
            + " upstream concurrency mean (peak) before | mean limit before | limit at the end"
            + " of the window | back to the mean limit before after |\n");
    b.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (AdaptiveRuns.Result r : results) {
      RunReport rep = r.report();
      long up429 = ColdAdaptive.upstream(rep, "429");
      long up503 = ColdAdaptive.upstream(rep, "503");
      long sluice =
          rep.refusals().byReason().entrySet().stream()
              .filter(e -> !e.getKey().startsWith("upstream_"))
              .mapToLong(java.util.Map.Entry::getValue)
              .sum();
      long errors = rep.outcomes().errors().values().stream().mapToLong(Long::longValue).sum();
      double limitBefore = r.meanLimit(r.skipSeconds(), before);
      List<AdaptiveRuns.Sample> at = r.between(outageEnd, outageEnd + 0.2);
      int limitAtEnd = at.isEmpty() ? -1 : at.get(0).limitRequests();
      double back = Double.NaN;
      for (AdaptiveRuns.Sample s : r.between(outageEnd, end + 60)) {
        if (s.limitRequests() >= Math.floor(limitBefore)) {
          back = s.seconds() - outageEnd;
          break;
        }
      }
      double activeMeanBefore =
          r.between(r.skipSeconds(), before).stream()
              .mapToInt(AdaptiveRuns.Sample::upstreamActive)
              .average()
              .orElse(Double.NaN);
      int activePeak =
          r.samples().stream().mapToInt(AdaptiveRuns.Sample::upstreamActive).max().orElse(0);
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %d | %d | %d | %d | %d | %.2f | %.2f | %.2f | %.1f (%d) | %s | %s |"
                  + " %s |\n",
              r.name(),
              up429,
              up503,
              sluice,
              rep.refusals().withoutRetryAfter(),
              r.errors504(),
              errors - r.errors504(),
              ph.size() > 0 ? rep.byPhase().get(0).goodputPerSecond() : 0,
              ph.size() > 1 ? rep.byPhase().get(1).goodputPerSecond() : 0,
              ph.size() > 2 ? rep.byPhase().get(2).goodputPerSecond() : 0,
              activeMeanBefore,
              activePeak,
              r.adaptive() ? String.format(Locale.ROOT, "%.1f", limitBefore) : "n/a (static)",
              r.adaptive() ? Integer.toString(limitAtEnd) : "n/a",
              !r.adaptive()
                  ? "n/a"
                  : Double.isNaN(back)
                      ? "not within the run"
                      : String.format(Locale.ROOT, "%.1f s", back)));
    }
    b.append('\n');
    List<RunReport> reports = results.stream().map(AdaptiveRuns.Result::report).toList();
    b.append(Tables.summary(reports)).append('\n');
    b.append(Tables.phases(reports, reports.get(0).byPhase().get(0).ratePerSecond()))
        .append("(phase goodput as % of the offered rate)\n\n");
    b.append(Tables.ttft(reports)).append('\n');
    b.append(Tables.rejections(reports)).append('\n');
    for (AdaptiveRuns.Result r : results) {
      if (r.adaptive()) {
        b.append(Knee.limitPerSecond(r)).append('\n');
        b.append(recovery(r, outageEnd)).append('\n');
        b.append("limit changes by cause: ").append(r.limitChanges()).append("\n\n");
      }
    }
    return b.toString();
  }

  /**
   * The shape of the recovery after the window: the limit at each second after it ends, and the
   * largest rise within any one second (an additive ramp rises one slot per interval).
   */
  static String recovery(AdaptiveRuns.Result r, double outageEnd) {
    StringBuilder b =
        new StringBuilder(
            String.format(Locale.ROOT, "%s, recovery: limit at +0 s, +1 s, ...:", r.name()));
    int next = 0;
    List<AdaptiveRuns.Sample> after = r.between(outageEnd, 1e9);
    for (AdaptiveRuns.Sample s : after) {
      if (s.seconds() - outageEnd >= next) {
        b.append(' ').append(s.limitRequests());
        next++;
      }
    }
    int maxRise = 0;
    for (int i = 0; i < after.size(); i++) {
      for (int j = i + 1; j < after.size(); j++) {
        if (after.get(j).seconds() - after.get(i).seconds() > 1.0) {
          break;
        }
        maxRise = Math.max(maxRise, after.get(j).limitRequests() - after.get(i).limitRequests());
      }
    }
    b.append(
        String.format(
            Locale.ROOT, "; largest rise within 1 s after the window: %d slot(s)%n", maxRise));
    return b.toString();
  }

  static Path chart(List<AdaptiveRuns.Result> results, Path file) throws IOException {
    List<XYChart> charts = new ArrayList<>();
    double outageStart = Double.NaN;
    double outageEnd = Double.NaN;
    if (!results.isEmpty()) {
      List<RunReport.PhaseRow> ph = results.get(0).report().byPhase();
      outageStart = ph.get(0).seconds();
      outageEnd = outageStart + ph.get(1).seconds();
    }
    for (AdaptiveRuns.Result r : results) {
      XYChart c =
          new XYChartBuilder()
              .width(900)
              .height(320)
              .title(
                  String.format(
                      Locale.ROOT,
                      "%s: limit, upstream active (100 ms samples); outage %.0f-%.0f s",
                      r.name(),
                      outageStart,
                      outageEnd))
              .xAxisTitle("time (s)")
              .yAxisTitle("requests")
              .build();
      c.getStyler().setYAxisMin(0.0).setYAxisMax((double) r.ceiling() + 2);
      List<Double> x = new ArrayList<>();
      List<Double> active = new ArrayList<>();
      List<Double> limit = new ArrayList<>();
      List<Double> paused = new ArrayList<>();
      for (AdaptiveRuns.Sample s : r.samples()) {
        x.add(s.seconds());
        active.add((double) s.upstreamActive());
        limit.add((double) s.limitRequests());
        paused.add(s.paused() ? 1.0 : 0.0);
      }
      if (x.isEmpty()) {
        continue;
      }
      c.addSeries("upstream active", x, active).setMarker(SeriesMarkers.NONE);
      c.addSeries(r.adaptive() ? "adaptive limit" : "limit (static)", x, limit)
          .setMarker(SeriesMarkers.NONE);
      if (r.adaptive()) {
        c.addSeries("paused (Retry-After)", x, paused).setMarker(SeriesMarkers.NONE);
      }
      charts.add(c);
    }
    XYChart t =
        new XYChartBuilder()
            .width(900)
            .height(280)
            .title("upstream 429/503 answers per second")
            .xAxisTitle("time (s)")
            .yAxisTitle("answers/s")
            .build();
    for (AdaptiveRuns.Result r : results) {
      double[][] xy = AdaptiveRuns.throttledPerSecond(r);
      if (xy[0].length > 0) {
        t.addSeries(r.name(), xy[0], xy[1]).setMarker(SeriesMarkers.NONE);
      }
    }
    charts.add(t);
    return Charts.save(charts, charts.size(), 1, file);
  }
}
