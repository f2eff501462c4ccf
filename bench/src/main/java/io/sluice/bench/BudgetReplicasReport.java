package io.sluice.bench;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The markdown table of {@link BudgetReplicas}' runs (docs/benchmarks.md, "Budgets"). */
final class BudgetReplicasReport {
  private BudgetReplicasReport() {}

  static String table(
      List<BudgetReplicas.Result> results, int replicas, int requests, int outageSeconds) {
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "budget-replicas: %d replicas, %d requests at once (max_tokens 4096), budget %d"
                + " tokens (~100 answers); outage runs: Redis killed for %d s%n%n",
            replicas,
            requests,
            results.isEmpty() ? 0 : results.get(0).limit(),
            outageSeconds));
    b.append(
        "| run | admitted | refused | refused below 90 % recorded | refusals by status and"
            + " reason | spend at the upstream / budget | overspend | recorded at the end |"
            + " reserved at the end | ms | load |\n");
    b.append("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (BudgetReplicas.Result r : results) {
      StringBuilder reasons = new StringBuilder();
      for (Map.Entry<String, Integer> e : BudgetReplicas.byReason(r.refusals()).entrySet()) {
        if (reasons.length() > 0) {
          reasons.append(", ");
        }
        reasons.append(e.getKey()).append(": ").append(e.getValue());
      }
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %d | %d | %s | %.2f %% | %.2f %% | %.2f %% | %d | %d | %s |%n",
              r.run().equals("none") ? "no outage" : "outage, failureMode " + r.run(),
              r.admitted(),
              r.refusals().size(),
              r.refusedBelow90(),
              reasons.length() == 0 ? "-" : reasons,
              100.0 * r.upstreamSpent() / r.limit(),
              r.overspendPercent(),
              100.0 * r.recordedFinal() / r.limit(),
              r.reservedFinal(),
              r.millis(),
              r.load()));
    }
    return b.toString();
  }
}
