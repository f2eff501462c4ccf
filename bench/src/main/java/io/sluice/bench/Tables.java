package io.sluice.bench;

import io.sluice.harness.LoadGenerator;
import io.sluice.harness.RunReport;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/** Markdown tables of run reports (printed by the CLI, pasted into docs/benchmarks.md). */
final class Tables {
  private Tables() {}

  static String summary(List<RunReport> reports) {
    StringBuilder b = new StringBuilder();
    b.append(
        "| system | offered | goodput (before deadline) | goodput/s | missed deadline |"
            + " cancelled | refused (final) | unfinished | 429/503 with Retry-After | retries (ok) |"
            + " wasted tokens | upstream busy | Jain (tenants) |\n");
    b.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (RunReport r : reports) {
      long refusals = r.refusals().withRetryAfter() + r.refusals().withoutRetryAfter();
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %d (%.0f%%) | %.1f | %d | %d | %d | %d | %s | %d (%d) | %.1f%% | %.0f%% |"
                  + " %.3f |\n",
              r.system(),
              r.outcomes().offered(),
              r.outcomes().completed(),
              pct(r.outcomes().completed(), r.outcomes().offered()),
              r.goodputPerSecond(),
              r.outcomes().deadlineMissed(),
              r.outcomes().cancelled(),
              r.outcomes().rejectedFinalTotal(),
              r.outcomes().unfinished(),
              refusals == 0 ? "n/a" : r.refusals().withRetryAfter() + "/" + refusals,
              r.outcomes().retries(),
              r.outcomes().completedAfterRetry(),
              100 * r.tokens().wastedFraction(),
              100 * Math.min(1.0, r.upstream().meanActive() / r.upstream().batchSlots()),
              jain(r)));
    }
    return b.toString();
  }

  /** The wasted-tokens target: waste caused by admission ≤ 2 % (docs/decisions/0007). */
  static final double WASTE_TARGET = 0.02;

  /**
   * Where the wasted tokens went, as % of the tokens spent on requests that ended, split into the
   * waste caused by admission (what the target judges) and the workload's own hang-ups; with {@code
   * reference} (the same arrivals served on arrival at full speed) as the last row when its clients
   * hang up or miss deadlines on their own.
   */
  static String waste(List<RunReport> reports, LoadGenerator.ServedOnArrival reference) {
    StringBuilder b =
        new StringBuilder(
            "| system | tokens spent | wasted | on missed deadlines | after the client left |"
                + " on hang-ups the wait caused | other (errors) | **by admission** |"
                + " the workload's own hang-ups |\n");
    b.append("|---|---|---|---|---|---|---|---|---|\n");
    for (RunReport r : reports) {
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f%% | **%.1f%%** | %.1f%% |\n",
              r.system(),
              r.tokens().spent() - r.tokens().unfinished(),
              100 * r.tokens().wastedFraction(),
              100 * r.tokens().endedFraction(r.tokens().onMissedDeadlines()),
              100 * r.tokens().endedFraction(r.tokens().afterClientLeft()),
              100 * r.tokens().endedFraction(r.tokens().onHangUpsAfterWaiting()),
              100 * r.tokens().endedFraction(r.tokens().otherWasted()),
              100 * r.tokens().wastedByAdmissionFraction(),
              100 * r.tokens().endedFraction(r.tokens().onHangUps())));
    }
    if (reference.hungUpTokens() + reference.missedDeadlineTokens() > 0) {
      long all =
          reference.usefulTokens() + reference.missedDeadlineTokens() + reference.hungUpTokens();
      b.append(
          String.format(
              Locale.ROOT,
              "| *every request served on arrival, full speed* | %d | %.1f%% | %.1f%% | 0.0%% |"
                  + " 0.0%% | 0.0%% | %.1f%% | %.1f%% |\n",
              all,
              100 * (reference.hungUpFraction() + reference.missedDeadlineFraction()),
              100 * reference.missedDeadlineFraction(),
              100 * reference.missedDeadlineFraction(),
              100 * reference.hungUpFraction()));
    }
    return b.toString();
  }

  /**
   * The wasted-tokens verdict of each admission system (not "no admission", which the target does
   * not judge): waste caused by admission against {@link #WASTE_TARGET}, beside the total and the
   * served-on-arrival floor of the workload's own hang-ups.
   */
  static String wasteVerdict(List<RunReport> reports, LoadGenerator.ServedOnArrival reference) {
    StringBuilder b = new StringBuilder();
    for (RunReport r : reports) {
      if (r.system().equals("no admission")) {
        continue;
      }
      double byAdmission = r.tokens().wastedByAdmissionFraction();
      b.append(
          String.format(
              Locale.ROOT,
              "wasted tokens, %s: %.1f%% caused by admission (target <= %.0f%%: %s); %.1f%% in"
                  + " all, %.1f%% on the workload's own hang-ups (served-on-arrival floor"
                  + " %.1f%%)%n",
              r.system(),
              100 * byAdmission,
              100 * WASTE_TARGET,
              byAdmission <= WASTE_TARGET ? "met" : "NOT met",
              100 * r.tokens().wastedFraction(),
              100 * r.tokens().endedFraction(r.tokens().onHangUps()),
              100 * reference.hungUpFraction()));
    }
    return b.toString();
  }

  static String ttft(List<RunReport> reports) {
    StringBuilder b = new StringBuilder();
    b.append(
        "| system | class | completed / offered | TTFT p50 | p95 | p99 |"
            + " p95 from first arrival (incl. retry waits) |\n");
    b.append("|---|---|---|---|---|---|---|\n");
    for (RunReport r : reports) {
      r.byClass()
          .forEach(
              (cls, split) ->
                  b.append(
                      String.format(
                          Locale.ROOT,
                          "| %s | %s | %d / %d | %s | %s | %s | %s |\n",
                          r.system(),
                          cls,
                          split.completed(),
                          split.offered(),
                          ms(r.ttft().millis(cls, 50)),
                          ms(r.ttft().millis(cls, 95)),
                          ms(r.ttft().millis(cls, 99)),
                          ms(r.ttft().fromArrivalMillis(cls, 95)))));
    }
    return b.toString();
  }

  static String rejections(List<RunReport> reports) {
    Map<String, Map<String, Long>> byReason = new TreeMap<>();
    for (RunReport r : reports) {
      r.refusals()
          .byReason()
          .forEach(
              (reason, n) ->
                  byReason.computeIfAbsent(reason, k -> new LinkedHashMap<>()).put(r.system(), n));
      r.outcomes()
          .errors()
          .forEach(
              (what, n) ->
                  byReason
                      .computeIfAbsent("error: " + what, k -> new LinkedHashMap<>())
                      .put(r.system(), n));
    }
    if (byReason.isEmpty()) {
      return "(no refusals or errors)\n";
    }
    StringBuilder b = new StringBuilder("| refused attempts: reason |");
    reports.forEach(r -> b.append(' ').append(r.system()).append(" |"));
    b.append("\n|---|");
    reports.forEach(r -> b.append("---|"));
    b.append('\n');
    byReason.forEach(
        (reason, counts) -> {
          b.append("| ").append(reason).append(" |");
          reports.forEach(
              r -> b.append(' ').append(counts.getOrDefault(r.system(), 0L)).append(" |"));
          b.append('\n');
        });
    return b.toString();
  }

  /**
   * How long refused attempts waited for their answer, by reason: milliseconds for a refusal at
   * once, about the hold for one that was queued and expired.
   */
  static String refusalTimes(List<RunReport> reports) {
    StringBuilder b =
        new StringBuilder(
            "| system | reason | refused attempts | time to the refusal p50 | p99 | max |\n");
    b.append("|---|---|---|---|---|---|\n");
    for (RunReport r : reports) {
      new TreeMap<>(r.refusals().microsByReason())
          .forEach(
              (reason, h) ->
                  b.append(
                      String.format(
                          Locale.ROOT,
                          "| %s | %s | %d | %s | %s | %s |\n",
                          r.system(),
                          reason,
                          h.getTotalCount(),
                          ms(h.getValueAtPercentile(50) / 1000.0),
                          ms(h.getValueAtPercentile(99) / 1000.0),
                          ms(h.getMaxValue() / 1000.0))));
    }
    return b.toString();
  }

  static String phases(List<RunReport> reports, double capacityPerSecond) {
    StringBuilder b = new StringBuilder("| phase | offered/s |");
    reports.forEach(r -> b.append(' ').append(r.system()).append(" goodput/s |"));
    b.append("\n|---|---|");
    reports.forEach(r -> b.append("---|"));
    b.append('\n');
    int n = reports.get(0).byPhase().size();
    for (int i = 0; i < n; i++) {
      RunReport.PhaseRow p0 = reports.get(0).byPhase().get(i);
      b.append(
          String.format(
              Locale.ROOT,
              "| %s (%.1f/s) | %.1f |",
              p0.label(),
              p0.ratePerSecond(),
              p0.offeredPerSecond()));
      for (RunReport r : reports) {
        RunReport.PhaseRow p = r.byPhase().get(i);
        b.append(
            String.format(
                Locale.ROOT,
                " %.1f (%.0f%% of capacity) |",
                p.goodputPerSecond(),
                100 * p.goodputPerSecond() / capacityPerSecond));
      }
      b.append('\n');
    }
    return b.toString();
  }

  static String tenants(List<RunReport> reports) {
    StringBuilder b =
        new StringBuilder(
            "| system | tenant | offered | completed | max-min fair share | completed / share |\n");
    b.append("|---|---|---|---|---|---|\n");
    for (RunReport r : reports) {
      Map<String, Double> share = fairShares(r);
      r.byTenant()
          .forEach(
              (t, s) ->
                  b.append(
                      String.format(
                          Locale.ROOT,
                          "| %s | %s | %d | %d | %.0f | %.2f |\n",
                          r.system(),
                          t,
                          s.offered(),
                          s.completed(),
                          share.get(t),
                          Objects.requireNonNull(share.get(t)) == 0
                              ? 0
                              : s.completed() / Objects.requireNonNull(share.get(t)))));
    }
    return b.toString();
  }

  /**
   * Max-min fair shares of the completed total, given each tenant's offered count as its demand
   * (equal weights): water-filling.
   */
  static Map<String, Double> fairShares(RunReport r) {
    Map<String, Double> shares = new LinkedHashMap<>();
    List<Map.Entry<String, RunReport.Split>> tenants = new ArrayList<>(r.byTenant().entrySet());
    tenants.sort(Comparator.comparingLong(e -> e.getValue().offered()));
    double left = r.outcomes().completed();
    int remaining = tenants.size();
    for (Map.Entry<String, RunReport.Split> e : tenants) {
      double equal = left / remaining;
      double give = Math.min(equal, e.getValue().offered());
      shares.put(e.getKey(), give);
      left -= give;
      remaining--;
    }
    return shares;
  }

  /** Jain's index over completed / fair share per tenant (1.0 = everyone got their share). */
  static double jain(RunReport r) {
    Map<String, Double> share = fairShares(r);
    double sum = 0;
    double sumSq = 0;
    int n = 0;
    for (var e : r.byTenant().entrySet()) {
      double s = Objects.requireNonNull(share.get(e.getKey()));
      if (s <= 0) {
        continue;
      }
      double x = e.getValue().completed() / s;
      sum += x;
      sumSq += x * x;
      n++;
    }
    return n == 0 || sumSq == 0 ? 1.0 : sum * sum / (n * sumSq);
  }

  /** The smallest completed/share among tenants other than {@code except}. */
  static double minShareRatio(RunReport r, String except) {
    Map<String, Double> share = fairShares(r);
    double min = Double.MAX_VALUE;
    for (var e : r.byTenant().entrySet()) {
      if (e.getKey().equals(except) || Objects.requireNonNull(share.get(e.getKey())) <= 0) {
        continue;
      }
      min = Math.min(min, e.getValue().completed() / share.get(e.getKey()));
    }
    return min == Double.MAX_VALUE ? Double.NaN : min;
  }

  static String ms(double v) {
    if (Double.isNaN(v)) {
      return "-";
    }
    return v >= 1000
        ? String.format(Locale.ROOT, "%.2f s", v / 1000)
        : String.format(Locale.ROOT, "%.0f ms", v);
  }

  static double pct(long a, long b) {
    return b == 0 ? 0 : 100.0 * a / b;
  }
}
