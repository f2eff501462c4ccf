package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Queue-hold rules of the admission core, on a fake clock (no sleeps, no threads). */
class QueueHoldTest {
  private static final long HOLD = Duration.ofSeconds(5).toNanos();
  private final FakeTicker time = new FakeTicker();
  private final PoolPolicy pool =
      PoolPolicy.builder("p", 1000)
          .maxMessageTimeout(Duration.ofSeconds(5))
          .retryAfterJitter(0.0)
          .defaultServiceTime(Duration.ofSeconds(1))
          .build();
  private final ClassPolicy interactive = cls("interactive", 0, 0.5, 2, 1000, 10, 0.5);
  private final ClassPolicy batch = cls("batch", 1, 0.0, 4, 1000, 10, 0.5);
  private final AdmissionController controller =
      new AdmissionController(
          List.of(pool),
          List.of(interactive, batch),
          Duration.ofSeconds(10),
          PoolState.ReleaseListener.NONE,
          () -> 0.5);

  private static ClassPolicy cls(
      String name,
      int rank,
      double reserved,
      int maxWaitSeconds,
      double workShare,
      int maxItems,
      double tenantShare) {
    return ClassPolicy.builder(name)
        .rank(rank)
        .shares(reserved, 0.0)
        .deadline(Duration.ofSeconds(30))
        .maxQueueWait(Duration.ofSeconds(maxWaitSeconds))
        .outputTokens(100, 1000)
        .queue(workShare / 1000.0, maxItems, tenantShare)
        .build();
  }

  /** A waiter that records what happened to it. */
  static final class Recorder implements Waiter {
    final List<Permit> admitted = new ArrayList<>();
    final List<Decision.Reject> refused = new ArrayList<>();
    long waited = -1;

    @Override
    public void admitted(Permit permit, long waitedNanos) {
      admitted.add(permit);
      waited = waitedNanos;
    }

    @Override
    public void refused(Decision.Reject rejection, long waitedNanos) {
      refused.add(rejection);
      waited = waitedNanos;
    }

    int calls() {
      return admitted.size() + refused.size();
    }
  }

  private static Tenant tenant(String id, double weight, int maxInFlight) {
    return new Tenant(
        id, TierPolicy.builder("t" + weight).weight(weight).maxInFlight(maxInFlight).build());
  }

  private AdmissionRequest req(ClassPolicy c, Tenant t, long work) {
    return new AdmissionRequest(
        pool, c, t, work, time.nanos(), time.nanos() + Duration.ofSeconds(30).toNanos(), -1, -1);
  }

  private Decision decide(ClassPolicy c, Tenant t, long work, Waiter w) {
    return controller.decide(req(c, t, work), Ask.hold(HOLD, w, time.nanos()));
  }

  private Permit admitNow(ClassPolicy c, long work) {
    return ((Decision.Admit) decide(c, tenant("filler", 1, 0), work, new Recorder())).permit();
  }

  private PoolState.Snapshot snap() {
    return controller.pool("p").snapshot(time.nanos());
  }

  @Test
  void decide_poolFull_queuesWithHoldWithinEnvoyLimit_thenAdmitsOnRelease() {
    Permit p = admitNow(interactive, 1000);
    Recorder w = new Recorder();
    Decision d = decide(interactive, tenant("a", 1, 0), 500, w);
    assertThat(d).isInstanceOf(Decision.Queued.class);
    Decision.Queued q = (Decision.Queued) d;
    assertThat(q.holdNanos()).isPositive().isLessThanOrEqualTo(HOLD);
    assertThat(q.expiresAtNanos() - time.nanos())
        .isLessThanOrEqualTo(Duration.ofSeconds(2).toNanos());
    assertThat(q.holdNanos()).isGreaterThan(q.expiresAtNanos() - time.nanos());
    assertThat(w.calls()).isZero();
    time.advance(Duration.ofMillis(300));
    p.release(Outcome.COMPLETED, time.nanos());
    assertThat(w.admitted).hasSize(1);
    assertThat(w.waited).isEqualTo(Duration.ofMillis(300).toNanos());
    assertThat(snap().workInFlight()).isEqualTo(500);
  }

  @Test
  void decide_holdDisabled_rejectsInsteadOfQueueing() {
    admitNow(interactive, 1000);
    Decision d =
        controller.decide(
            req(interactive, tenant("a", 1, 0), 500), Ask.hold(0, new Recorder(), time.nanos()));
    assertThat(((Decision.Reject) d).reason()).isEqualTo(Reason.POOL_SATURATED);
  }

  @Test
  void expiry_oneTickBeforeMaxWait_stillQueued_afterIt_queueTimeoutWithRetryAfter() {
    admitNow(interactive, 1000);
    Recorder w = new Recorder();
    Decision.Queued q = (Decision.Queued) decide(interactive, tenant("a", 1, 0), 500, w);
    time.advanceNanos(q.expiresAtNanos() - time.nanos() - 1);
    controller.expireDue("p", time.nanos());
    assertThat(w.calls()).isZero();
    time.advanceNanos(1);
    controller.expireDue("p", time.nanos());
    assertThat(w.refused)
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.reason()).isEqualTo(Reason.QUEUE_TIMEOUT);
              assertThat(r.status()).isEqualTo(503);
              assertThat(r.retryAfterSeconds()).isGreaterThanOrEqualTo(1);
            });
    assertThat(controller.pool("p").nextExpiryNanos()).isEmpty();
  }

  @Test
  void expiredItem_isNeverAdmittedLate_evenIfCapacityFreesAfterExpiry() {
    Permit p = admitNow(interactive, 1000);
    Recorder w = new Recorder();
    Decision.Queued q = (Decision.Queued) decide(interactive, tenant("a", 1, 0), 500, w);
    time.advanceNanos(q.expiresAtNanos() - time.nanos() + 1); // timer has not fired yet
    p.release(Outcome.COMPLETED, time.nanos()); // the release drains: expired first
    assertThat(w.admitted).isEmpty();
    assertThat(w.refused).extracting(Decision.Reject::reason).containsExactly(Reason.QUEUE_TIMEOUT);
    assertThat(snap().workInFlight()).isZero();
  }

  @Test
  void cancel_whileQueued_removesAtOnce_andNextIsServed() {
    Permit p = admitNow(interactive, 1000);
    Recorder first = new Recorder();
    Recorder second = new Recorder();
    Decision.Queued q1 = (Decision.Queued) decide(interactive, tenant("a", 1, 0), 400, first);
    assertThat(decide(interactive, tenant("b", 1, 0), 400, second))
        .isInstanceOf(Decision.Queued.class);
    assertThat(controller.cancel("p", q1.ticket(), time.nanos())).isTrue();
    assertThat(controller.cancel("p", q1.ticket(), time.nanos())).isFalse();
    p.release(Outcome.COMPLETED, time.nanos());
    assertThat(first.calls()).isZero();
    assertThat(second.admitted).hasSize(1);
    assertThat(controller.pool("p").queueDepth("interactive")).isZero();
  }

  @Test
  void rule2_lowerPriorityArrival_doesNotOvertakeWaitingHigherPriority() {
    Permit p = admitNow(interactive, 900);
    Recorder hi = new Recorder();
    assertThat(decide(interactive, tenant("a", 1, 0), 500, hi)).isInstanceOf(Decision.Queued.class);
    // 100 units are free, but interactive is waiting: batch must queue behind it
    Recorder lo = new Recorder();
    assertThat(decide(batch, tenant("b", 1, 0), 50, lo)).isInstanceOf(Decision.Queued.class);
    p.release(Outcome.COMPLETED, time.nanos());
    assertThat(hi.admitted).hasSize(1);
    assertThat(lo.admitted).hasSize(1);
  }

  @Test
  void deadlineUnreachable_rejectedAtArrival_withRetryAfterFromPredictedDrain() {
    admitNow(interactive, 1000);
    AdmissionRequest tight =
        new AdmissionRequest(
            pool,
            interactive,
            tenant("a", 1, 0),
            500,
            time.nanos(),
            time.nanos() + Duration.ofMillis(50).toNanos(),
            -1,
            -1);
    Decision d = controller.decide(tight, Ask.hold(HOLD, new Recorder(), time.nanos()));
    Decision.Reject r = (Decision.Reject) d;
    assertThat(r.reason()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.retryAfterSeconds()).isGreaterThanOrEqualTo(1);
  }

  @Test
  void queueFull_rejects503_tenantShare_rejects429() {
    admitNow(interactive, 1000);
    // interactive queue: 1000 work units, tenant share 50%
    assertThat(decide(interactive, tenant("a", 1, 0), 500, new Recorder()))
        .isInstanceOf(Decision.Queued.class);
    Decision.Reject share =
        (Decision.Reject) decide(interactive, tenant("a", 1, 0), 100, new Recorder());
    assertThat(share.reason()).isEqualTo(Reason.TENANT_CONCURRENCY);
    assertThat(share.status()).isEqualTo(429);
    assertThat(decide(interactive, tenant("b", 1, 0), 500, new Recorder()))
        .isInstanceOf(Decision.Queued.class);
    Decision.Reject full =
        (Decision.Reject) decide(interactive, tenant("c", 1, 0), 100, new Recorder());
    assertThat(full.reason()).isEqualTo(Reason.QUEUE_FULL);
    assertThat(full.status()).isEqualTo(503);
  }

  @Test
  void tenantCap_countsQueuedRequests() {
    admitNow(interactive, 1000);
    Tenant capped = tenant("capped", 1, 1);
    assertThat(decide(interactive, capped, 10, new Recorder())).isInstanceOf(Decision.Queued.class);
    Decision.Reject r = (Decision.Reject) decide(interactive, capped, 10, new Recorder());
    assertThat(r.reason()).isEqualTo(Reason.TENANT_CONCURRENCY);
  }

  @Test
  void refuseAllQueued_answersEveryWaiterOnce() {
    admitNow(interactive, 1000);
    Recorder a = new Recorder();
    Recorder b = new Recorder();
    decide(interactive, tenant("a", 1, 0), 100, a);
    decide(batch, tenant("b", 1, 0), 100, b);
    assertThat(controller.refuseAllQueued(time.nanos())).isEqualTo(2);
    assertThat(a.refused).extracting(Decision.Reject::reason).containsExactly(Reason.SHUTTING_DOWN);
    assertThat(b.refused).extracting(Decision.Reject::retryAfterSeconds).allMatch(s -> s >= 1);
    assertThat(controller.refuseAllQueued(time.nanos())).isZero();
  }

  @Test
  void weightedFairness_heavierTenantServedMoreWork() {
    Permit block = admitNow(batch, 500);
    Permit block2 = admitNow(interactive, 500);
    Tenant heavy = tenant("heavy", 3, 0);
    Tenant light = tenant("light", 1, 0);
    List<Recorder> heavyW = new ArrayList<>();
    List<Recorder> lightW = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      Recorder h = new Recorder();
      Recorder l = new Recorder();
      assertThat(decide(batch, heavy, 100, h)).isInstanceOf(Decision.Queued.class);
      assertThat(decide(batch, light, 100, l)).isInstanceOf(Decision.Queued.class);
      heavyW.add(h);
      lightW.add(l);
    }
    // interactive's guaranteed half stays protected; batch's 500 frees room for 5 items of 100
    block.release(Outcome.COMPLETED, time.nanos());
    long heavyServed = heavyW.stream().filter(r -> !r.admitted.isEmpty()).count();
    long lightServed = lightW.stream().filter(r -> !r.admitted.isEmpty()).count();
    assertThat(heavyServed + lightServed).isEqualTo(5);
    assertThat(heavyServed).isGreaterThan(lightServed);
    block2.release(Outcome.COMPLETED, time.nanos());
  }

  /** One completion of 1000 units held 2 s: the measured service time is 2 ms per unit. */
  private void measureTwoMillisPerUnit() {
    Permit p = admitNow(interactive, 1000);
    time.advance(Duration.ofSeconds(2));
    p.release(Outcome.COMPLETED, time.nanos());
  }

  private AdmissionRequest withDeadline(long work, Duration left) {
    return new AdmissionRequest(
        pool,
        interactive,
        tenant("a", 1, 0),
        work,
        time.nanos(),
        time.nanos() + left.toNanos(),
        -1,
        -1);
  }

  @Test
  void idlePool_measuredServiceLongerThanDeadline_refusedAtOnce_nothingTaken() {
    measureTwoMillisPerUnit();
    // 500 units are expected to take 1 s; 1 ns less than that is left before the deadline
    AdmissionRequest late = withDeadline(500, Duration.ofSeconds(1).minusNanos(1));
    Decision d = controller.decide(late, Ask.hold(HOLD, new Recorder(), time.nanos()));
    Decision.Reject r = (Decision.Reject) d;
    assertThat(r.reason()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.retryAfterSeconds()).isGreaterThanOrEqualTo(1);
    assertThat(snap().workInFlight()).isZero();
    assertThat(snap().requestsInFlight()).isZero();
    // the same request without queue-hold (tryAdmit path) is refused for the same reason
    Decision.Reject again = (Decision.Reject) controller.decide(late, Ask.now(time.nanos()));
    assertThat(again.reason()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
  }

  @Test
  void idlePool_deadlineExactlyCoversMeasuredService_admitted() {
    measureTwoMillisPerUnit();
    Decision d =
        controller.decide(
            withDeadline(500, Duration.ofSeconds(1)), Ask.hold(HOLD, new Recorder(), time.nanos()));
    assertThat(d).isInstanceOf(Decision.Admit.class);
    assertThat(snap().workInFlight()).isEqualTo(500);
  }

  @Test
  void noServiceSampleYet_shortDeadline_notRefusedOnTheDefaultGuess() {
    // the pool's default service time is 1 s; nothing has completed yet
    Decision d =
        controller.decide(
            withDeadline(500, Duration.ofMillis(10)), Ask.hold(HOLD, new Recorder(), time.nanos()));
    assertThat(d).isInstanceOf(Decision.Admit.class);
  }

  @Test
  void cancelledOrFailedPermits_doNotTeachServiceTime() {
    Permit p = admitNow(interactive, 1000);
    time.advance(Duration.ofSeconds(20));
    p.release(Outcome.CANCELLED, time.nanos());
    // no completed sample: a short deadline is still admitted
    Decision d =
        controller.decide(
            withDeadline(500, Duration.ofMillis(10)), Ask.hold(HOLD, new Recorder(), time.nanos()));
    assertThat(d).isInstanceOf(Decision.Admit.class);
  }
}
