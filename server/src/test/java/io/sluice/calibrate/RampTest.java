package io.sluice.calibrate;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The step schedule against a model of an endpoint (no HTTP). */
class RampTest {

  private static Ramp.Outcome run(Ramp.Schedule s, List<Integer> tried, Ramp.Stepper stepper)
      throws Exception {
    return Ramp.run(s, recording(tried, stepper), () -> false, x -> {});
  }

  /** {@code stepper}, noting each concurrency it is asked for in {@code tried}. */
  private static Ramp.Stepper recording(List<Integer> tried, Ramp.Stepper stepper) {
    return c -> {
      tried.add(c);
      return stepper.step(c);
    };
  }

  @Test
  void processorSharing_findsKWithin15Percent_inFewSteps() throws Exception {
    for (int k = 3; k <= 48; k++) {
      int slots = k;
      List<Integer> tried = new ArrayList<>();
      Ramp.Outcome o = run(new Ramp.Schedule(1, 64, 2.0, 3), tried, c -> KneeTest.ps(c, slots, 0));
      int knee = o.analysis().kneeConcurrency();
      assertThat(Math.abs(knee - k))
          .as("K=%d: knee %d, tried %s", k, knee, tried)
          .isLessThanOrEqualTo((int) Math.floor(0.15 * k));
      assertThat(tried.size()).as("K=%d: tried %s", k, tried).isLessThanOrEqualTo(16);
    }
  }

  @Test
  void coarseSteps_double_andStopWhenFlat() throws Exception {
    List<Integer> tried = new ArrayList<>();
    Ramp.Outcome o = run(new Ramp.Schedule(1, 64, 2.0, 0), tried, c -> KneeTest.ps(c, 8, 0));
    // 16 is flat (and at 2x TTFT, not above): the ramp stops there
    assertThat(tried).containsExactly(1, 2, 4, 8, 16);
    assertThat(o.stoppedBy()).isEqualTo("throughput flat at 16");
    assertThat(o.timeUp()).isFalse();
  }

  @Test
  void aSlowStep_isConfirmedByTheNext_beforeTheRampStops() throws Exception {
    List<Integer> tried = new ArrayList<>();
    Ramp.Outcome o =
        run(
            new Ramp.Schedule(1, 64, 2.0, 3),
            tried,
            // K = 32; the step at 8 has a TTFT spike (noise), 64 is really slow
            c ->
                c == 8 || c == 64
                    ? StepResult.of(c, 10.0 * Math.min(c, 32), 300, Map.of())
                    : KneeTest.ps(c, 32, 0));
    assertThat(tried).startsWith(1, 2, 4, 8, 16, 32, 64);
    assertThat(o.analysis().kneeConcurrency()).isBetween(31, 32); // 31 is 97 % of 32
    assertThat(o.stoppedBy()).isEqualTo("throughput flat at 64");
  }

  @Test
  void ceiling_stopsTheRamp_andIsRefined() throws Exception {
    List<Integer> tried = new ArrayList<>();
    Ramp.Outcome o =
        run(
            new Ramp.Schedule(1, 64, 2.0, 3),
            tried,
            c -> c > 6 ? StepResult.of(c, 60, 100, Map.of("429", 10)) : KneeTest.ps(c, 16, 0));
    assertThat(tried).containsExactly(1, 2, 4, 8, 3, 5, 6, 7);
    assertThat(o.analysis().ceiling()).isEqualTo(7);
    assertThat(o.analysis().kneeConcurrency()).isEqualTo(6);
    assertThat(o.stoppedBy()).isEqualTo("429/503 at 8");
  }

  @Test
  void timeLimit_endsTheRunWithTheStepsSoFar() throws Exception {
    List<Integer> tried = new ArrayList<>();
    Ramp.Outcome o =
        Ramp.run(
            new Ramp.Schedule(1, 64, 2.0, 3),
            recording(tried, c -> KneeTest.ps(c, 32, 0)),
            () -> tried.size() >= 3,
            x -> {});
    assertThat(tried).containsExactly(1, 2, 4);
    assertThat(o.timeUp()).isTrue();
    assertThat(o.analysis().kneeConcurrency()).isEqualTo(4);
    assertThat(o.analysis().lowerBound()).isTrue();
  }

  @Test
  void schedule_growsByTheFactor_atLeastByOne_upToTheMax() {
    Ramp.Schedule s = new Ramp.Schedule(1, 10, 1.5, 0);
    List<Integer> steps = new ArrayList<>();
    for (int c = s.start(); c > 0; c = s.next(c)) {
      steps.add(c);
    }
    assertThat(steps).containsExactly(1, 2, 3, 5, 8, 10);
  }
}
