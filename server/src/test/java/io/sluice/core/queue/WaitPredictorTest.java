package io.sluice.core.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.sluice.core.time.FakeTicker;
import org.junit.jupiter.api.Test;

class WaitPredictorTest {
  private static final long SEC = 1_000_000_000L;
  private static final long MS = 1_000_000L;

  private final FakeTicker ticker = new FakeTicker();

  /** capacity 10,000 work units, half-life 10 s, default service 20 s (floor 500 units/s). */
  private final WaitPredictor predictor =
      new WaitPredictor(new WaitPredictor.Config(10_000, 10 * SEC, 20 * SEC, 50, 0));

  @Test
  void noSamples_assumesCapacityDrainsOverDefaultServiceTime() {
    assertThat(predictor.workUnitsPerSecond()).isEqualTo(500.0);
    assertThat(predictor.predictedDrainNanos(5_000)).isEqualTo(10 * SEC);
    assertThat(predictor.expectedServiceNanos(1234)).isEqualTo(20 * SEC);
    assertThat(predictor.measuredWorkUnitsPerSecond()).isNaN();
  }

  @Test
  void steadyCompletions_rateConvergesToMeasuredThroughput() {
    // 2,000 units per second: 200 units every 100 ms for 60 s
    for (int i = 0; i <= 600; i++) {
      predictor.onCompletion(200, ticker.nanos());
      ticker.advanceNanos(100 * MS);
    }
    assertThat(predictor.measuredWorkUnitsPerSecond()).isCloseTo(2000.0, within(20.0));
    assertThat(predictor.predictedDrainNanos(4_000)).isCloseTo(2 * SEC, within(30 * MS));
  }

  @Test
  void rateDrop_halfLifeLater_isHalfwayToNewRate() {
    for (int i = 0; i <= 1200; i++) {
      predictor.onCompletion(200, ticker.nanos()); // 2,000/s
      ticker.advanceNanos(100 * MS);
    }
    for (int i = 0; i < 100; i++) {
      predictor.onCompletion(100, ticker.nanos()); // 1,000/s for one half-life
      ticker.advanceNanos(100 * MS);
    }
    assertThat(predictor.measuredWorkUnitsPerSecond()).isCloseTo(1500.0, within(30.0));
  }

  @Test
  void measuredRateBelowDefault_floorApplies() {
    for (int i = 0; i <= 600; i++) {
      predictor.onCompletion(10, ticker.nanos()); // 100/s
      ticker.advanceNanos(100 * MS);
    }
    assertThat(predictor.measuredWorkUnitsPerSecond()).isCloseTo(100.0, within(2.0));
    assertThat(predictor.workUnitsPerSecond()).isEqualTo(500.0);
  }

  @Test
  void predictWait_workAheadMinusFreeCapacity_overRate() {
    assertThat(predictor.predictWaitNanos(1_000, 200, 1_200)).isZero();
    assertThat(predictor.predictWaitNanos(1_000, 200, 200)).isEqualTo(2 * SEC);
    assertThat(predictor.predictWaitNanos(1_000, 0)).isEqualTo(2 * SEC);
  }

  @Test
  void expectedService_fromPerWorkUnitLatency() {
    for (int i = 0; i < 100; i++) {
      predictor.onServiceTime(1_000, 4 * SEC); // 4 ms per unit
    }
    assertThat(predictor.expectedServiceNanos(500)).isEqualTo(2 * SEC);
  }

  @Test
  void feasible_waitWithinMinOfMaxWaitAndDeadlineMinusService() {
    long now = ticker.nanos();
    long deadline = now + 10 * SEC;
    // budget = min(5 s, 10 s - 3 s) = 5 s
    assertThat(WaitPredictor.startBudgetNanos(now, deadline, 5 * SEC, 3 * SEC)).isEqualTo(5 * SEC);
    assertThat(WaitPredictor.feasible(now, deadline, 5 * SEC, 5 * SEC, 3 * SEC)).isTrue();
    assertThat(WaitPredictor.feasible(now, deadline, 5 * SEC, 5 * SEC + 1, 3 * SEC)).isFalse();
    // budget = min(5 s, 10 s - 8 s) = 2 s
    assertThat(WaitPredictor.feasible(now, deadline, 5 * SEC, 2 * SEC, 8 * SEC)).isTrue();
    assertThat(WaitPredictor.feasible(now, deadline, 5 * SEC, 2 * SEC + 1, 8 * SEC)).isFalse();
    // service alone outlasts the deadline
    assertThat(WaitPredictor.feasible(now, deadline, 5 * SEC, 0, 11 * SEC)).isFalse();
  }

  @Test
  void queuedItemExpiry_isLatestStartThatMeetsDeadline() {
    long now = ticker.nanos();
    assertThat(QueuedItem.expiryNanos(now, 5 * SEC, now + 10 * SEC, 8 * SEC))
        .isEqualTo(now + 2 * SEC);
    assertThat(QueuedItem.expiryNanos(now, 5 * SEC, now + 10 * SEC, 1 * SEC))
        .isEqualTo(now + 5 * SEC);
  }

  @Test
  void hasServiceSamples_onlyAfterAServiceTimeWithWork() {
    assertThat(predictor.hasServiceSamples()).isFalse();
    predictor.onServiceTime(0, SEC); // no work: ignored
    assertThat(predictor.hasServiceSamples()).isFalse();
    predictor.onServiceTime(100, SEC);
    assertThat(predictor.hasServiceSamples()).isTrue();
    assertThat(predictor.expectedServiceNanos(50)).isEqualTo(SEC / 2);
  }

  @Test
  void requestSlots_bindingDimensionDecidesTheWait() {
    // capacity far beyond the work; 2 request slots; default service 10 s: floor 0.2 requests/s
    WaitPredictor p =
        new WaitPredictor(
            new WaitPredictor.Config(1_000_000, 10_000_000_000L, 10_000_000_000L, 20, 2));
    assertThat(p.requestsPerSecond()).isCloseTo(0.2, within(1e-9));
    // work alone says no wait (all of it is free); the slots say one must free first: 5 s
    assertThat(p.predictWaitNanos(0, 10, 1_000_000)).isZero();
    assertThat(p.predictWaitNanos(0, 10, 1_000_000, 0, 0)).isEqualTo(5_000_000_000L);
    assertThat(p.predictWaitNanos(0, 10, 1_000_000, 3, 1)).isEqualTo(15_000_000_000L);
    assertThat(p.predictWaitNanos(0, 10, 1_000_000, 0, 1)).isZero();
    assertThat(p.predictedDrainNanos(10, 2)).isEqualTo(10_000_000_000L);
  }

  @Test
  void requestSlots_measuredRequestRateIsLearnedFromCompletions() {
    WaitPredictor p =
        new WaitPredictor(
            new WaitPredictor.Config(1_000_000, 10_000_000_000L, 60_000_000_000L, 20, 4));
    long now = 0;
    for (int i = 0; i <= 200; i++) {
      p.onCompletion(1, now); // one request every 250 ms: 4 per second
      now += 250_000_000L;
    }
    assertThat(p.requestsPerSecond()).isBetween(3.8, 4.2);
    assertThat(p.predictWaitNanos(0, 1, 1_000_000, 7, 0)).isBetween(1_900_000_000L, 2_100_000_000L);
  }

  @Test
  void withoutARequestCapTheSlotsAreIgnored() {
    WaitPredictor p =
        new WaitPredictor(new WaitPredictor.Config(100, 10_000_000_000L, 1_000_000_000L, 20, 0));
    assertThat(p.requestsPerSecond()).isZero();
    assertThat(p.predictWaitNanos(0, 10, 100, 1_000, 0)).isZero();
    assertThat(p.predictedDrainNanos(0, 1_000)).isZero();
  }
}
