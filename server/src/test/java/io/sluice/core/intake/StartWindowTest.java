package io.sluice.core.intake;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.config.IntakeSection;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.PoolState;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryJobStore;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

/** The predicted start window: the pool's rate across replicas, the bounds, no rate yet. */
class StartWindowTest {
  private static final long NOW = 1_800_000_000_000L;
  private static final long EXPIRY = NOW + 3_600_000;

  @Test
  void poolRate_isThisReplicasOverItsShare_alone_orWithoutAShare_itsOwn() {
    assertThat(StartWindow.poolRate(1_000, 1.0 / 3)).isCloseTo(3_000, within(1e-6));
    assertThat(StartWindow.poolRate(1_000, 1.0)).isEqualTo(1_000);
    assertThat(StartWindow.poolRate(1_000, 0)).isEqualTo(1_000);
  }

  @Test
  void window_wholeRateToHalfRatePlusOneInterval_cappedAtExpiry() {
    StartWindow w = StartWindow.of(NOW, EXPIRY, 3_000, 1_000, 1_000, 1_000);
    assertThat(w.earliestMillis()).isEqualTo(NOW + 3_000);
    assertThat(w.latestMillis()).isEqualTo(NOW + 8_000 + 1_000);
    assertThat(StartWindow.of(NOW, NOW + 5_000, 3_000, 1_000, 1_000, 1_000).latestMillis())
        .isEqualTo(NOW + 5_000);
  }

  @Test
  void noRateYet_nowToExpiry() {
    StartWindow w = StartWindow.of(NOW, EXPIRY, 3_000, 1_000, 0, 1_000);
    assertThat(w).isEqualTo(new StartWindow(NOW, EXPIRY));
  }

  @Test
  void rate_measuredSinceStart_overTheShare_elseTheStartingRate() {
    assertThat(StartWindow.rate(1_000, 0.5, 9_999)).isCloseTo(2_000, within(1e-6));
    assertThat(StartWindow.rate(0, 0.5, 9_999)).isEqualTo(9_999); // no completion yet
    assertThat(StartWindow.rate(0, 0.5, -1)).isZero();
    // 60,000 work units per 30 s: 2,000 a second
    assertThat(StartWindow.prior(60_000, 30_000_000_000L)).isCloseTo(2_000, within(1e-6));
    assertThat(StartWindow.prior(60_000, 0)).isZero();
  }

  @Test
  void canRun_capacityOverItsServiceTime_boundedByItsSlots() {
    // 10,000 units per 2 s
    assertThat(StartWindow.canRun(10_000, 0, 400, 2e9)).isCloseTo(5_000, within(1e-6));
    // 16 slots of 400-unit jobs hold 6,400 of the 10,000 units: 3,200 a second
    assertThat(StartWindow.canRun(10_000, 16, 400, 2e9)).isCloseTo(3_200, within(1e-6));
    assertThat(StartWindow.canRun(10_000, 16, 400, 0)).isZero();
  }

  @Test
  void idleShare_whatTheOtherClassesLeave_atLeastTheFloor() {
    assertThat(StartWindow.idleShare(7_500, 10_000)).isCloseTo(0.25, within(1e-9));
    assertThat(StartWindow.idleShare(0, 10_000)).isEqualTo(1.0);
    assertThat(StartWindow.idleShare(10_000, 10_000)).isEqualTo(StartWindow.MIN_IDLE);
    assertThat(StartWindow.idleShare(0, 0)).isEqualTo(StartWindow.MIN_IDLE); // no share yet
  }

  @Test
  void predict_queuedWorkFirst_latestAtTheIdleRate() {
    // 5,000 units/s; 20,000 ahead, 1,000 of other classes waiting in Sluice's queue; idle 0.25
    StartWindow w = StartWindow.predict(NOW, EXPIRY, 20_000, 1_000, 1_000, 400, 5_000, 0.25, 1_000);
    assertThat(w.earliestMillis()).isEqualTo(NOW + 4_200);
    assertThat(w.latestMillis()).isEqualTo(NOW + 17_120 + 1_000);
    assertThat(StartWindow.predict(NOW, EXPIRY, 20_000, 0, 0, 400, 0, 0.25, 1_000))
        .isEqualTo(new StartWindow(NOW, EXPIRY));
  }

  /**
   * A fresh replica (no completion yet, fake clock): interactive holds 3/4 of a 10,000-unit pool
   * that declares 2 s per request, and 50 jobs of 400 units wait ahead. Background work drains at
   * what the pool can run less what interactive holds: 5,000 × 1/4 = 1,250 units a second, so the
   * jobs ahead are gone after 16 s; the promised window must hold that start. (The window of the
   * pool's whole starting rate and half of it promised 9.2 s at the latest.)
   */
  @Test
  void freshStart_theWindowHoldsTheStart_atWhatThePoolCanRunLessWhatOthersHold() {
    FakeTicker ticker = new FakeTicker();
    Rig rig = new Rig(ticker);
    rig.admit("interactive", 7_500);
    StartWindow w = rig.window(20_000, 400);
    long start = NOW + 20_000 * 1000L / 1_250; // drained at the idle rate: 16 s
    assertThat(start).isBetween(w.earliestMillis(), w.latestMillis());
    assertThat(w.earliestMillis()).isEqualTo(NOW + 4_000); // all of 5,000 a second
    assertThat(w.latestMillis()).isEqualTo(NOW + 16_320 + 1_000);
  }

  /** Once requests completed, the mean hold it learned replaces the declared service time. */
  @Test
  void afterCompletions_theLearnedHoldReplacesTheDeclaredServiceTime() {
    FakeTicker ticker = new FakeTicker();
    Rig rig = new Rig(ticker);
    rig.admit("interactive", 7_500);
    for (int i = 0; i < 3; i++) { // three batch requests held 1 s each
      Decision.Admit a = rig.admit("batch", 100);
      ticker.advance(Duration.ofSeconds(1));
      a.permit().release(Outcome.COMPLETED, ticker.nanos());
    }
    StartWindow w = rig.window(20_000, 400);
    assertThat(w.earliestMillis()).isEqualTo(NOW + 2_000); // 10,000 units a second
    assertThat(w.latestMillis()).isEqualTo(NOW + 8_160 + 1_000); // a quarter of it
  }

  /** One pool, interactive and batch (late intake), a fixed clock and a fake ticker. */
  private static final class Rig {
    final FakeTicker ticker;
    final SluiceConfig config =
        ConfigLoader.parse(
            """
            pools: {gpu: {capacity: 10000, defaultServiceTime: 2s}}
            classes:
              interactive: {rank: 0, reservedShare: 0.8, borrow: true}
              batch: {rank: 1, borrow: true}
            routes:
              - {name: responses, match: {pathPrefix: /v1/responses}, class: batch, format: openai-responses}
            intake: {enabled: true, whenLate: {batch: accept}}
            """);
    final AdmissionController controller =
        new AdmissionController(
            config.pools().values(),
            config.classes().values(),
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            Math::random);
    final Intake intake;

    Rig(FakeTicker ticker) {
      this.ticker = ticker;
      this.intake =
          new Intake(
              config.section(IntakeSection.SECTION),
              new InMemoryJobStore(10),
              "t_",
              Clock.fixed(Instant.ofEpochMilli(NOW), ZoneOffset.UTC),
              ticker,
              1_000);
    }

    Decision.Admit admit(String className, long work) {
      PoolPolicy pool = config.pools().get("gpu");
      long now = ticker.nanos();
      Decision d =
          controller.decide(
              new AdmissionRequest(
                  pool,
                  config.classes().get(className),
                  new Tenant("acme", TierPolicy.defaults("pro")),
                  work,
                  now,
                  now + Duration.ofMinutes(1).toNanos(),
                  -1,
                  -1),
              Ask.now(now));
      assertThat(d).isInstanceOf(Decision.Admit.class);
      return (Decision.Admit) d;
    }

    StartWindow window(long aheadWork, long ownWork) {
      return intake.window(
          controller,
          "gpu",
          new JobStore.JobView(
              "resp_x",
              "gpu",
              JobStatus.QUEUED,
              "m1",
              ownWork,
              NOW,
              EXPIRY,
              50,
              aheadWork,
              null,
              null));
    }
  }

  private static org.assertj.core.data.Offset<Double> within(double d) {
    return org.assertj.core.data.Offset.offset(d);
  }
}
