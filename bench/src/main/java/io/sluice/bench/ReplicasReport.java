package io.sluice.bench;

import static io.sluice.bench.Replicas.CAPACITY;
import static io.sluice.bench.Replicas.K;

import io.sluice.bench.Replicas.Kill;
import io.sluice.bench.Replicas.Result;
import io.sluice.bench.Replicas.Sample;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.core.share.ShareCoordinator;
import io.sluice.harness.LeastRequestBalancer;
import io.sluice.harness.LoadGenerator;
import io.sluice.harness.Rig;
import io.sluice.harness.RunReport;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;

/** The replicas bench's live progress lines, verdicts, Markdown report and charts. */
final class ReplicasReport {
  private ReplicasReport() {}

  static String progress(
      LoadGenerator.Progress p, Rig rig, List<SluiceServer> servers, AtomicIntegerArray down) {
    StringBuilder b =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "[%3ds] offered %5d admitted %5d refused %5d waiting %4d | goodput %5d | upstream"
                    + " active %2d | shares (requests/work, open streams):",
                p.second(),
                p.offered(),
                p.admitted(),
                p.refused(),
                p.waiting(),
                p.completed(),
                p.upstreamActive()));
    LeastRequestBalancer lb = rig.balancer();
    for (int i = 0; i < servers.size(); i++) {
      if (down.get(i) == 1) {
        b.append(" [down]");
        continue;
      }
      ShareCoordinator.Status st = servers.get(i).replicaShares().get("llm");
      b.append(
          String.format(
              Locale.ROOT,
              " [%d/%d, %d]",
              st == null ? 0 : st.grantedRequests(),
              st == null ? 0 : st.grantedWork(),
              lb.open(i)));
    }
    return b.toString();
  }

  static List<Verdict> verdicts(List<Result> results) {
    List<Verdict> v = new ArrayList<>();
    for (Result r : results) {
      if (r.spec().replicas() > 1) {
        v.add(
            new Verdict(
                r.spec().name() + ": upstream peak concurrency <= maxRequests " + K + " + 0",
                "peak " + r.upstreamPeak(),
                r.upstreamPeak() <= K));
      }
    }
    double one = meanGoodput(results, 1, Kill.NONE);
    double three = meanGoodput(results, 3, Kill.NONE);
    if (!Double.isNaN(one) && !Double.isNaN(three)) {
      long n1 = count(results, 1, Kill.NONE);
      long n3 = count(results, 3, Kill.NONE);
      double ratio = one <= 0 ? 0 : three / one;
      v.add(
          new Verdict(
              "3 replicas: goodput >= 95% of the single replica's",
              String.format(
                  Locale.ROOT,
                  "%.2f/s vs %.2f/s = %.1f%%%s",
                  three,
                  one,
                  100 * ratio,
                  n1 > 1 || n3 > 1
                      ? String.format(Locale.ROOT, " (means of %d and %d runs)", n3, n1)
                      : ""),
              ratio >= 0.95));
    }
    for (Result r : results) {
      v.add(
          new Verdict(
              r.spec().name() + ": 0 leaked permits",
              r.leakedRequests() + " requests, " + r.leakedWork() + " work units in flight after",
              r.leakedRequests() == 0 && r.leakedWork() == 0));
    }
    return v;
  }

  private static long count(List<Result> results, int replicas, Kill kill) {
    return results.stream()
        .filter(r -> r.spec().replicas() == replicas && r.spec().kill() == kill)
        .count();
  }

  /** Mean goodput/s of the runs of one kind (NaN if none). */
  static double meanGoodput(List<Result> results, int replicas, Kill kill) {
    return results.stream()
        .filter(r -> r.spec().replicas() == replicas && r.spec().kill() == kill)
        .mapToDouble(r -> r.report().goodputPerSecond())
        .average()
        .orElse(Double.NaN);
  }

  static String report(List<Result> results, double cap) {
    StringBuilder b = new StringBuilder();
    double one = meanGoodput(results, 1, Kill.NONE);
    b.append(
        "| run | offered | goodput (before deadline) | goodput/s | vs 1 replica (mean) | upstream peak |"
            + " upstream mean | Σ shares max (requests / work) | streams per replica |"
            + " missed deadline | refused (final) | errors | leaked permits |\n");
    b.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (Result r : results) {
      RunReport rep = r.report();
      StringBuilder sent = new StringBuilder();
      for (long s : r.sentPerReplica()) {
        sent.append(sent.length() == 0 ? "" : " / ").append(s);
      }
      long errors = rep.outcomes().errors().values().stream().mapToLong(Long::longValue).sum();
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %d (%.0f%%) | %.2f | %s | %d | %.2f | %s | %s | %d | %d | %d | %d |\n",
              r.spec().name(),
              rep.outcomes().offered(),
              rep.outcomes().completed(),
              Tables.pct(rep.outcomes().completed(), rep.outcomes().offered()),
              rep.goodputPerSecond(),
              Double.isNaN(one) || one <= 0
                  ? "n/a"
                  : String.format(Locale.ROOT, "%.1f%%", 100 * rep.goodputPerSecond() / one),
              r.upstreamPeak(),
              r.upstreamMean(),
              r.spec().replicas() == 1
                  ? "n/a (one replica)"
                  : r.maxGrantedRequestsSum() + " / " + r.maxGrantedWorkSum(),
              sent,
              rep.outcomes().deadlineMissed(),
              rep.outcomes().rejectedFinalTotal(),
              errors,
              r.leakedRequests()));
    }
    b.append('\n');
    b.append(diagnostics(results, durationOf(results))).append('\n');
    List<RunReport> reports = results.stream().map(Result::report).toList();
    b.append(Tables.summary(reports)).append('\n');
    b.append(Tables.ttft(reports)).append('\n');
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
    for (Result r : results) {
      if (r.spec().kill() == Kill.NONE) {
        continue;
      }
      b.append(
          String.format(
              Locale.ROOT,
              "%s: replica %d taken out of the balancer and %s at %.1f s; %s; the survivors'"
                  + " shares added up to the pool (%d requests, %d work units) again %s.%n%n",
              r.spec().name(),
              r.spec().replicas() - 1,
              r.spec().kill() == Kill.STOP
                  ? "stopped (shutdown with a 10 s drain, then its leases given up)"
                  : "crashed (halt: streams cut, lease left to expire after leaseTtl 5 s)",
              r.killAtSeconds(),
              r.spec().kill() == Kill.STOP
                  ? String.format(
                      Locale.ROOT, "its drain and shutdown took %.2f s", r.drainedAfterSeconds())
                  : String.format(Locale.ROOT, "the halt took %.2f s", r.drainedAfterSeconds()),
              K,
              CAPACITY,
              Double.isNaN(r.sharesWholeAfterSeconds())
                  ? "never within the run"
                  : String.format(
                      Locale.ROOT, "%.1f s after the kill", r.sharesWholeAfterSeconds())));
    }
    b.append(
        String.format(
            Locale.ROOT,
            "Upstream capacity ~%.1f requests/s; peak and mean are exact (every start and end of a"
                + " generation), the mean over the arrival window.%n%n",
            cap));
    for (Verdict v : verdicts(results)) {
      b.append("- ").append(v.line()).append('\n');
    }
    return b.toString();
  }

  private static double durationOf(List<Result> results) {
    return results.isEmpty() ? 0 : results.get(0).report().arrivalSeconds();
  }

  /**
   * Where the pool's capacity went, as means over the 100 ms samples of the arrival window (after
   * its first second): permits and work units in flight on all replicas, and the work headroom
   * (granted share less work in flight) summed over the replicas.
   */
  static String diagnostics(List<Result> results, double arrivalSeconds) {
    StringBuilder b = new StringBuilder();
    b.append(
        "| run | upstream active | permits in flight (Σ replicas) | work in flight (Σ, % of pool)"
            + " | Σ granted work | Σ work headroom (granted − in flight) |\n");
    b.append("|---|---|---|---|---|---|\n");
    for (Result r : results) {
      double n = 0;
      double active = 0;
      double permits = 0;
      double work = 0;
      double granted = 0;
      double headroom = 0;
      for (Sample s : r.samples()) {
        if (s.seconds() < 1 || s.seconds() > arrivalSeconds) {
          continue;
        }
        n++;
        active += s.upstreamActive();
        for (int i = 0; i < s.requestsInFlight().length; i++) {
          permits += s.requestsInFlight()[i];
          work += s.workInFlight()[i];
          granted += s.grantedWork()[i];
          headroom += Math.max(0, s.grantedWork()[i] - s.workInFlight()[i]);
        }
      }
      if (n == 0) {
        continue;
      }
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %.2f | %.2f | %.0f (%.0f%%) | %.0f | %.0f |\n",
              r.spec().name(),
              active / n,
              permits / n,
              work / n,
              100 * work / n / CAPACITY,
              granted / n,
              headroom / n));
    }
    return b.toString();
  }

  static Path concurrencyChart(List<Result> results, Path file) throws IOException {
    XYChart c =
        new XYChartBuilder()
            .width(900)
            .height(420)
            .title(
                "Upstream concurrency (generations running), sampled every 100 ms; maxRequests "
                    + K)
            .xAxisTitle("time (s)")
            .yAxisTitle("generations")
            .build();
    for (Result r : results) {
      List<Double> x = new ArrayList<>();
      List<Double> y = new ArrayList<>();
      for (Sample s : r.samples()) {
        x.add(s.seconds());
        y.add((double) s.upstreamActive());
      }
      if (!x.isEmpty()) {
        c.addSeries(r.spec().name(), x, y).setMarker(SeriesMarkers.NONE);
      }
    }
    return Charts.save(List.of(c), 1, 1, file);
  }

  static Path sharesChart(List<Result> results, Path file) throws IOException {
    List<XYChart> charts = new ArrayList<>();
    for (Result r : results) {
      if (r.spec().kill() == Kill.NONE || r.samples().isEmpty()) {
        continue;
      }
      XYChart c =
          new XYChartBuilder()
              .width(900)
              .height(360)
              .title(
                  String.format(
                      Locale.ROOT,
                      "%s: request slots granted per replica (killed at %.1f s)",
                      r.spec().name(),
                      r.killAtSeconds()))
              .xAxisTitle("time (s)")
              .yAxisTitle("request slots")
              .build();
      int n = r.samples().get(0).grantedRequests().length;
      List<Double> x = new ArrayList<>();
      List<List<Double>> ys = new ArrayList<>();
      List<Double> sum = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        ys.add(new ArrayList<>());
      }
      for (Sample s : r.samples()) {
        x.add(s.seconds());
        double total = 0;
        for (int i = 0; i < n; i++) {
          ys.get(i).add((double) s.grantedRequests()[i]);
          total += s.grantedRequests()[i];
        }
        sum.add(total);
      }
      for (int i = 0; i < n; i++) {
        c.addSeries("replica " + i, x, ys.get(i)).setMarker(SeriesMarkers.NONE);
      }
      c.addSeries("sum", x, sum).setMarker(SeriesMarkers.NONE);
      charts.add(c);
    }
    return Charts.save(charts, charts.size(), 1, file);
  }
}
