package io.sluice.core.queue;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.queue.ClassScheduler.Lane;
import io.sluice.core.queue.ClassScheduler.QueueClass;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.constraints.IntRange;

class ClassSchedulerPropertiesTest {
  private static final long SEC = 1_000_000_000L;

  record ClassPlan(int reservePercent, boolean borrow) {}

  sealed interface Op permits Arrive, Release, Advance {}

  record Arrive(int classPick, int tenant, int work) implements Op {}

  record Release(int pick) implements Op {}

  record Advance(int ms) implements Op {}

  @Provide
  Arbitrary<List<ClassPlan>> classes() {
    return Combinators.combine(Arbitraries.integers().between(0, 60), Arbitraries.of(true, false))
        .as(ClassPlan::new)
        .list()
        .ofMinSize(1)
        .ofMaxSize(4)
        .filter(l -> l.stream().mapToInt(ClassPlan::reservePercent).sum() <= 100);
  }

  @Provide
  Arbitrary<List<Op>> ops() {
    return Arbitraries.<Op>frequencyOf(
            Tuple.of(
                5,
                Combinators.combine(
                        Arbitraries.integers().between(0, 3),
                        Arbitraries.integers().between(0, 3),
                        Arbitraries.integers().between(1, 25))
                    .as(Arrive::new)),
            Tuple.of(3, Arbitraries.integers().between(0, 1000).map(Release::new)),
            Tuple.of(1, Arbitraries.integers().between(0, 3000).map(Advance::new)))
        .list()
        .ofMaxSize(200);
  }

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

  @Property(tries = 300)
  void drain_randomArrivalsAndReleases_obeyReservesBorrowingAndCapacity(
      @ForAll("classes") List<ClassPlan> plans,
      @ForAll("ops") List<Op> ops,
      @ForAll @IntRange(min = 10, max = 120) int capacity) {
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

  @Property(tries = 300)
  void release_classBelowReserveWaiting_getsTheNextRelease(
      @ForAll("classes") List<ClassPlan> plans,
      @ForAll("ops") List<Op> ops,
      @ForAll @IntRange(min = 10, max = 60) int capacity) {
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
