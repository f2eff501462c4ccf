package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.adapt.AnswerSource;
import io.sluice.core.policy.AdaptivePolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * An adaptive pool in an outage the upstream announced (503 + Retry-After) probes at its floor; a
 * request that arrives then is predicted on the limit the outage's end gives back, not on the
 * floor's slots: one that can start after the outage and still finish before its deadline is held,
 * not refused {@code deadline_unreachable} (cold-throttle, ceiling 8, body NONE). Fake clock.
 */
class OutageWaitTest extends AdaptivePoolFixture {
  // a waiting room large enough at the floor too: the prediction is what is tested
  OutageWaitTest() {
    super(20.0, new Tenant("t", TierPolicy.builder("t").weight(1.0).maxInFlight(0).build()));
  }

  /** Ceiling 8 slots of 100 units, floor 2, default service time 2 s: 4 requests a second. */
  static PoolPolicy pool() {
    return PoolPolicy.builder("p", 800)
        .maxRequests(8)
        .defaultServiceTime(Duration.ofSeconds(2))
        .maxMessageTimeout(Duration.ofSeconds(30))
        .adaptive(
            AdaptivePolicy.builder(200, 2)
                .interval(Duration.ofSeconds(1))
                .start(AdaptivePolicy.START_CEILING)
                .build())
        .build();
  }

  Decision decide(AdmissionController c, PoolPolicy p, long deadlineNanos, Waiter w) {
    return decide(c, p, deadlineNanos, 30 * SEC, w);
  }

  @Test
  void nearTheAnnouncedEnd_aRequestThatFinishesAfterItIsHeldAndStartsWhenTheLimitIsBack() {
    PoolPolicy p = pool();
    AdmissionController c = controller(p);
    PoolState s = c.pool("p");
    s.adaptTick(time.nanos());
    List<Permit> held = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      held.add(((Decision.Admit) decide(c, p, time.nanos() + 60 * SEC, null)).permit());
    }
    time.advance(Duration.ofMillis(10));
    // the upstream is down for about 2 s: the limit probes at its floor (2 slots), and the two
    // slots stay held (answers admitted before the outage, their tails held)
    s.onAnswer(held.get(0), 503, 2 * SEC, AnswerSource.UPSTREAM, time.nanos());
    assertThat(s.policy().maxRequests()).isEqualTo(2);
    for (Permit h : held.subList(0, 6)) {
      h.release(Outcome.COMPLETED, time.nanos());
    }
    // ten requests with time to spare wait
    List<QueueHoldTest.Recorder> ahead = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      QueueHoldTest.Recorder w = new QueueHoldTest.Recorder();
      assertThat(decide(c, p, time.nanos() + 60 * SEC, w)).isInstanceOf(Decision.Queued.class);
      ahead.add(w);
    }
    time.advance(Duration.ofMillis(1500)); // 0.5 s before the Retry-After passes
    s.adaptTick(time.nanos());
    assertThat(s.policy().maxRequests()).isEqualTo(2);

    // 2.5 s to its deadline. On the floor's slots (11 requests at 4 a second) it would start in
    // 2.75 s and is refused deadline_unreachable; from the outage's end on the limit of 8 has 6
    // free, so it starts 0.5 + 5 / 4 = 1.75 s from now, in time
    QueueHoldTest.Recorder late = new QueueHoldTest.Recorder();
    Decision d = decide(c, p, time.nanos() + 2500 * 1_000_000L, late);
    assertThat(d).isInstanceOf(Decision.Queued.class);

    time.advance(Duration.ofMillis(500));
    s.adaptTick(time.nanos()); // the Retry-After passed: the limit before the outage is back
    assertThat(s.policy().maxRequests()).isEqualTo(8);
    // the limit's free slots start the queue's head at once, without waiting for a completion
    assertThat(ahead.stream().filter(w -> !w.admitted.isEmpty()).count()).isGreaterThanOrEqualTo(5);
    List<Permit> running = new ArrayList<>(held.subList(6, 8));
    ahead.forEach(w -> running.addAll(w.admitted));
    for (int i = 0; i < running.size() && late.admitted.isEmpty(); i++) {
      time.advance(Duration.ofMillis(150));
      running.get(i).release(Outcome.COMPLETED, time.nanos()); // completions free slots
      ahead.forEach(
          w -> w.admitted.stream().filter(x -> !running.contains(x)).forEach(running::add));
    }
    assertThat(late.admitted).hasSize(1);
    assertThat(late.refused).isEmpty();
  }

  @Test
  void withNoOutage_nothingIsGivenBack_thePredictionIsTheFloors() {
    PoolPolicy p = pool();
    AdmissionController c = controller(p);
    PoolState s = c.pool("p");
    s.adaptTick(time.nanos());
    Permit first = ((Decision.Admit) decide(c, p, time.nanos() + 60 * SEC, null)).permit();
    time.advance(Duration.ofMillis(10));
    // a 503 without Retry-After is an overload, not an announced outage
    s.onAnswer(first, 503, -1, AnswerSource.UPSTREAM, time.nanos());
    assertThat(s.adaptive().restore(time.nanos())).isNull();
    first.release(Outcome.COMPLETED, time.nanos());
  }
}
