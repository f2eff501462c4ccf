package io.sluice.calibrate;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.knowm.xchart.AnnotationLine;
import org.knowm.xchart.AnnotationText;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The PNG: throughput (top) and TTFT p50/p95 (bottom) against concurrency, a vertical line at the
 * knee and one at the ceiling (XChart, headless).
 */
final class Chart {
  private Chart() {}

  /** Writes {@code file} (a .png); returns its path. */
  static Path write(Knee.Analysis a, String title, Path file) throws IOException {
    System.setProperty("java.awt.headless", "true");
    List<StepResult> steps = a.steps();
    double[] x = new double[steps.size()];
    double[] rps = new double[steps.size()];
    List<Double> tx = new ArrayList<>();
    List<Double> p50 = new ArrayList<>();
    List<Double> p95 = new ArrayList<>();
    double maxRps = 0;
    double maxTtft = 0;
    for (int i = 0; i < steps.size(); i++) {
      StepResult s = steps.get(i);
      x[i] = s.concurrency();
      rps[i] = s.requestsPerSecond();
      maxRps = Math.max(maxRps, rps[i]);
      if (!Double.isNaN(s.ttftP95Millis())) {
        tx.add((double) s.concurrency());
        p50.add(s.ttftP50Millis());
        p95.add(s.ttftP95Millis());
        maxTtft = Math.max(maxTtft, s.ttftP95Millis());
      }
    }
    XYChart throughput =
        new XYChartBuilder()
            .width(900)
            .height(360)
            .title(title + ": throughput")
            .xAxisTitle("concurrent requests")
            .yAxisTitle("ok requests/s")
            .build();
    throughput.getStyler().setYAxisMin(0.0);
    throughput.getStyler().setXAxisMin(0.0);
    if (x.length > 0) {
      throughput.addSeries("throughput", x, rps).setMarker(SeriesMarkers.CIRCLE);
    }
    XYChart ttft =
        new XYChartBuilder()
            .width(900)
            .height(360)
            .title("time to first token")
            .xAxisTitle("concurrent requests")
            .yAxisTitle("TTFT (ms)")
            .build();
    ttft.getStyler().setYAxisMin(0.0);
    ttft.getStyler().setXAxisMin(0.0);
    if (!tx.isEmpty()) {
      ttft.addSeries("TTFT p95", tx, p95).setMarker(SeriesMarkers.CIRCLE);
      ttft.addSeries("TTFT p50", tx, p50).setMarker(SeriesMarkers.DIAMOND);
    }
    mark(throughput, a, maxRps);
    mark(ttft, a, maxTtft);
    Path abs = file.toAbsolutePath();
    if (abs.getParent() != null) {
      Files.createDirectories(abs.getParent());
    }
    String name = abs.toString();
    String base = name.endsWith(".png") ? name.substring(0, name.length() - 4) : name;
    BitmapEncoder.saveBitmap(List.of(throughput, ttft), 2, 1, base, BitmapEncoder.BitmapFormat.PNG);
    return Path.of(base + ".png");
  }

  private static void mark(XYChart c, Knee.Analysis a, double top) {
    if (a.kneeConcurrency() > 0) {
      c.addAnnotation(new AnnotationLine(a.kneeConcurrency(), true, false));
      c.addAnnotation(
          new AnnotationText("knee " + a.kneeConcurrency(), a.kneeConcurrency(), top * 0.5, false));
    }
    if (a.ceiling() > 0) {
      c.addAnnotation(new AnnotationLine(a.ceiling(), true, false));
      c.addAnnotation(
          new AnnotationText("429/503 from " + a.ceiling(), a.ceiling(), top * 0.25, false));
    }
  }
}
