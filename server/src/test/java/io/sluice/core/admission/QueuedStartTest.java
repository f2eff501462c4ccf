package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A queued request starts as its waiter asks when the scheduler considers it ({@link
 * Waiter#atStart}: its output reserve re-estimated with what was learned while it waited): the
 * scheduler fits the smaller request, the permit carries its work and output tokens; a larger or
 * different request is ignored. Fake clock; pool of 1,000 work units, no request cap.
 */
class QueuedStartTest {
  static final long SEC = 1_000_000_000L;
  final FakeTicker time = new FakeTicker();
  final ClassPolicy chat =
      ClassPolicy.builder("chat")
          .maxQueueWait(Duration.ofSeconds(20))
          .outputTokens(100, 1000)
          .queue(10.0, 100, 1.0)
          .build();
  final Tenant tenant = new Tenant("t", TierPolicy.builder("t").weight(1.0).maxInFlight(0).build());
  final PoolPolicy pool =
      PoolPolicy.builder("p", 1000)
          .defaultServiceTime(Duration.ofSeconds(1))
          .maxMessageTimeout(Duration.ofSeconds(30))
          .retryAfterJitter(0.0)
          .build();
  final AdmissionController c =
      new AdmissionController(
          List.of(pool),
          List.of(chat),
          Duration.ofSeconds(10),
          PoolState.ReleaseListener.NONE,
          () -> 0.5);

  AdmissionRequest request(long work, long output) {
    return new AdmissionRequest(
        pool, chat, tenant, work, time.nanos(), time.nanos() + 60 * SEC, 10, output);
  }

  Permit admit(long work) {
    return ((Decision.Admit) c.decide(request(work, work - 10), Ask.now(time.nanos()))).permit();
  }

  /** A waiter that, once {@code learned}, asks {@code asks} (as its queued request's copy). */
  static final class Rethinking implements Waiter {
    final QueueHoldTest.Recorder answers = new QueueHoldTest.Recorder();
    volatile boolean learned;
    volatile long asksWork;
    volatile long asksOutput;
    volatile boolean otherTenant;

    @Override
    public void admitted(Permit permit, long waitedNanos) {
      answers.admitted(permit, waitedNanos);
    }

    @Override
    public void refused(Decision.Reject rejection, long waitedNanos) {
      answers.refused(rejection, waitedNanos);
    }

    @Override
    public AdmissionRequest atStart(AdmissionRequest q) {
      if (!learned) {
        return q;
      }
      Tenant t =
          otherTenant
              ? new Tenant("u", TierPolicy.builder("u").weight(1.0).maxInFlight(0).build())
              : q.tenant();
      return new AdmissionRequest(
          q.pool(),
          q.requestClass(),
          t,
          asksWork,
          q.arrivalNanos(),
          q.deadlineNanos(),
          q.inputTokens(),
          asksOutput);
    }
  }

  /** 700 of 1,000 running (600 + 100); a request of 500 (490 output) queued behind them. */
  Rethinking queuedBehind(Permit big, Permit small) {
    Rethinking w = new Rethinking();
    Decision d = c.decide(request(500, 490), Ask.hold(30 * SEC, w, time.nanos()));
    assertThat(d).isInstanceOf(Decision.Queued.class);
    return w;
  }

  @Test
  void aQueuedRequestThatAsksLessWhenItStarts_startsAsSoonAsTheSmallerRequestFits() {
    Permit big = admit(600);
    Permit small = admit(100);
    Rethinking w = queuedBehind(big, small);
    w.asksWork = 200;
    w.asksOutput = 190;
    w.learned = true; // the learner warmed while it waited
    time.advance(Duration.ofMillis(300));

    small.release(Outcome.COMPLETED, time.nanos()); // 400 free: 500 would not fit, 200 does

    assertThat(w.answers.admitted).hasSize(1);
    Permit p = w.answers.admitted.get(0);
    assertThat(p.workUnits()).isEqualTo(200);
    assertThat(p.outputTokens()).isEqualTo(190);
    assertThat(c.pool("p").snapshot(time.nanos()).workInFlight()).isEqualTo(800);
  }

  @Test
  void askingMoreOrForAnotherTenant_isIgnored_itStartsAsQueued() {
    Permit big = admit(600);
    Permit small = admit(100);
    Rethinking w = queuedBehind(big, small);
    w.asksWork = 700; // more than it queued with
    w.asksOutput = 690;
    w.learned = true;
    small.release(Outcome.COMPLETED, time.nanos());
    assertThat(w.answers.admitted).isEmpty(); // 500 does not fit 400, and 700 is not taken

    big.release(Outcome.COMPLETED, time.nanos());
    assertThat(w.answers.admitted).hasSize(1);
    assertThat(w.answers.admitted.get(0).workUnits()).isEqualTo(500);

    w.answers.admitted.get(0).release(Outcome.COMPLETED, time.nanos());
    Permit big2 = admit(600);
    Permit small2 = admit(100);
    Rethinking other = queuedBehind(big2, small2);
    other.asksWork = 200;
    other.asksOutput = 190;
    other.otherTenant = true; // not the request that queued
    other.learned = true;
    small2.release(Outcome.COMPLETED, time.nanos());
    assertThat(other.answers.admitted).isEmpty();
  }
}
