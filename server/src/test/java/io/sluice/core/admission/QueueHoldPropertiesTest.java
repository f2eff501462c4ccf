package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.FakeTicker;
import io.sluice.testing.Seeded;
import io.sluice.testing.Seeded.Gen;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The admission core with queue-hold under random arrive / cancel / expire / release sequences:
 * every waiter is answered exactly once, nothing is admitted after its expiry, and no permit or
 * queued item leaks.
 */
class QueueHoldPropertiesTest {
  enum Kind {
    ARRIVE,
    RELEASE,
    CANCEL,
    ADVANCE,
    TIMER
  }

  record Op(Kind kind, int cls, int tenant, long work, int pick, int millis) {}

  /** 1-150 operations of any kind: class 0-2, tenant 0-3, work 1-600, pick 0-1000, 1-700 ms. */
  static List<Op> ops(Gen g) {
    return g.list(
        1,
        150,
        () ->
            new Op(
                g.anyOf(Kind.class),
                g.intBetween(0, 2),
                g.intBetween(0, 3),
                g.longBetween(1, 600),
                g.intBetween(0, 1000),
                g.intBetween(1, 700)));
  }

  /** The operations, and the seed of the Retry-After jitter draws (so a failure replays). */
  record Scenario(List<Op> ops, long jitterSeed) {}

  /** Records the one answer a waiter may get. */
  static final class W implements Waiter {
    final long ticketExpiry;
    final FakeTicker time;
    int answers;
    Permit permit;
    long answeredAt;
    Decision.Queued queued;

    W(FakeTicker time) {
      this.time = time;
      this.ticketExpiry = 0;
    }

    @Override
    public void admitted(Permit p, long waitedNanos) {
      answers++;
      permit = p;
      answeredAt = time.nanos();
    }

    @Override
    public void refused(Decision.Reject rejection, long waitedNanos) {
      answers++;
      answeredAt = time.nanos();
      assertThat(rejection.retryAfterSeconds()).isGreaterThanOrEqualTo(1);
    }
  }

  @Test
  void anySequence_eachWaiterAnsweredOnce_neverLate_noLeaks() {
    Seeded.forAll(
        0x5EED_1501L,
        300,
        g -> new Scenario(ops(g), g.random().nextLong()),
        c -> eachWaiterAnsweredOnceNeverLateNoLeaks(c.ops(), c.jitterSeed()));
  }

  private static void eachWaiterAnsweredOnceNeverLateNoLeaks(List<Op> ops, long jitterSeed) {
    FakeTicker time = new FakeTicker();
    PoolPolicy pool =
        PoolPolicy.builder("p", 1000)
            .retryAfter(Duration.ofSeconds(1), Duration.ofSeconds(30))
            .maxMessageTimeout(Duration.ofSeconds(5))
            .defaultServiceTime(Duration.ofSeconds(1))
            .build();
    List<ClassPolicy> classes =
        List.of(
            ClassPolicy.builder("a")
                .shares(0.5, 0.2)
                .deadline(Duration.ofSeconds(10))
                .maxQueueWait(Duration.ofSeconds(2))
                .outputTokens(10, 1000)
                .queue(2.0, 50, 0.6)
                .build(),
            ClassPolicy.builder("b")
                .rank(1)
                .shares(0.3, 0.0)
                .deadline(Duration.ofSeconds(10))
                .maxQueueWait(Duration.ofSeconds(1))
                .outputTokens(10, 1000)
                .queue(2.0, 50, 0.6)
                .build(),
            ClassPolicy.builder("c")
                .rank(2)
                .deadline(Duration.ofSeconds(10))
                .maxQueueWait(Duration.ofSeconds(3))
                .outputTokens(10, 1000)
                .queue(2.0, 50, 0.6)
                .build());
    AdmissionController c =
        new AdmissionController(
            List.of(pool),
            classes,
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            new SplittableRandom(jitterSeed)::nextDouble);
    List<Permit> running = new ArrayList<>();
    List<W> waiting = new ArrayList<>();
    List<W> all = new ArrayList<>();
    for (Op op : ops) {
      switch (op.kind()) {
        case ARRIVE -> {
          W w = new W(time);
          Tenant t =
              new Tenant(
                  "t" + op.tenant(),
                  TierPolicy.builder("x").weight(1 + op.tenant()).maxInFlight(4).build());
          Decision d =
              c.decide(
                  new AdmissionRequest(
                      pool,
                      classes.get(op.cls()),
                      t,
                      op.work(),
                      time.nanos(),
                      time.nanos() + Duration.ofSeconds(10).toNanos(),
                      -1,
                      -1),
                  Ask.hold(Duration.ofSeconds(5).toNanos(), w, time.nanos()));
          if (d instanceof Decision.Admit a) {
            running.add(a.permit());
          } else if (d instanceof Decision.Queued q) {
            w.queued = q;
            assertThat(q.holdNanos()).isLessThanOrEqualTo(Duration.ofSeconds(5).toNanos());
            assertThat(q.holdNanos()).isGreaterThan(q.expiresAtNanos() - time.nanos());
            waiting.add(w);
            all.add(w);
          }
        }
        case RELEASE -> {
          if (!running.isEmpty()) {
            running.remove(op.pick() % running.size()).release(Outcome.COMPLETED, time.nanos());
          }
        }
        case CANCEL -> {
          if (!waiting.isEmpty()) {
            W w = waiting.get(op.pick() % waiting.size());
            boolean removed = c.cancel("p", w.queued.ticket(), time.nanos());
            if (removed) {
              w.answers++; // the stream answers nothing more; count the cancel as its answer
            }
          }
        }
        case ADVANCE -> time.advance(Duration.ofMillis(op.millis()));
        case TIMER -> c.expireDue("p", time.nanos());
      }
      // collect waiters that got a permit; check no answer came after the item's expiry
      for (W w : List.copyOf(waiting)) {
        if (w.answers > 0) {
          waiting.remove(w);
          if (w.permit != null) {
            assertThat(w.answeredAt - w.queued.expiresAtNanos()).as("admitted late").isLessThan(0);
            running.add(w.permit);
          }
        }
      }
      PoolState.Snapshot s = c.pool("p").snapshot(time.nanos());
      assertThat(s.workInFlight()).isBetween(0L, 1000L);
      assertThat(s.workInFlight()).isEqualTo(running.stream().mapToLong(Permit::workUnits).sum());
    }
    // drain: expire everything still waiting, release everything running
    time.advance(Duration.ofSeconds(30));
    c.expireDue("p", time.nanos());
    for (W w : waiting) {
      if (w.permit != null) {
        running.add(w.permit);
      }
    }
    running.forEach(p -> p.release(Outcome.COMPLETED, time.nanos()));
    for (W w : all) {
      assertThat(w.answers).as("each waiter answered exactly once").isEqualTo(1);
      if (w.permit != null && !w.permit.isReleased()) {
        w.permit.release(Outcome.COMPLETED, time.nanos());
      }
    }
    PoolState.Snapshot end = c.pool("p").snapshot(time.nanos());
    assertThat(end.workInFlight()).isZero();
    assertThat(end.requestsInFlight()).isZero();
    assertThat(end.tenantsInFlight()).isZero();
    for (PoolState.QueueSnapshot q : c.pool("p").queues(time.nanos(), 0)) {
      assertThat(q.depth()).isZero();
      assertThat(q.queuedWork()).isZero();
    }
  }
}
