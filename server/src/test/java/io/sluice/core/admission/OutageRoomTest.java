package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.adapt.AnswerSource;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * While an announced outage (503 + Retry-After) holds an adaptive pool at its floor, the waiting
 * room is sized on the limit the outage's end gives back ({@link LimitSource#resume}), not on the
 * floor: requests the returning limit serves within their deadline wait instead of being refused
 * {@code queue_full}; they start when the limit is back. Without an outage the room is the limit's
 * own. Fake clock ({@link OutageWaitTest}'s pool: ceiling 8 slots of 100 units, floor 2).
 */
class OutageRoomTest {
  static final long SEC = OutageWaitTest.SEC;
  final io.sluice.core.time.FakeTicker time = new io.sluice.core.time.FakeTicker();
  // a room of twice the limit's work: 4 requests of 100 at the floor (200), 16 at the ceiling
  final ClassPolicy chat =
      ClassPolicy.builder("chat")
          .maxQueueWait(Duration.ofSeconds(20))
          .outputTokens(100, 1000)
          .queue(2.0, 100, 1.0)
          .build();
  final Tenant tenant = new Tenant("t", TierPolicy.builder("t").weight(1.0).maxInFlight(0).build());

  AdmissionController controller(PoolPolicy p) {
    return new AdmissionController(
        List.of(p),
        List.of(chat),
        Duration.ofSeconds(10),
        PoolState.ReleaseListener.NONE,
        () -> 0.5);
  }

  Decision decide(AdmissionController c, PoolPolicy p, Waiter w) {
    return c.decide(
        new AdmissionRequest(p, chat, tenant, 100, time.nanos(), time.nanos() + 60 * SEC, -1, -1),
        Ask.hold(30 * SEC, w, time.nanos()));
  }

  /** The pool at its ceiling (8 running), then {@code retryAfterNanos} of announced outage. */
  List<Permit> inOutage(AdmissionController c, PoolPolicy p, long retryAfterNanos) {
    PoolState s = c.pool("p");
    s.adaptTick(time.nanos());
    List<Permit> held = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      held.add(((Decision.Admit) decide(c, p, null)).permit());
    }
    time.advance(Duration.ofMillis(10));
    s.onAnswer(held.get(0), 503, retryAfterNanos, AnswerSource.UPSTREAM, time.nanos());
    assertThat(s.policy().maxRequests()).isEqualTo(2);
    return held;
  }

  @Test
  void inAnAnnouncedOutage_theRoomIsTheReturningLimits_andTheWaitersStartWhenItIsBack() {
    PoolPolicy p = OutageWaitTest.pool();
    AdmissionController c = controller(p);
    PoolState s = c.pool("p");
    List<Permit> held = inOutage(c, p, 2 * SEC);
    // twelve requests with a minute to spare: the floor's room (2 × 200 units) holds 4 of them,
    // the returning limit's (2 × 800) all twelve
    List<QueueHoldTest.Recorder> waiting = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      QueueHoldTest.Recorder w = new QueueHoldTest.Recorder();
      Decision d = decide(c, p, w);
      assertThat(d).as("request %d in the outage", i).isInstanceOf(Decision.Queued.class);
      waiting.add(w);
    }
    time.advance(Duration.ofMillis(2000));
    held.forEach(h -> h.release(Outcome.COMPLETED, time.nanos()));
    s.adaptTick(time.nanos()); // the Retry-After passed: the limit before the outage is back
    assertThat(s.policy().maxRequests()).isEqualTo(8);
    assertThat(waiting.stream().filter(w -> w.admitted.size() == 1).count()).isEqualTo(8);
    assertThat(waiting.stream().filter(w -> !w.refused.isEmpty()).count()).isZero();
  }

  @Test
  void withoutAnOutage_theRoomIsTheLimitsOwn_theFifthIsRefusedQueueFull() {
    PoolPolicy p =
        PoolPolicy.builder("p", 200)
            .maxRequests(2)
            .defaultServiceTime(Duration.ofSeconds(2))
            .maxMessageTimeout(Duration.ofSeconds(30))
            .build();
    AdmissionController c = controller(p);
    assertThat(decide(c, p, null)).isInstanceOf(Decision.Admit.class);
    assertThat(decide(c, p, null)).isInstanceOf(Decision.Admit.class);
    for (int i = 0; i < 4; i++) {
      assertThat(decide(c, p, new QueueHoldTest.Recorder())).isInstanceOf(Decision.Queued.class);
    }
    Decision fifth = decide(c, p, new QueueHoldTest.Recorder());
    assertThat(fifth).isInstanceOf(Decision.Reject.class);
    assertThat(((Decision.Reject) fifth).reason()).isEqualTo(Reason.QUEUE_FULL);
  }
}
