package io.sluice.core.queue;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.queue.ClassScheduler.Lane;
import io.sluice.core.queue.ClassScheduler.QueueClass;
import io.sluice.testing.Seeded;
import io.sluice.testing.Seeded.Gen;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ClassSchedulerPropertiesTest {
  private static final long SEC = 1_000_000_000L;

  record ClassPlan(int reservePercent, boolean borrow) {}

  sealed interface Op permits Arrive, Release, Advance {}

  record Arrive(int classPick, int tenant, int work) implements Op {}

  record Release(int pick) implements Op {}

  record Advance(int ms) implements Op {}

  /** One to four classes, reserving 0-60 % each and 100 % at most in all, borrowing or not. */
  static List<ClassPlan> classes(Gen g) {
    while (true) {
      List<ClassPlan> l = g.list(1, 4, () -> new ClassPlan(g.intBetween(0, 60), g.bool()));
      if (l.stream().mapToInt(ClassPlan::reservePercent).sum() <= 100) {
        return l;
      }
    }
  }

  /** Up to 200 operations: arrive 5, release 3, advance 1 (relative weights). */
  static List<Op> ops(Gen g) {
    return g.list(
        0,
        200,
        () ->
            g.<Op>frequency(
                Map.entry(
                    5,
                    () -> new Arrive(g.intBetween(0, 3), g.intBetween(0, 3), g.intBetween(1, 25))),
                Map.entry(3, () -> new Release(g.intBetween(0, 1000))),
                Map.entry(1, () -> new Advance(g.intBetween(0, 3000)))));
  }

  record Scenario(List<ClassPlan> plans, List<Op> ops, int capacity) {}

  private static final class Sim {
    final ClassScheduler<String> s;
    final FakeLedger ledger;
    final boolean unitWork;
    long now = Long.MAX_VALUE - 100 * SEC;
    long nextId;

    Sim(List<ClassPlan> plans, long capacity, boolean unitWork) {
      List<QueueClass<String>> cs = new ArrayList<>();
      for (int k = 0; k < plans.size(); k++) {
        cs.add(
            new QueueClass<>(
                "c" + k,
                k,
                plans.get(k).reservePercent() / 100.0,
                plans.get(k).borrow(),
                new TenantFairQueue<>(new QueueBounds(1000, 100, 5 * SEC, 1.0))));
      }
      s = new ClassScheduler<>(cs);
      ledger = new FakeLedger(capacity, plans.size());
      ledger.attach(s);
      this.unitWork = unitWork;
    }

    /** Checks that after a drain no waiting class could still start within its reserve. */
    void assertReservedMaximal() {
      for (int k = 0; k < s.classCount(); k++) {
        Optional<QueuedItem<String>> head = s.queueClass(k).queue().peek();
        if (head.isPresent()) {
          long w = head.get().workUnits();
          long headroom = ledger.reserve(k) - ledger.inFlightWorkUnits(k);
          assertThat(w <= headroom && w <= ledger.free())
              .as("class %d could start within its reserve but waits", k)
              .isFalse();
        }
      }
    }

    ClassScheduler.Drain<String> step(Op op) {
      if (op instanceof Arrive a) {
        int k = a.classPick() % s.classCount();
        long work = unitWork ? 1 : a.work();
        QueuedItem<String> item =
            new QueuedItem<>(
                nextId++, "t" + a.tenant(), 1, work, now, now + 3 * SEC, now + 4 * SEC, "");
        s.expire(now);
        Optional<Lane> lane = s.startLane(k, work, ledger);
        if (lane.isPresent()) {
          ledger.admitDirect(k, item, lane.get());
          return null;
        }
        s.queueClass(k).queue().offer(item, now);
      } else if (op instanceof Release r) {
        if (ledger.running.isEmpty()) {
          return null;
        }
        ledger.release(r.pick() % ledger.running.size());
      } else if (op instanceof Advance adv) {
        now += adv.ms() * 1_000_000L;
      }
      ClassScheduler.Drain<String> d = s.drain(now, ledger);
      for (ClassScheduler.Admitted<String> a : d.admitted()) {
        assertThat(a.item().expiresAtNanos() - now).as("admitted after expiry").isGreaterThan(0);
      }
      assertReservedMaximal();
      return d;
    }
  }

  @Test
  void drain_randomArrivalsAndReleases_obeyReservesBorrowingAndCapacity() {
    Seeded.forAll(
        0x5EED_1401L,
        300,
        g -> new Scenario(classes(g), ops(g), g.intBetween(10, 120)),
        c -> drainObeysReservesBorrowingAndCapacity(c.plans(), c.ops(), c.capacity()));
  }

  private static void drainObeysReservesBorrowingAndCapacity(
      List<ClassPlan> plans, List<Op> ops, int capacity) {
    Sim sim = new Sim(plans, capacity, false);
    for (Op op : ops) {
      sim.step(op); // the ledger asserts every start; step asserts maximality and expiry
    }
    // no leaks: release everything, let the rest expire
    while (!sim.ledger.running.isEmpty()) {
      sim.ledger.release(0);
    }
    sim.now += 10 * SEC;
    sim.s.drain(sim.now, sim.ledger);
    for (int k = 0; k < sim.s.classCount(); k++) {
      assertThat(sim.s.queueClass(k).queue().depth()).isZero();
      assertThat(sim.s.queueClass(k).queue().flowCount()).isZero();
    }
    assertThat(sim.ledger.inFlightWorkUnits()).isZero();
  }

  @Test
  void release_classBelowReserveWaiting_getsTheNextRelease() {
    Seeded.forAll(
        0x5EED_1402L,
        300,
        g -> new Scenario(classes(g), ops(g), g.intBetween(10, 60)),
        c -> classBelowReserveGetsTheNextRelease(c.plans(), c.ops(), c.capacity()));
  }

  private static void classBelowReserveGetsTheNextRelease(
      List<ClassPlan> plans, List<Op> ops, int capacity) {
    Sim sim = new Sim(plans, capacity, true);
    for (Op op : ops) {
      if (!(op instanceof Release) || sim.ledger.running.isEmpty()) {
        sim.step(op);
        continue;
      }
      // the highest-ranked class with waiting work below its reserve once the released work
      // is returned (the release may bring its own class below its reserve)
      FakeLedger.Running leaving =
          sim.ledger.running.get(((Release) op).pick() % sim.ledger.running.size());
      int expected = -1;
      for (int k = 0; k < sim.s.classCount() && expected < 0; k++) {
        long inFlightAfter =
            sim.ledger.inFlightWorkUnits(k)
                - (leaving.classIndex() == k ? leaving.item().workUnits() : 0);
        if (!sim.s.queueClass(k).queue().isEmpty() && inFlightAfter < sim.ledger.reserve(k)) {
          expected = k;
        }
      }
      // expiry would take the waiting item away, so time does not move on releases here
      ClassScheduler.Drain<String> d = sim.step(op);
      if (expected >= 0) {
        assertThat(d.admitted()).isNotEmpty();
        assertThat(d.admitted().get(0).classIndex()).isEqualTo(expected);
        assertThat(d.admitted().get(0).lane()).isEqualTo(Lane.RESERVED);
      }
    }
  }
}
