package io.sluice.core.intake;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.bootstrap.Controllers;
import io.sluice.config.ConfigLoader;
import io.sluice.config.IntakeSection;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
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

  /**
   * A fresh replica (fake clock) whose pool caps request slots at 4: interactive holds all four
   * with 500 units each, so by work 80 % of the pool is idle, while no job can start before one of
   * them ends. The window's end assumes what the pool really gives background work now: nothing but
   * the floor (a tenth of the 800 units a second it can run). The old rule (the idle part by work)
   * promised 32.9 s.
   */
  @Test
  void freshStart_othersHoldEverySlot_theLatestAssumesTheFloor_notTheIdleWork() {
    FakeTicker ticker = new FakeTicker();
    Rig rig = new Rig(ticker, "{gpu: {capacity: 10000, maxRequests: 4, defaultServiceTime: 2s}}");
    for (int i = 0; i < 4; i++) {
      rig.admit("interactive", 500);
    }
    StartWindow w = rig.window(20_000, 400);
    assertThat(w.earliestMillis()).isEqualTo(NOW + 25_000); // all of 4 x 400 per 2 s
    assertThat(w.latestMillis()).isEqualTo(NOW + 255_000 + 1_000); // 20,400 at 80 a second
  }

  /**
   * A fresh replica: interactive holds half of the pool's work and a second interactive request of
   * 6,000 units waits in Sluice's queue (it does not fit). No job is dispatched while a request
   * waits, so the window's end assumes the floor; the old rule (the idle part by work: 1/2)
   * promised 11.6 s.
   */
  @Test
  void freshStart_anotherRequestWaits_theLatestAssumesTheFloor() {
    FakeTicker ticker = new FakeTicker();
    Rig rig = new Rig(ticker);
    rig.admit("interactive", 5_000);
    long now = ticker.nanos();
    Decision queued =
        rig.controller.decide(
            rig.request("interactive", 6_000),
            Ask.hold(Duration.ofSeconds(5).toNanos(), new NoWaiter(), now));
    assertThat(queued).isInstanceOf(Decision.Queued.class);
    StartWindow w = rig.window(20_000, 400);
    assertThat(w.earliestMillis()).isEqualTo(NOW + 4_000); // the jobs ahead at 5,000 a second
    assertThat(w.latestMillis()).isEqualTo(NOW + 52_800 + 1_000); // 26,400 at 500 a second
  }

  /**
   * The store measured the queue draining 2,000 units a second over the last 10 s (20,000 units
   * claimed): the window's end counts on half of it (1,000 of the 5,000 the pool can run), although
   * the pool is idle now. The old rule (the idle part now: all of it) promised 5.1 s.
   */
  @Test
  void measuredDrain_slowerThanTheRoomNow_theLatestCountsOnHalfOfIt() {
    FakeTicker ticker = new FakeTicker();
    Rig rig = new Rig(ticker);
    rig.drained(20_000, 10_000);
    StartWindow w = rig.window(20_000, 400);
    assertThat(w.earliestMillis()).isEqualTo(NOW + 4_000);
    assertThat(w.latestMillis()).isEqualTo(NOW + 20_400 + 1_000);
  }

  /**
   * Where the evidence allows, the window narrows: interactive holds 3/4 of the pool now (room 1/4:
   * 16.3 s by the old rule), but the queue was measured draining 4,000 units a second: the end
   * counts on 2,000 of them.
   */
  @Test
  void measuredDrain_fasterThanTheRoomNow_narrowsTheWindow() {
    FakeTicker ticker = new FakeTicker();
    Rig rig = new Rig(ticker);
    rig.admit("interactive", 7_500);
    rig.drained(40_000, 10_000);
    StartWindow w = rig.window(20_000, 400);
    assertThat(w.earliestMillis()).isEqualTo(NOW + 4_000);
    assertThat(w.latestMillis()).isEqualTo(NOW + 10_200 + 1_000);
  }

  /**
   * A hold learned under load, longer than the declared 2 s (three requests held 4 s each), bounds
   * the latest start but not the earliest: the jobs may run at the configured capacity. The old
   * rule (the learned hold for both) promised 8 s at the earliest.
   */
  @Test
  void aLearnedHoldLongerThanDeclared_theEarliestAtTheConfiguredCapacity() {
    FakeTicker ticker = new FakeTicker();
    Rig rig = new Rig(ticker);
    rig.admit("interactive", 7_500);
    rig.completed(3, Duration.ofSeconds(4));
    StartWindow w = rig.window(20_000, 400);
    assertThat(w.earliestMillis()).isEqualTo(NOW + 4_000); // 10,000 units per 2 s
    assertThat(w.latestMillis()).isEqualTo(NOW + 32_640 + 1_000); // a quarter of 10,000 per 4 s
  }

  /**
   * A job just enqueued (the store shows no drain yet) after requests held only 0.5 s (cut short,
   * say, by a saturated front end): the end assumes the floor of the configured capacity (10,000
   * units per 2 s), not of the learned hold's (per 0.5 s, 10.2 s), nor the room now (4.1 s).
   */
  @Test
  void noDrainShownYet_theFloorAtTheConfiguredCapacity_notAShortLearnedHold() {
    FakeTicker ticker = new FakeTicker();
    Rig rig = new Rig(ticker);
    rig.admit("interactive", 7_500);
    rig.completed(3, Duration.ofMillis(500));
    rig.drained(0, 0); // enqueued now: jobs wait, no drain shown
    StartWindow w = rig.window(20_000, 400);
    assertThat(w.earliestMillis()).isEqualTo(NOW + 1_000); // 20,000 units per 0.5 s
    assertThat(w.latestMillis()).isEqualTo(NOW + 40_800 + 1_000); // 500 a second
  }

  /** One pool, interactive and batch (late intake), a fixed clock and a fake ticker. */
  private static final class Rig {
    final FakeTicker ticker;
    final InMemoryJobStore store = new InMemoryJobStore(10);
    final SluiceConfig config;
    final AdmissionController controller;
    final Intake intake;

    Rig(FakeTicker ticker) {
      this(ticker, "{gpu: {capacity: 10000, defaultServiceTime: 2s}}");
    }

    Rig(FakeTicker ticker, String pools) {
      this.ticker = ticker;
      this.config =
          ConfigLoader.parse(
              """
            pools: %s
            classes:
              interactive: {rank: 0, reservedShare: 0.8, borrow: true, maxQueueWait: 10s}
              batch: {rank: 1, borrow: true}
            routes:
              - {name: responses, match: {pathPrefix: /v1/responses}, class: batch, format: openai-responses}
            intake: {enabled: true, whenLate: {batch: accept}}
            """
                  .formatted(pools));
      this.controller = Controllers.forPolicy(config, Math::random);
      this.intake =
          new Intake(
              config.section(IntakeSection.SECTION),
              store,
              "t_",
              Clock.fixed(Instant.ofEpochMilli(NOW), ZoneOffset.UTC),
              ticker,
              1_000);
    }

    Decision.Admit admit(String className, long work) {
      Decision d = controller.decide(request(className, work), Ask.now(ticker.nanos()));
      assertThat(d).isInstanceOf(Decision.Admit.class);
      return (Decision.Admit) d;
    }

    /** {@code n} batch requests of 100 units, each held {@code hold} and completed. */
    void completed(int n, Duration hold) {
      for (int i = 0; i < n; i++) {
        Decision.Admit a = admit("batch", 100);
        ticker.advance(hold);
        a.permit().release(Outcome.COMPLETED, ticker.nanos());
      }
    }

    AdmissionRequest request(String className, long work) {
      long now = ticker.nanos();
      return new AdmissionRequest(
          config.pools().get("gpu"),
          config.classes().get(className),
          new Tenant("acme", TierPolicy.defaults("pro")),
          work,
          now,
          now + Duration.ofMinutes(1).toNanos(),
          -1,
          -1);
    }

    /**
     * The store saw {@code work} units leave the pool's queue over the {@code millis} before now: a
     * job of that work and one of 400 enqueued then, the first claimed, the backlog read now.
     */
    void drained(long work, long millis) {
      JobStore.Caps caps = new JobStore.Caps(100, 1_000_000, 3_600_000);
      for (long w : new long[] {work, 400}) {
        var unused =
            store.enqueue(
                "t_",
                new JobStore.NewJob(
                    OperationIds.next(),
                    "acme",
                    "gpu",
                    "batch",
                    "responses",
                    "m1",
                    w,
                    NOW - millis,
                    EXPIRY,
                    new byte[0]),
                caps);
      }
      var claimed = store.claim("t_", "gpu", "r1", NOW - millis / 2, 60_000, 3_600_000);
      var unused = store.backlog("t_", "gpu", NOW, 3_600_000);
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

  /** A queued request nobody answers (the test ends before it would start). */
  private static final class NoWaiter implements io.sluice.core.admission.Waiter {
    @Override
    public void admitted(io.sluice.core.admission.Permit permit, long waitedNanos) {}

    @Override
    public void refused(Decision.Reject rejection, long waitedNanos) {}
  }

  private static org.assertj.core.data.Offset<Double> within(double d) {
    return org.assertj.core.data.Offset.offset(d);
  }
}
