package io.sluice.bootstrap.replay;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;

/**
 * The replay's report: per pool, class and tenant, each policy's row beside the others (the
 * recorded decisions, the baseline's replay, the candidate's), as a table on stdout, a JSON file
 * and a PNG chart (goodput and refusals per class, XChart, headless).
 */
final class ReplayReport {
  private ReplayReport() {}

  /** One policy's replay (or the record itself), by name. */
  record Run(String name, Tally tally, Agreement agreement) {}

  static String table(List<Run> runs) {
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "%-34s %-10s %8s %8s %7s %8s %8s %8s %8s %8s %9s  %s%n",
            "row",
            "policy",
            "arrived",
            "admitted",
            "queued",
            "wait p50",
            "wait p95",
            "degraded",
            "goodput",
            "good %",
            "wasted s",
            "refused by reason"));
    for (String key : runs.get(0).tally().rows().keySet()) {
      for (Run r : runs) {
        Tally.Row row = r.tally().rows().get(key);
        if (row != null) {
          b.append(line(key, r.name(), row));
        }
      }
    }
    for (Run r : runs) {
      b.append(line("total", r.name(), r.tally().total()));
    }
    return b.toString();
  }

  private static String line(String key, String policy, Tally.Row row) {
    return String.format(
        Locale.ROOT,
        "%-34s %-10s %8d %8d %7d %8d %8d %8d %8d %7.1f%% %9.1f  %s%n",
        key.length() <= 34 ? key : key.substring(0, 34),
        policy,
        row.arrivals,
        row.admitted,
        row.queued,
        row.waits.getValueAtPercentile(50),
        row.waits.getValueAtPercentile(95),
        row.degraded,
        row.goodput,
        row.arrivals == 0 ? 0.0 : 100.0 * row.goodput / row.arrivals,
        row.wastedMillis / 1000.0,
        row.refused.isEmpty() ? "-" : row.refused.toString());
  }

  static String agreement(Agreement a, String name) {
    return String.format(
        Locale.ROOT,
        "%s agrees with the recorded decisions on %.1f %% of %d requests; queue wait error mean"
            + " %.0f ms, max %d ms (over %d that waited in either); recorded goodput %d%s",
        name,
        100 * a.share(),
        a.compared,
        a.meanWaitErrorMillis(),
        a.waitErrorMillisMax,
        a.waitCompared,
        a.recordedGoodput,
        a.disagreements.isEmpty()
            ? ""
            : "; differences: " + top(a.disagreements, 5) + "; first: " + a.first);
  }

  private static String top(Map<String, Long> m, int n) {
    List<Map.Entry<String, Long>> e = new ArrayList<>(m.entrySet());
    e.sort((x, y) -> Long.compare(y.getValue(), x.getValue()));
    return e.subList(0, Math.min(n, e.size())).toString();
  }

  static Path json(List<Run> runs, Path file) throws IOException {
    ObjectMapper om = new ObjectMapper();
    ObjectNode root = om.createObjectNode();
    for (Run r : runs) {
      ObjectNode p = root.putObject(r.name());
      Agreement a = r.agreement();
      p.putObject("agreement")
          .put("compared", a.compared)
          .put("identical", a.same)
          .put("share", a.share())
          .put("waitErrorMeanMs", a.meanWaitErrorMillis())
          .put("waitErrorMaxMs", a.waitErrorMillisMax)
          .put("recordedGoodput", a.recordedGoodput);
      ObjectNode rows = p.putObject("rows");
      Map<String, Tally.Row> all = new LinkedHashMap<>(r.tally().rows());
      all.put("total", r.tally().total());
      all.forEach(
          (k, row) -> {
            ObjectNode o =
                rows.putObject(k)
                    .put("arrivals", row.arrivals)
                    .put("admitted", row.admitted)
                    .put("queued", row.queued)
                    .put("waitP50Ms", row.waits.getValueAtPercentile(50))
                    .put("waitP95Ms", row.waits.getValueAtPercentile(95))
                    .put("degraded", row.degraded)
                    .put("cancelled", row.cancelled)
                    .put("goodput", row.goodput)
                    .put("goodputOutputTokens", row.goodputOutputTokens)
                    .put("wastedServiceMs", row.wastedMillis);
            ObjectNode refused = o.putObject("refused");
            row.refused.forEach(refused::put);
          });
    }
    Files.writeString(file, om.writerWithDefaultPrettyPrinter().writeValueAsString(root));
    return file;
  }

  /** Goodput and refusals per class, one bar per policy. */
  static Path chart(List<Run> runs, Path file) throws IOException {
    System.setProperty("java.awt.headless", "true");
    List<String> classes = new ArrayList<>();
    for (String k : runs.get(0).tally().rows().keySet()) {
      if (k.startsWith("class ")) {
        classes.add(k.substring("class ".length()));
      }
    }
    CategoryChart c =
        new CategoryChartBuilder()
            .width(1000)
            .height(520)
            .title("sluice replay: goodput and refusals per class")
            .xAxisTitle("pool/class")
            .yAxisTitle("requests")
            .build();
    for (Run r : runs) {
      List<Double> good = new ArrayList<>();
      List<Double> refused = new ArrayList<>();
      for (String cls : classes) {
        Tally.Row row = r.tally().rows().get("class " + cls);
        good.add(row == null ? 0.0 : row.goodput);
        refused.add(row == null ? 0.0 : row.refusedTotal());
      }
      c.addSeries(r.name() + " goodput", classes, good);
      c.addSeries(r.name() + " refused", classes, refused);
    }
    BitmapEncoder.saveBitmap(c, file.toString(), BitmapEncoder.BitmapFormat.PNG);
    return file;
  }
}
