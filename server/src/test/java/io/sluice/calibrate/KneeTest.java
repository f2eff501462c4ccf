package io.sluice.calibrate;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The knee rule on synthetic steps. */
class KneeTest {

  /** Processor sharing with K slots: throughput flattens at K, TTFT grows as c/K beyond it. */
  static StepResult ps(int c, int k, double noise) {
    double rps = 10.0 * Math.min(c, k) * (1 + noise);
    double ttft = 100.0 * Math.max(1.0, (double) c / k) * (1 + noise / 2);
    return StepResult.of(c, rps, ttft, Map.of());
  }

  static List<StepResult> psCurve(int k, int... concurrencies) {
    List<StepResult> out = new ArrayList<>();
    for (int c : concurrencies) {
      out.add(ps(c, k, 0));
    }
    return out;
  }

  @Test
  void flat_theKneeIsTheFirstStep() {
    // one request at a time: more concurrency buys nothing
    List<StepResult> steps = new ArrayList<>();
    for (int c : new int[] {1, 2, 4, 8}) {
      steps.add(StepResult.of(c, 10.0, 100.0 * c, Map.of()));
    }
    Knee.Analysis a = Knee.analyse(steps);
    assertThat(a.kneeConcurrency()).isEqualTo(1);
    assertThat(a.cut()).isEqualTo(Knee.Cut.TTFT); // c=4: 4x the baseline TTFT
    assertThat(a.ceiling()).isZero();
    assertThat(a.kneeLine()).startsWith("knee: 1 concurrent requests");
  }

  @Test
  void processorSharing_theKneeIsTheSlotCount() {
    Knee.Analysis a = Knee.analyse(psCurve(8, 1, 2, 4, 8, 16, 5, 6, 7));
    assertThat(a.kneeConcurrency()).isEqualTo(8);
    assertThat(a.maxThroughput()).isEqualTo(80.0);
    assertThat(a.baselineTtftP95()).isEqualTo(100.0);
    assertThat(a.lowerBound()).isFalse();
    assertThat(a.steps())
        .extracting(StepResult::concurrency)
        .containsExactly(1, 2, 4, 5, 6, 7, 8, 16);
  }

  @Test
  void processorSharing_refinementNarrowsTheCoarseKnee() {
    // K = 10: the coarse ramp sees 8 (80 %) and 16 (100 %): the knee lies in (8, 16]
    Knee.Analysis coarse = Knee.analyse(psCurve(10, 1, 2, 4, 8, 16));
    assertThat(coarse.kneeConcurrency()).isEqualTo(16);
    List<Integer> refine = Knee.refinements(coarse, 3);
    assertThat(refine).containsExactly(10, 12, 14);
    List<StepResult> all = new ArrayList<>(coarse.steps());
    refine.forEach(c -> all.add(ps(c, 10, 0)));
    assertThat(Knee.analyse(all).kneeConcurrency()).isEqualTo(10);
  }

  @Test
  void ttftThatClimbsSteeply_endsTheEligibleSteps() {
    // throughput still grows, but TTFT p95 triples at 16: the knee is below it
    List<StepResult> steps =
        List.of(
            StepResult.of(1, 10, 100, Map.of()),
            StepResult.of(2, 20, 110, Map.of()),
            StepResult.of(4, 40, 130, Map.of()),
            StepResult.of(8, 70, 180, Map.of()),
            StepResult.of(16, 90, 320, Map.of()));
    Knee.Analysis a = Knee.analyse(steps);
    assertThat(a.cut()).isEqualTo(Knee.Cut.TTFT);
    assertThat(a.cutStep().concurrency()).isEqualTo(16);
    assertThat(a.kneeConcurrency()).isEqualTo(8);
    assertThat(Knee.refinements(a, 3)).containsExactly(5, 6, 7, 10, 12, 14);
  }

  @Test
  void aTtftSpikeThatAHigherStepDoesNotConfirm_isNoise() {
    List<StepResult> steps = new ArrayList<>(psCurve(16, 1, 2, 4, 8, 12, 16, 20));
    steps.set(4, StepResult.of(12, 120, 250, Map.of())); // a stalled machine: 2.5x at 12 only
    Knee.Analysis a = Knee.analyse(steps);
    assertThat(a.cut()).isEqualTo(Knee.Cut.NONE);
    assertThat(a.kneeConcurrency()).isEqualTo(16);
    // the same spike at the top is not known to be noise: the steps end there
    steps.set(6, StepResult.of(20, 160, 260, Map.of()));
    Knee.Analysis top = Knee.analyse(steps);
    assertThat(top.cut()).isEqualTo(Knee.Cut.TTFT);
    assertThat(top.cutStep().concurrency()).isEqualTo(20);
    assertThat(top.kneeConcurrency()).isEqualTo(16);
  }

  @Test
  void ceiling_isTheLowestConcurrencyWith429Or503_andCapsTheKnee() {
    // K = 16, but the provider answers 429 above 6 in flight
    List<StepResult> steps = new ArrayList<>(psCurve(16, 1, 2, 4, 5, 6));
    steps.add(StepResult.of(7, 65, 100, Map.of("429", 5)));
    steps.add(StepResult.of(8, 60, 100, Map.of("429", 12)));
    Knee.Analysis a = Knee.analyse(steps);
    assertThat(a.ceiling()).isEqualTo(7);
    assertThat(a.lastCleanBelowCeiling()).isEqualTo(6);
    assertThat(a.cut()).isEqualTo(Knee.Cut.CEILING);
    assertThat(a.kneeConcurrency()).isEqualTo(6);
    assertThat(a.ceilingLine())
        .isEqualTo(
            "ceiling: 429/503 from 7 concurrent requests (none at 6): the endpoint limits"
                + " concurrency to about 6");
    assertThat(a.kneeLine()).contains("capped below the ceiling");
  }

  @Test
  void ceiling_evenWithoutAThrottledStepAboveIt_coarseStepsAreRefined() {
    List<StepResult> steps = new ArrayList<>(psCurve(16, 1, 2, 4));
    steps.add(StepResult.of(8, 60, 100, Map.of("503", 3)));
    Knee.Analysis a = Knee.analyse(steps);
    assertThat(a.ceiling()).isEqualTo(8);
    // below the knee (4, still growing: 3) and below the ceiling (5, 6, 7)
    assertThat(Knee.refinements(a, 3)).containsExactly(3, 5, 6, 7);
  }

  @Test
  void errorsAboveOnePercent_endTheEligibleSteps() {
    List<StepResult> steps = new ArrayList<>(psCurve(32, 1, 2, 4, 8));
    // 100 ok, 2 resets: 1.96 %
    steps.add(StepResult.of(16, 160, 100, Map.of("io", 2)));
    Knee.Analysis a = Knee.analyse(steps);
    assertThat(a.cut()).isEqualTo(Knee.Cut.ERRORS);
    assertThat(a.ceiling()).isZero();
    assertThat(a.kneeConcurrency()).isEqualTo(8);
    // one error in a hundred is tolerated
    steps.set(4, StepResult.of(16, 160, 100, Map.of("io", 1)));
    assertThat(Knee.analyse(steps).kneeConcurrency()).isEqualTo(16);
  }

  @Test
  void noisy_processorSharing_theKneeStaysWithin15PercentOfK() {
    // throughput measured within ±2.5 %
    double[] noise = {0.025, -0.02, 0.015, -0.025, 0.02, -0.015, 0.01, -0.01, 0.025, -0.02, 0.005};
    for (int k : new int[] {6, 8, 12, 16, 24}) {
      for (int shift = 0; shift < noise.length; shift++) {
        List<StepResult> steps = new ArrayList<>();
        int i = shift;
        for (int c = 1; c <= 2 * k; c++) {
          steps.add(ps(c, k, noise[i++ % noise.length]));
        }
        int knee = Knee.analyse(steps).kneeConcurrency();
        assertThat(Math.abs(knee - k))
            .as("K=%d noise shift %d: knee %d", k, shift, knee)
            .isLessThanOrEqualTo((int) Math.floor(0.15 * k));
      }
    }
  }

  @Test
  void stillGrowingAtTheHighestStep_isALowerBound() {
    Knee.Analysis a = Knee.analyse(psCurve(100, 1, 2, 4, 8, 16));
    assertThat(a.kneeConcurrency()).isEqualTo(16);
    assertThat(a.lowerBound()).isTrue();
    assertThat(a.kneeLine()).contains("a lower bound");
  }

  @Test
  void nothingCompleted_noKnee() {
    Knee.Analysis a =
        Knee.analyse(
            List.of(
                new StepResult(
                    1,
                    10,
                    0,
                    new java.util.TreeMap<>(Map.of("404", 10)),
                    0,
                    0,
                    0,
                    Double.NaN,
                    Double.NaN,
                    Double.NaN,
                    Double.NaN,
                    Double.NaN,
                    10)));
    assertThat(a.knee()).isNull();
    assertThat(a.kneeLine()).startsWith("knee: not found");
  }
}
