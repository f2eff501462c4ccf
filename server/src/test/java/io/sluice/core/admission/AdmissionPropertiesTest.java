package io.sluice.core.admission;

import static io.sluice.core.admission.Policies.cls;
import static io.sluice.core.admission.Policies.pool;
import static io.sluice.core.admission.Policies.request;
import static io.sluice.core.admission.Policies.tenant;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.time.FakeTicker;
import io.sluice.testing.Seeded;
import io.sluice.testing.Seeded.Gen;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Invariants of the admission core under random operation sequences. */
class AdmissionPropertiesTest {
  enum Kind {
    ADMIT,
    RELEASE,
    CANCEL,
    DOUBLE_RELEASE
  }

  record Op(Kind kind, int classIndex, int tenant, long work, int pick) {}

  /** 1-200 operations of any kind: class 0-2, tenant 0-4, work 1-700, pick 0-1000. */
  static List<Op> ops(Gen g) {
    return g.list(
        1,
        200,
        () ->
            new Op(
                g.anyOf(Kind.class),
                g.intBetween(0, 2),
                g.intBetween(0, 4),
                g.longBetween(1, 700),
                g.intBetween(0, 1000)));
  }

  @Test
  void anySequence_inFlightNeverNegativeNorAboveCapacity_andReturnsToZero() {
    Seeded.forAll(
        0x5EED_1601L,
        300,
        AdmissionPropertiesTest::ops,
        AdmissionPropertiesTest::inFlightNeverNegativeNorAboveCapacityAndReturnsToZero);
  }

  private static void inFlightNeverNegativeNorAboveCapacityAndReturnsToZero(List<Op> ops) {
    FakeTicker time = new FakeTicker();
    PoolPolicy pool = pool(1000);
    List<ClassPolicy> classes =
        List.of(
            cls("a", 0, 0.5, 0.2, true), cls("b", 1, 0.3, 0.1, true), cls("c", 2, 0.1, 0.0, false));
    AdmissionController c =
        new AdmissionController(
            List.of(pool),
            classes,
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            () -> 0.5);
    List<Permit> held = new ArrayList<>();
    for (Op op : ops) {
      time.advance(Duration.ofMillis(10));
      switch (op.kind()) {
        case ADMIT -> {
          Tenant t = tenant("t" + op.tenant(), 3);
          Decision d =
              c.decide(
                  request(pool, classes.get(op.classIndex()), t, op.work(), time.nanos()),
                  Ask.now(time.nanos()));
          if (d instanceof Decision.Admit a) {
            held.add(a.permit());
          }
        }
        case RELEASE, CANCEL -> {
          if (!held.isEmpty()) {
            held.remove(op.pick() % held.size())
                .release(
                    op.kind() == Kind.RELEASE ? Outcome.COMPLETED : Outcome.CANCELLED,
                    time.nanos());
          }
        }
        case DOUBLE_RELEASE -> {
          if (!held.isEmpty()) {
            Permit p = held.remove(op.pick() % held.size());
            assertThat(p.release(Outcome.COMPLETED, time.nanos())).isTrue();
            assertThat(p.release(Outcome.ERROR, time.nanos())).isFalse();
          }
        }
      }
      PoolState.Snapshot s = c.pool("p").snapshot(time.nanos());
      assertThat(s.workInFlight()).isBetween(0L, 1000L);
      long sum = 0;
      for (long w : s.classWork()) {
        assertThat(w).isNotNegative();
        sum += w;
      }
      assertThat(sum).isEqualTo(s.workInFlight());
      assertThat(s.workInFlight()).isEqualTo(held.stream().mapToLong(Permit::workUnits).sum());
    }
    held.forEach(p -> p.release(Outcome.SHUTDOWN, time.nanos()));
    PoolState.Snapshot end = c.pool("p").snapshot(time.nanos());
    assertThat(end.workInFlight()).isZero();
    assertThat(end.requestsInFlight()).isZero();
    assertThat(end.tenantsInFlight()).isZero();
  }

  @Test
  void anyLoad_classBelowGuaranteedShare_isAdmitted() {
    Seeded.forAll(
        0x5EED_1602L,
        300,
        AdmissionPropertiesTest::ops,
        AdmissionPropertiesTest::classBelowGuaranteedShareIsAdmitted);
  }

  private static void classBelowGuaranteedShareIsAdmitted(List<Op> ops) {
    FakeTicker time = new FakeTicker();
    PoolPolicy pool = pool(1000);
    List<ClassPolicy> classes =
        List.of(
            cls("a", 0, 0.5, 0.2, true), cls("b", 1, 0.3, 0.1, true), cls("c", 2, 0.1, 0.0, true));
    AdmissionController c =
        new AdmissionController(
            List.of(pool),
            classes,
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            () -> 0.5);
    List<Permit> held = new ArrayList<>();
    for (Op op : ops) {
      ClassPolicy k = classes.get(op.classIndex());
      if (op.kind() == Kind.ADMIT || op.kind() == Kind.DOUBLE_RELEASE) {
        long guaranteed = (long) Math.floor(k.guaranteedShare() * 1000);
        long used = c.pool("p").snapshot(time.nanos()).classWork()[op.classIndex()];
        Decision d =
            c.decide(
                request(pool, k, tenant("t", 0), op.work(), time.nanos()), Ask.now(time.nanos()));
        if (used + op.work() <= guaranteed) {
          assertThat(d)
              .as(
                  "class %s used %d asks %d of guaranteed %d",
                  k.name(), used, op.work(), guaranteed)
              .isInstanceOf(Decision.Admit.class);
        }
        if (d instanceof Decision.Admit a) {
          held.add(a.permit());
        }
      } else if (!held.isEmpty()) {
        held.remove(op.pick() % held.size()).release(Outcome.COMPLETED, time.nanos());
      }
    }
  }
}
