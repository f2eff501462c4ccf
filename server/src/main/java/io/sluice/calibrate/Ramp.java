package io.sluice.calibrate;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The step schedule. Coarse: {@code start}, then each step {@code growth} times the last (at least
 * one more), up to {@code maxConcurrency}; it stops early at the first step that
 *
 * <ul>
 *   <li>is not eligible by the {@link Knee} rule (429/503, more than 1 % errors; TTFT p95 above
 *       twice the baseline in it and in the step after it: one more step confirms a slow one), or
 *   <li>is flat: its throughput gained less than a tenth of what the added concurrency would give
 *       if throughput grew in proportion (doubling: less than 10 % above the best step before).
 * </ul>
 *
 * Then up to {@value #ROUNDS} refinement rounds run the {@link Knee#refinements} of the result so
 * far ({@code refine} points per interval): after the coarse ramp the knee and the ceiling are
 * known to within the growth factor, each round narrows that interval to about a quarter (with 3
 * points), and a round that finds nothing new ends refining. Every step is bounded by the request
 * budget and the step time; the whole run by the time limit, after which the steps measured so far
 * are the result.
 */
final class Ramp {
  /** Runs one step at a concurrency (a shorter one when the run's time is up). */
  interface Stepper {
    StepResult step(int concurrency) throws InterruptedException;
  }

  /**
   * The schedule's settings.
   *
   * @param start first concurrency (≥ 1)
   * @param maxConcurrency highest concurrency (≥ start)
   * @param growth factor between coarse steps (> 1)
   * @param refine points per refinement interval (0: no refinement)
   */
  record Schedule(int start, int maxConcurrency, double growth, int refine) {
    Schedule {
      if (start < 1 || maxConcurrency < start || !(growth > 1) || refine < 0) {
        throw new IllegalArgumentException(
            "schedule: start "
                + start
                + ", max "
                + maxConcurrency
                + ", growth "
                + growth
                + ", refine "
                + refine
                + " (expected: 1 <= start <= max, growth > 1, refine >= 0)");
      }
    }

    /** The coarse step after {@code c}, or 0 when {@code c} is the last. */
    int next(int c) {
      if (c >= maxConcurrency) {
        return 0;
      }
      long n = Math.max(c + 1L, (long) Math.ceil(c * growth));
      return (int) Math.min(n, maxConcurrency);
    }
  }

  /** What a run measured, and whether it ended early. */
  record Outcome(
      List<StepResult> steps, Knee.Analysis analysis, boolean timeUp, String stoppedBy) {}

  /** Refinement rounds at most. */
  static final int ROUNDS = 3;

  private Ramp() {}

  /**
   * Runs the schedule; {@code timeUp} says whether the time limit has passed (checked before every
   * step), {@code onStep} sees every step as it ends.
   */
  static Outcome run(
      Schedule schedule,
      Stepper stepper,
      java.util.function.BooleanSupplier timeUp,
      Consumer<StepResult> onStep)
      throws InterruptedException {
    List<StepResult> steps = new ArrayList<>();
    String stoppedBy = "max concurrency " + schedule.maxConcurrency() + " reached";
    double best = 0;
    int previous = 0;
    for (int c = schedule.start(); c > 0; c = schedule.next(c)) {
      if (timeUp.getAsBoolean()) {
        return outcome(steps, true, "time limit");
      }
      StepResult s = stepper.step(c);
      steps.add(s);
      onStep.accept(s);
      Knee.Analysis a = Knee.analyse(steps);
      StepResult cutStep = a.cutStep();
      boolean unconfirmed =
          a.cut() == Knee.Cut.TTFT && cutStep != null && cutStep.concurrency() == c;
      if (a.cut() != Knee.Cut.NONE && !unconfirmed) {
        stoppedBy =
            switch (a.cut()) {
              case CEILING -> "429/503 at " + c;
              case ERRORS -> "errors above 1 % at " + c;
              default ->
                  "TTFT p95 above "
                      + Report.number(Knee.TTFT_FACTOR)
                      + "x the baseline from "
                      + (cutStep == null ? c : cutStep.concurrency())
                      + " on";
            };
        break;
      }
      if (previous > 0 && s.requestsPerSecond() < best * (1 + 0.1 * ((double) c / previous - 1))) {
        stoppedBy = "throughput flat at " + c;
        break;
      }
      best = Math.max(best, s.requestsPerSecond());
      previous = c;
    }
    for (int round = 0; round < ROUNDS; round++) {
      List<Integer> more = Knee.refinements(Knee.analyse(steps), schedule.refine());
      if (more.isEmpty()) {
        break;
      }
      for (int c : more) {
        if (timeUp.getAsBoolean()) {
          return outcome(steps, true, stoppedBy + "; time limit during refinement");
        }
        StepResult s = stepper.step(c);
        steps.add(s);
        onStep.accept(s);
      }
    }
    return outcome(steps, false, stoppedBy);
  }

  private static Outcome outcome(List<StepResult> steps, boolean timeUp, String stoppedBy) {
    return new Outcome(List.copyOf(steps), Knee.analyse(steps), timeUp, stoppedBy);
  }
}
