package io.sluice.calibrate;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * Where the endpoint's capacity ends, read from the steps of a ramp. The rule (also in
 * docs/operations.md, "Calibration runbook"):
 *
 * <ol>
 *   <li><b>Ceiling</b>: the lowest concurrency at which any request was answered 429 or 503 (a
 *       provider's concurrency limit, stated or not). Reported on its own line.
 *   <li><b>Eligible steps</b>: in order of concurrency, every step below the ceiling, up to (not
 *       including) the first step whose error rate (every kind of failure) is above {@value
 *       #MAX_ERROR_RATE_PERCENT} %, or that completed nothing; and up to the first step from which
 *       on every step's TTFT p95 is more than {@value #TTFT_FACTOR}× the TTFT p95 of the
 *       lowest-concurrency step (the baseline). A TTFT p95 above that which a higher step does not
 *       confirm is noise (a stalled machine, a slow request or two), not the endpoint's limit.
 *   <li><b>Knee</b>: among the eligible steps, the lowest concurrency whose throughput (ok requests
 *       per second) is at least {@value #THROUGHPUT_FRACTION} of the highest eligible throughput.
 *       Past it, more concurrency buys less than 5 % more throughput and only adds queueing inside
 *       the endpoint (TTFT grows); and the knee is always below the ceiling and below any step
 *       where errors or TTFT blew up.
 * </ol>
 *
 * If the knee is the highest concurrency tested and its throughput still grew by more than 5 % over
 * the step before, the endpoint was not saturated: the knee is only a lower bound ({@link
 * Analysis#lowerBound()}).
 */
public final class Knee {
  /** Throughput within this fraction of the best counts as saturated. */
  public static final double THROUGHPUT_FRACTION = 0.95;

  /** A step whose TTFT p95 exceeds this multiple of the baseline's is past the knee. */
  public static final double TTFT_FACTOR = 2.0;

  /** A step with more failures than this fraction of its ended requests is past the knee. */
  public static final double MAX_ERROR_RATE = 0.01;

  static final String MAX_ERROR_RATE_PERCENT = "1";

  /** Less throughput growth than this, from one ramp step to the next, is flat. */
  public static final double MIN_GROWTH = 0.05;

  private Knee() {}

  /** Why the eligible steps end. */
  public enum Cut {
    /** Every step is eligible. */
    NONE,
    /** A step at or above the ceiling (429/503). */
    CEILING,
    /** A step with more than 1 % errors, or none completed. */
    ERRORS,
    /** A step whose TTFT p95 is more than twice the baseline's. */
    TTFT
  }

  /**
   * The steps, read.
   *
   * @param steps every step, by concurrency (one per concurrency: the later one wins)
   * @param eligible the steps the knee is chosen from
   * @param knee the knee ({@code null}: no eligible step)
   * @param ceiling lowest concurrency with a 429 or 503, 0 = none seen
   * @param cut why the eligible steps end
   * @param cutStep the first step not eligible ({@code null} when {@link Cut#NONE})
   * @param maxThroughput highest throughput among the eligible steps (req/s)
   * @param baselineTtftP95 TTFT p95 of the lowest-concurrency eligible step (ms; NaN: none)
   */
  public record Analysis(
      List<StepResult> steps,
      List<StepResult> eligible,
      @Nullable StepResult knee,
      int ceiling,
      Cut cut,
      @Nullable StepResult cutStep,
      double maxThroughput,
      double baselineTtftP95) {

    /** The knee's concurrency, 0 when there is none. */
    public int kneeConcurrency() {
      StepResult k = knee;
      return k == null ? 0 : k.concurrency();
    }

    /**
     * True when the knee is the highest concurrency tested, nothing cut the ramp and throughput was
     * still growing into it: the real knee is at least this high.
     */
    public boolean lowerBound() {
      StepResult k = knee;
      if (k == null || cut != Cut.NONE || eligible.size() < 2) {
        return false;
      }
      StepResult last = eligible.get(eligible.size() - 1);
      StepResult before = eligible.get(eligible.size() - 2);
      return last == k && k.requestsPerSecond() > (1 + MIN_GROWTH) * before.requestsPerSecond();
    }

    /** The highest concurrency tested below the ceiling (0: none, or no ceiling). */
    public int lastCleanBelowCeiling() {
      int best = 0;
      for (StepResult s : steps) {
        if (ceiling > 0 && s.concurrency() < ceiling && s.throttled() == 0) {
          best = Math.max(best, s.concurrency());
        }
      }
      return best;
    }

    /** The knee line of the report. */
    public String kneeLine() {
      StepResult k = knee;
      if (k == null) {
        return "knee: not found (no step completed requests with at most 1 % errors)";
      }
      String why =
          String.format(
              Locale.ROOT,
              "%.1f req/s, %.0f%% of the best eligible %.1f req/s; TTFT p95 %s (baseline %s)",
              k.requestsPerSecond(),
              100 * k.requestsPerSecond() / maxThroughput,
              maxThroughput,
              Report.millis(k.ttftP95Millis()),
              Report.millis(baselineTtftP95));
      String tail =
          switch (cut) {
            case NONE -> lowerBound() ? "; still growing at the highest step: a lower bound" : "";
            case CEILING -> "; capped below the ceiling";
            case ERRORS -> "; errors above 1 % from " + cutConcurrency() + " concurrent";
            case TTFT ->
                "; TTFT p95 above "
                    + Report.number(TTFT_FACTOR)
                    + "x the baseline from "
                    + cutConcurrency()
                    + " concurrent";
          };
      return "knee: " + k.concurrency() + " concurrent requests (" + why + tail + ")";
    }

    private int cutConcurrency() {
      StepResult c = cutStep;
      return c == null ? 0 : c.concurrency();
    }

    /** The ceiling line of the report. */
    public String ceilingLine() {
      if (ceiling == 0) {
        int top = steps.isEmpty() ? 0 : steps.get(steps.size() - 1).concurrency();
        return "ceiling: none (no 429/503 up to " + top + " concurrent requests)";
      }
      int clean = lastCleanBelowCeiling();
      return "ceiling: 429/503 from "
          + ceiling
          + " concurrent requests"
          + (clean > 0
              ? " (none at " + clean + "): the endpoint limits concurrency to about " + clean
              : "");
    }
  }

  /** Reads {@code steps} (any order) with the rule above. */
  public static Analysis analyse(List<StepResult> steps) {
    TreeMap<Integer, StepResult> byConcurrency = new TreeMap<>();
    for (StepResult s : steps) {
      byConcurrency.put(s.concurrency(), s);
    }
    List<StepResult> sorted = new ArrayList<>(byConcurrency.values());
    sorted.sort(Comparator.comparingInt(StepResult::concurrency));
    int ceiling = 0;
    for (StepResult s : sorted) {
      if (s.throttled() > 0) {
        ceiling = s.concurrency();
        break;
      }
    }
    List<StepResult> before = new ArrayList<>();
    Cut cut = Cut.NONE;
    StepResult cutStep = null;
    for (StepResult s : sorted) {
      if (ceiling > 0 && s.concurrency() >= ceiling) {
        cut = Cut.CEILING;
      } else if (s.ok() == 0 || s.errorRate() > MAX_ERROR_RATE) {
        cut = Cut.ERRORS;
      }
      if (cut != Cut.NONE) {
        cutStep = s;
        break;
      }
      before.add(s);
    }
    double baseline = before.isEmpty() ? Double.NaN : before.get(0).ttftP95Millis();
    int firstSlow = before.size(); // the steps from here on are all above the TTFT limit
    for (int i = before.size() - 1; i >= 1; i--) {
      if (before.get(i).ttftP95Millis() > TTFT_FACTOR * baseline) {
        firstSlow = i;
      } else {
        break;
      }
    }
    List<StepResult> eligible = before.subList(0, firstSlow);
    if (firstSlow < before.size()) {
      cut = Cut.TTFT;
      cutStep = before.get(firstSlow);
    }
    double max = 0;
    for (StepResult s : eligible) {
      max = Math.max(max, s.requestsPerSecond());
    }
    StepResult knee = null;
    for (StepResult s : eligible) {
      if (s.requestsPerSecond() >= THROUGHPUT_FRACTION * max) {
        knee = s;
        break;
      }
    }
    return new Analysis(
        List.copyOf(sorted), List.copyOf(eligible), knee, ceiling, cut, cutStep, max, baseline);
  }

  /**
   * Concurrencies to test between the steps already run, so the knee and the ceiling are known
   * closer than the ramp's growth factor: up to {@code points} evenly spaced values inside (the
   * eligible step below the knee, the knee); inside (the knee, the first step cut) when the knee is
   * the last eligible step (throughput may still grow past it); and inside (the last step without
   * 429/503, the ceiling). Values already tested are left out.
   */
  public static List<Integer> refinements(Analysis a, int points) {
    List<int[]> intervals = new ArrayList<>();
    StepResult knee = a.knee();
    int idx = knee == null ? -1 : a.eligible().indexOf(knee);
    if (knee != null && idx > 0) {
      intervals.add(new int[] {a.eligible().get(idx - 1).concurrency(), knee.concurrency()});
    }
    StepResult cutStep = a.cutStep();
    boolean kneeIsLast = knee != null && knee == a.eligible().get(a.eligible().size() - 1);
    if (cutStep != null && kneeIsLast) {
      intervals.add(
          new int[] {
            a.eligible().get(a.eligible().size() - 1).concurrency(), cutStep.concurrency()
          });
    }
    if (a.ceiling() > 0 && a.lastCleanBelowCeiling() > 0) {
      intervals.add(new int[] {a.lastCleanBelowCeiling(), a.ceiling()});
    }
    java.util.TreeSet<Integer> tested = new java.util.TreeSet<>();
    a.steps().forEach(s -> tested.add(s.concurrency()));
    java.util.TreeSet<Integer> out = new java.util.TreeSet<>();
    for (int[] iv : intervals) {
      int lo = iv[0];
      int hi = iv[1];
      if (hi - lo <= 1) {
        continue;
      }
      for (int i = 1; i <= points; i++) {
        int c = lo + (int) Math.round(i * (hi - lo) / (double) (points + 1));
        if (c > lo && c < hi && !tested.contains(c)) {
          out.add(c);
        }
      }
    }
    return new ArrayList<>(out);
  }
}
