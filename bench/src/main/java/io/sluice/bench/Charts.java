package io.sluice.bench;

import io.sluice.harness.RunReport;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;

/** PNG charts (XChart, headless). */
final class Charts {
  private Charts() {}

  static {
    System.setProperty("java.awt.headless", "true");
  }

  /** Goodput per second and TTFT p95 per second over time, one series per system. */
  static Path timeline(List<RunReport> reports, String title, Path file) throws IOException {
    XYChart goodput =
        new XYChartBuilder()
            .width(900)
            .height(380)
            .title(title + ": goodput (completions before deadline per second)")
            .xAxisTitle("time (s)")
            .yAxisTitle("completions/s")
            .build();
    XYChart ttft =
        new XYChartBuilder()
            .width(900)
            .height(380)
            .title("TTFT p95 of completed requests, by the second of their first token")
            .xAxisTitle("time (s)")
            .yAxisTitle("TTFT p95 (s)")
            .build();
    ttft.getStyler().setMarkerSize(4);
    XYChart offered =
        new XYChartBuilder()
            .width(900)
            .height(380)
            .title("offered load (arrivals) and refused attempts (incl. retries) per second")
            .xAxisTitle("time (s)")
            .yAxisTitle("requests/s")
            .build();
    boolean first = true;
    for (RunReport r : reports) {
      List<Double> x = new ArrayList<>();
      List<Double> g = new ArrayList<>();
      List<Double> o = new ArrayList<>();
      List<Double> rej = new ArrayList<>();
      for (RunReport.Second s : r.timeline()) {
        x.add((double) s.second());
        g.add((double) s.completed());
        o.add((double) s.offered());
        rej.add((double) s.rejected());
      }
      goodput.addSeries(r.system(), x, g).setMarker(SeriesMarkers.NONE);
      Gapped t = ttftP95Seconds(r.timeline());
      if (t.points() > 0) {
        // a marker on every point, so a second with data between two gaps still shows
        ttft.addSeries(r.system(), t.x(), t.y()).setMarker(SeriesMarkers.CIRCLE);
      }
      if (first) {
        offered.addSeries("offered", x, o).setMarker(SeriesMarkers.NONE);
        first = false;
      }
      if (r.refusals().byReason().values().stream().mapToLong(Long::longValue).sum() > 0) {
        offered.addSeries("refused: " + r.system(), x, rej).setMarker(SeriesMarkers.NONE);
      }
    }
    return save(List.of(goodput, ttft, offered), 3, 1, file);
  }

  /**
   * An XY series with gaps: {@code y} is NaN where there is no data, which XChart draws as a break
   * in the line (no line across a span without data).
   *
   * @param points how many y values are numbers
   */
  record Gapped(double[] x, double[] y, int points) {}

  /**
   * TTFT p95 per second in seconds, one x per second of the timeline; NaN in the seconds in which
   * no request got its first token (so the chart does not join the seconds around them).
   */
  static Gapped ttftP95Seconds(List<RunReport.Second> timeline) {
    double[] x = new double[timeline.size()];
    double[] y = new double[timeline.size()];
    int points = 0;
    for (int i = 0; i < timeline.size(); i++) {
      RunReport.Second s = timeline.get(i);
      x[i] = s.second();
      y[i] = Double.isNaN(s.ttftP95Millis()) ? Double.NaN : s.ttftP95Millis() / 1000;
      if (!Double.isNaN(y[i])) {
        points++;
      }
    }
    return new Gapped(x, y, points);
  }

  /** Goodput per second against offered per second, one point per arrival phase. */
  static Path goodputVsOffered(List<RunReport> reports, double capacity, Path file)
      throws IOException {
    XYChart c =
        new XYChartBuilder()
            .width(900)
            .height(500)
            .title("Goodput vs offered load (capacity = " + Math.round(capacity) + " req/s)")
            .xAxisTitle("offered load (x capacity)")
            .yAxisTitle("goodput (x capacity)")
            .build();
    for (RunReport r : reports) {
      List<Double> x = new ArrayList<>();
      List<Double> y = new ArrayList<>();
      for (RunReport.PhaseRow p : r.byPhase()) {
        x.add(p.ratePerSecond() / capacity);
        y.add(p.goodputPerSecond() / capacity);
      }
      c.addSeries(r.system(), x, y).setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
    }
    return save(List.of(c), 1, 1, file);
  }

  /** TTFT p50/p95/p99 by class, one chart per system. */
  static Path ttftByClass(List<RunReport> reports, Path file) throws IOException {
    List<CategoryChart> charts = new ArrayList<>();
    for (RunReport r : reports) {
      CategoryChart c =
          new CategoryChartBuilder()
              .width(900)
              .height(320)
              .title("TTFT by class: " + r.system())
              .yAxisTitle("seconds")
              .build();
      List<String> classes = new ArrayList<>(r.byClass().keySet());
      for (double p : new double[] {50, 95, 99}) {
        List<Double> v = new ArrayList<>();
        for (String cls : classes) {
          double ms = r.ttft().millis(cls, p);
          v.add(Double.isNaN(ms) ? 0 : ms / 1000);
        }
        c.addSeries("p" + (int) p, classes, v);
      }
      charts.add(c);
    }
    return save(charts, charts.size(), 1, file);
  }

  /** Refused attempts by reason, one series per system. */
  static Path rejections(List<RunReport> reports, String title, Path file) throws IOException {
    TreeSet<String> reasons = new TreeSet<>();
    reports.forEach(r -> reasons.addAll(r.refusals().byReason().keySet()));
    if (reasons.isEmpty()) {
      reasons.add("(none)");
    }
    CategoryChart c =
        new CategoryChartBuilder()
            .width(900)
            .height(450)
            .title("Refused attempts by reason: " + title)
            .yAxisTitle("attempts")
            .build();
    List<String> cats = new ArrayList<>(reasons);
    for (RunReport r : reports) {
      List<Double> v = new ArrayList<>();
      for (String reason : cats) {
        v.add((double) r.refusals().byReason().getOrDefault(reason, 0L));
      }
      c.addSeries(r.system(), cats, v);
    }
    return save(List.of(c), 1, 1, file);
  }

  static <T extends org.knowm.xchart.internal.chartpart.Chart<?, ?>> Path save(
      List<T> charts, int rows, int cols, Path file) throws IOException {
    Path abs = file.toAbsolutePath();
    if (abs.getParent() != null) {
      Files.createDirectories(abs.getParent());
    }
    String name = abs.toString();
    String base = name.endsWith(".png") ? name.substring(0, name.length() - 4) : name;
    BitmapEncoder.saveBitmap(charts, rows, cols, base, BitmapEncoder.BitmapFormat.PNG);
    return Path.of(base + ".png");
  }
}
