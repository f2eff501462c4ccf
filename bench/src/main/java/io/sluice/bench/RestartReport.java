package io.sluice.bench;

import io.sluice.bench.Restart.How;
import io.sluice.bench.Restart.Learned;
import io.sluice.bench.Restart.Replaced;
import io.sluice.bench.Restart.Result;
import io.sluice.bench.Restart.Scope;
import io.sluice.harness.RunReport;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;

/** The restart bench's verdicts, Markdown report and chart. */
final class RestartReport {
  private RestartReport() {}

  static String fmt(double v) {
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.0f", v);
  }

  static List<Verdict> verdicts(List<Result> results) {
    List<Verdict> v = new ArrayList<>();
    for (Result r : results) {
      if (r.spec().scope() == Scope.NONE) {
        continue;
      }
      v.add(
          new Verdict(
              r.spec().name() + ": goodput in the " + fmt(r.window()) + " s after >= 0.90 x before",
              String.format(
                  Locale.ROOT,
                  "%d / %d = %.2f",
                  r.completedAfter(),
                  r.completedBefore(),
                  r.ratio()),
              r.ratio() >= 0.90));
      boolean limitBack = true;
      boolean reserveBack = true;
      StringBuilder lm = new StringBuilder();
      StringBuilder rm = new StringBuilder();
      for (Replaced x : r.replaced()) {
        limitBack &= near(x.atReady().limitRequests(), x.before().limitRequests(), 0.25, 2);
        reserveBack &=
            x.atReady().reserveWarmed()
                && near(x.atReady().reserveTokens(), x.before().reserveTokens(), 0.25, 0);
        lm.append(lm.length() == 0 ? "" : "; ")
            .append(fmt(x.before().limitRequests()))
            .append(" -> ")
            .append(fmt(x.atReady().limitRequests()));
        rm.append(rm.length() == 0 ? "" : "; ")
            .append(fmt(x.before().reserveTokens()))
            .append(" -> ")
            .append(x.atReady().reserveWarmed() ? fmt(x.atReady().reserveTokens()) : "cold");
      }
      v.add(
          new Verdict(
              r.spec().name() + ": learned limit back at ready (within 25 % or 2 slots)",
              lm.toString(),
              limitBack && !r.replaced().isEmpty()));
      v.add(
          new Verdict(
              r.spec().name() + ": learned reserve back at ready (warmed, within 25 %)",
              rm.toString(),
              reserveBack && !r.replaced().isEmpty()));
    }
    return v;
  }

  static boolean near(double got, double want, double rel, double abs) {
    if (Double.isNaN(got) || Double.isNaN(want)) {
      return false;
    }
    return Math.abs(got - want) <= Math.max(abs, rel * Math.abs(want));
  }

  static String report(List<Result> results, double preStop, int grace) {
    StringBuilder b = new StringBuilder();
    b.append(
        "| run | goodput before (answers in the window) | after | after / before | errors after"
            + " (cut streams) | refused after | no replica ready | live shares whole again"
            + " (halt: after the restart began) |"
            + " upstream peak | goodput whole run /s |\n");
    b.append("|---|---|---|---|---|---|---|---|---|---|\n");
    for (Result r : results) {
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %d | **%.2f** | %d | %d | %.2f s | %s | %d | %.2f |%n",
              r.spec().name(),
              r.completedBefore(),
              r.completedAfter(),
              r.ratio(),
              r.errorsAfter(),
              r.refusedAfter(),
              r.noReplicaSeconds(),
              r.spec().how() != How.HALT
                  ? "n/a"
                  : Double.isNaN(r.sharesWholeAfterSeconds())
                      ? "not within the run"
                      : String.format(Locale.ROOT, "%.1f s", r.sharesWholeAfterSeconds()),
              r.upstreamPeak(),
              r.report().goodputPerSecond()));
    }
    b.append('\n');
    b.append(
        "| run | replica | start (ms) | limit before → at ready → 1 s later | reserve before →"
            + " at ready → 1 s later (tokens; cold: not warmed) |\n");
    b.append("|---|---|---|---|---|\n");
    for (Result r : results) {
      for (Replaced x : r.replaced()) {
        b.append(
            String.format(
                Locale.ROOT,
                "| %s | %d | %.0f | %s → %s → %s | %s → %s → %s |%n",
                r.spec().name(),
                x.replica(),
                x.startMillis(),
                fmt(x.before().limitRequests()),
                fmt(x.atReady().limitRequests()),
                fmt(x.oneSecondLater().limitRequests()),
                reserve(x.before()),
                reserve(x.atReady()),
                reserve(x.oneSecondLater())));
      }
    }
    b.append('\n');
    b.append("Goodput per second around the restart (answers completed in each second):\n\n");
    b.append("| run |");
    int from = results.isEmpty() ? 0 : (int) Math.floor(results.get(0).restartAtSeconds() - 10);
    int to = results.isEmpty() ? 0 : (int) Math.ceil(results.get(0).restartAtSeconds() + 12);
    StringBuilder rule = new StringBuilder("|---|");
    for (int s = Math.max(0, from); s < to; s++) {
      b.append(' ').append(s).append(" |");
      rule.append("---|");
    }
    b.append('\n').append(rule).append('\n');
    for (Result r : results) {
      b.append("| ").append(r.spec().name()).append(" |");
      for (int s = Math.max(0, from); s < to; s++) {
        double v = s < r.completionsPerSecond().length ? r.completionsPerSecond()[s] : 0;
        b.append(' ').append(fmt(v)).append(" |");
      }
      b.append('\n');
    }
    b.append('\n');
    List<RunReport> reports = results.stream().map(Result::report).toList();
    b.append(Tables.rejections(reports)).append('\n');
    for (Result r : results) {
      if (!r.report().outcomes().errors().isEmpty()) {
        b.append("Errors, ")
            .append(r.spec().name())
            .append(": ")
            .append(r.report().outcomes().errors());
        b.append("\n\n");
      }
    }
    b.append(
        String.format(
            Locale.ROOT,
            "Goodput: answers completed before their deadline, counted by completion time in 100"
                + " ms buckets. Drain: replacement started at once, old replica kept in the"
                + " balancer %.0f s (preStop), then shutdown with a %d s grace. Halt: streams cut,"
                + " leases left; the new process binds the same port. Servers run in the bench's"
                + " JVM (no JVM start-up in the start times).%n%n",
            preStop,
            grace));
    for (Verdict v : verdicts(results)) {
      b.append("- ").append(v.line()).append('\n');
    }
    return b.toString();
  }

  private static String reserve(Learned l) {
    if (Double.isNaN(l.reserveTokens())) {
      return "none";
    }
    return l.reserveWarmed() ? fmt(l.reserveTokens()) : "cold (" + fmt(l.reserveTokens()) + ")";
  }

  static Path chart(List<Result> results, Path file) throws IOException {
    XYChart c =
        new XYChartBuilder()
            .width(900)
            .height(420)
            .title("Goodput per second (answers completed); restart at the dashed time")
            .xAxisTitle("time (s)")
            .yAxisTitle("answers / s")
            .build();
    for (Result r : results) {
      List<Double> x = new ArrayList<>();
      List<Double> y = new ArrayList<>();
      for (int s = 0; s < r.completionsPerSecond().length; s++) {
        x.add(s + 0.5);
        y.add(r.completionsPerSecond()[s]);
      }
      c.addSeries(r.spec().name(), x, y).setMarker(SeriesMarkers.NONE);
    }
    if (!results.isEmpty()) {
      double at = results.get(0).restartAtSeconds();
      c.addSeries("restart", List.of(at, at), List.of(0.0, 1.0 * maxOf(results)))
          .setMarker(SeriesMarkers.NONE);
    }
    return Charts.save(List.of(c), 1, 1, file);
  }

  private static double maxOf(List<Result> results) {
    double m = 1;
    for (Result r : results) {
      for (double v : r.completionsPerSecond()) {
        m = Math.max(m, v);
      }
    }
    return m;
  }
}
