package io.sluice.bench;

import io.sluice.bench.Floor.Row;
import io.sluice.bench.FloorServers.Sluice;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.HdrHistogram.Histogram;
import org.jspecify.annotations.Nullable;

/** The floor bench's figures: medians, decision-latency quantiles and the Markdown table. */
final class FloorReport {
  private FloorReport() {}

  /** One target's row of the table: medians and ranges over its rounds. */
  static Row row(
      Floor.Window window,
      List<ClosedLoop.Result> mine,
      List<ClosedLoop.Result> noop,
      List<Double> serverCpu,
      @Nullable AutoCloseable server) {
    double[] rates = new double[mine.size()];
    double[] ratios = new double[mine.size()];
    Histogram latency = new Histogram(60_000_000L, 3);
    double cpu = 0;
    long errors = 0;
    for (int i = 0; i < mine.size(); i++) {
      rates[i] = mine.get(i).perSecond();
      ratios[i] = mine.get(i).perSecond() / noop.get(i).perSecond();
      latency.add(mine.get(i).latencyMicros());
      cpu += mine.get(i).cpuCores() / mine.size();
      errors += mine.get(i).errors();
    }
    String p50 = "-";
    String p99 = "-";
    String phase = window.calls().phase();
    if (server instanceof Sluice s && !phase.isEmpty()) {
      String scrape = s.server.registry().scrape();
      String decision = window.target().equals("sluice-reject") ? "reject" : "admit";
      p50 = quantile(scrape, decision, phase, "0.5");
      p99 = quantile(scrape, decision, phase, "0.99");
    }
    return new Row(
        window.calls().label(),
        window.target(),
        median(rates),
        median(ratios),
        Arrays.stream(ratios).min().orElse(Double.NaN),
        Arrays.stream(ratios).max().orElse(Double.NaN),
        latency,
        cpu,
        median(serverCpu.stream().mapToDouble(Double::doubleValue).toArray()),
        p50,
        p99,
        errors);
  }

  static double median(double[] values) {
    double[] v = values.clone();
    Arrays.sort(v);
    int n = v.length;
    if (n == 0) {
      return Double.NaN;
    }
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }

  /**
   * A quantile of {@code sluice_decision_latency_seconds} for one decision at request headers, from
   * its histogram buckets with linear interpolation inside the bucket (as Prometheus's {@code
   * histogram_quantile}); the answer is only as fine as the bucket bounds.
   */
  static String quantile(String scrape, String decision, String phase, String q) {
    Pattern line =
        Pattern.compile(
            "^sluice_decision_latency_seconds_bucket\\{([^}]*)} ([0-9.eE+-]+)$", Pattern.MULTILINE);
    Pattern le = Pattern.compile("le=\"([^\"]+)\"");
    java.util.TreeMap<Double, Double> cumulative = new java.util.TreeMap<>();
    Matcher m = line.matcher(scrape);
    while (m.find()) {
      String labels = m.group(1);
      if (!labels.contains("decision=\"" + decision + "\"")
          || !labels.contains("phase=\"" + phase + "\"")) {
        continue;
      }
      Matcher l = le.matcher(labels);
      if (l.find()) {
        double bound =
            l.group(1).equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(l.group(1));
        cumulative.put(bound, Double.parseDouble(m.group(2)));
      }
    }
    if (cumulative.isEmpty() || cumulative.lastEntry().getValue() == 0) {
      return "n/a";
    }
    double rank = Double.parseDouble(q) * cumulative.lastEntry().getValue();
    double lowerBound = 0;
    double lowerCount = 0;
    for (var e : cumulative.entrySet()) {
      if (e.getValue() >= rank) {
        if (e.getKey().isInfinite()) {
          return String.format(Locale.ROOT, "> %.0f µs", lowerBound * 1e6);
        }
        double inBucket = e.getValue() - lowerCount;
        double frac = inBucket == 0 ? 1 : (rank - lowerCount) / inBucket;
        double seconds = lowerBound + (e.getKey() - lowerBound) * frac;
        return String.format(Locale.ROOT, "%.1f µs", seconds * 1e6);
      }
      lowerBound = e.getKey();
      lowerCount = e.getValue();
    }
    return "n/a";
  }

  static String table(
      List<Row> rows,
      int channels,
      int concurrency,
      FloorCalls calls,
      int rounds,
      int seconds,
      boolean separate) {
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "%s: Java generator, %d channels x %d %s in flight, closed loop, %s; %d alternating"
                + " rounds of %d s per target%n%n",
            calls.label(),
            channels,
            concurrency,
            switch (calls) {
              case ONESHOT -> "one-shot streams";
              case LLM -> "LLM-shaped streams (4 messages + reset)";
              case HEADERS_ONLY -> "headers-only streams, native AI metadata (3 messages + reset)";
              case RLS -> "ShouldRateLimit calls";
            },
            separate ? "each server in its own JVM" : "servers in the generator's JVM",
            rounds,
            seconds));
    b.append(
        "| workload | target | calls/s (median) | ratio to no-op (median of rounds) | rounds"
            + " (min–max) | client p50 | client p99 | generator"
            + (separate ? "" : " + servers")
            + " CPU (cores) | server CPU per call | server decision p50 | server decision p99 |"
            + " errors |\n");
    b.append("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (Row r : rows) {
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %s | %.0f | %.3f | %.2f–%.2f | %d µs | %d µs | %.2f | %s | %s | %s | %d |\n",
              r.workload(),
              r.target(),
              r.streamsPerSecond(),
              r.ratio(),
              r.minRatio(),
              r.maxRatio(),
              r.latencyMicros().getValueAtPercentile(50),
              r.latencyMicros().getValueAtPercentile(99),
              r.cpuCores(),
              separate ? String.format(Locale.ROOT, "%.1f µs", r.serverMicrosPerCall()) : "-",
              r.serverDecisionP50(),
              r.serverDecisionP99(),
              r.errors()));
    }
    return b.toString();
  }
}
