package io.sluice.bench;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Each target's per-round rate ÷ the no-op's, kept over several runs of the floor ({@code --runs}),
 * each run with fresh server JVMs: the pooled median over every round of every run is the verdict a
 * single run's JIT decisions, code placement and GC state cannot decide alone, printed beside each
 * run's own median and the pooled quartiles.
 */
final class FloorPool {
  // per "workload target": one array of per-round ratios per run, in run order
  private final Map<String, List<double[]>> runs = new LinkedHashMap<>();

  /** One run's rounds of {@code target} against the no-op's rounds of the same workload. */
  void add(
      String workload, String target, List<ClosedLoop.Result> mine, List<ClosedLoop.Result> noop) {
    double[] ratios = new double[Math.min(mine.size(), noop.size())];
    for (int i = 0; i < ratios.length; i++) {
      ratios[i] = mine.get(i).perSecond() / noop.get(i).perSecond();
    }
    add(workload, target, ratios);
  }

  void add(String workload, String target, double[] ratios) {
    runs.computeIfAbsent(workload + " " + target, k -> new ArrayList<>()).add(ratios.clone());
  }

  /** The pooled figures of one target: all rounds' median and quartiles, each run's median. */
  record Pooled(
      int rounds, double median, double lowerQuartile, double upperQuartile, double[] runMedians) {}

  Pooled pooled(String workload, String target) {
    List<double[]> mine = runs.getOrDefault(workload + " " + target, List.of());
    double[] all = mine.stream().flatMapToDouble(Arrays::stream).sorted().toArray();
    double[] medians = mine.stream().mapToDouble(FloorReport::median).toArray();
    return new Pooled(
        all.length, quantile(all, 0.5), quantile(all, 0.25), quantile(all, 0.75), medians);
  }

  /** The table of {@code workload}'s targets (the no-op left out: it reads 1 by definition). */
  void print(PrintStream out, String workload, List<String> targets) {
    out.printf(
        Locale.ROOT,
        "%n%s, pooled over %d runs: rate ÷ no-op, every round of every run%n"
            + "| target | median of all rounds | quartiles | rounds | each run's median |%n"
            + "|---|---|---|---|---|%n",
        workload,
        runs.values().stream().mapToInt(List::size).max().orElse(0));
    for (String target : targets) {
      if (target.equals("noop")) {
        continue;
      }
      Pooled p = pooled(workload, target);
      out.printf(
          Locale.ROOT,
          "| %s | %.3f | %.3f–%.3f | %d | %s |%n",
          target,
          p.median(),
          p.lowerQuartile(),
          p.upperQuartile(),
          p.rounds(),
          String.join(
              " / ",
              Arrays.stream(p.runMedians())
                  .mapToObj(m -> String.format(Locale.ROOT, "%.3f", m))
                  .toList()));
    }
    for (String target : targets) { // every round, so runs of separate invocations can be pooled
      List<double[]> mine = runs.getOrDefault(workload + " " + target, List.of());
      if (!target.equals("noop") && !mine.isEmpty()) {
        out.printf(
            Locale.ROOT,
            "%s %s rounds, run by run: %s%n",
            workload,
            target,
            String.join(
                " | ",
                mine.stream()
                    .map(
                        r ->
                            String.join(
                                " ",
                                Arrays.stream(r)
                                    .mapToObj(x -> String.format(Locale.ROOT, "%.3f", x))
                                    .toList()))
                    .toList()));
      }
    }
  }

  /** The {@code q} quantile of sorted {@code v}, linear between neighbours; NaN when empty. */
  static double quantile(double[] v, double q) {
    if (v.length == 0) {
      return Double.NaN;
    }
    double at = q * (v.length - 1);
    int lo = (int) Math.floor(at);
    int hi = Math.min(v.length - 1, lo + 1);
    return v[lo] + (v[hi] - v[lo]) * (at - lo);
  }
}
