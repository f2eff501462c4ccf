package io.sluice.core.share;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.PoolState;
import io.sluice.core.admission.Reason;
import io.sluice.core.admission.Waiter;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Class reserves and guarantees across replicas (issue 15): they hold for the pool as a whole, not
 * as one piece per replica, and a replica's demand is the work its requests ask for, not the work
 * they are counted as on its share. Three replicas on the lease model, on a fake clock.
 */
class ClassSharesAcrossReplicasTest {
  static final long C = 100;
  static final PoolPolicy POOL = PoolPolicy.builder("p", C).build();
  // interactive: 70 % guaranteed whole; batch: 30 % guaranteed whole; both may borrow
  static final ClassPolicy INTERACTIVE =
      ReplicaSharesSimulationTest.cls("interactive", 0, 0.7, 0.0, true, Duration.ofSeconds(10));
  static final ClassPolicy BATCH =
      ReplicaSharesSimulationTest.cls("batch", 1, 0.3, 0.0, true, Duration.ofSeconds(10));
  static final Tenant TENANT = new Tenant("t", TierPolicy.defaults("t"));
  static final Duration RENEW = Duration.ofMillis(200);

  final FakeTicker ticker = new FakeTicker();
  final long start = ticker.nanos();
  final ShareLeaseModel store = new ShareLeaseModel(() -> (ticker.nanos() - start) / 1_000_000L);
  final ReplicaPolicy policy =
      new ReplicaPolicy(
          Duration.ofSeconds(5),
          RENEW,
          new ReplicaPolicy.PoolMode(ReplicaPolicy.StoreDown.FALLBACK, Duration.ofSeconds(2), 3, 0),
          Map.of());

  // batch may not borrow: 30 % of the pool at most, whatever replica it runs on
  static final ClassPolicy CAPPED_BATCH =
      ReplicaSharesSimulationTest.cls("batch", 1, 0.3, 0.3, false, Duration.ofSeconds(10));

  final class Replica {
    final ReplicaSharesSimulationTest.Replica replica;
    final AdmissionController controller;
    final ShareCoordinator coordinator;
    final List<Permit> held = new ArrayList<>();

    Replica(String id) {
      this(id, List.of(INTERACTIVE, BATCH));
    }

    Replica(String id, List<ClassPolicy> classes) {
      replica = new ReplicaSharesSimulationTest.Replica(id, policy, store, ticker, POOL, classes);
      controller = replica.controller;
      coordinator = replica.coordinator;
    }

    PoolState pool() {
      return replica.pool();
    }

    AdmissionRequest request(ClassPolicy c, long work) {
      long now = ticker.nanos();
      return new AdmissionRequest(
          POOL, c, TENANT, work, now, now + Duration.ofSeconds(30).toNanos(), -1, -1);
    }

    /** Offers {@code count} requests of {@code work}; keeps the admitted ones in flight. */
    int offer(ClassPolicy c, int count, long work) {
      int admitted = 0;
      for (int i = 0; i < count; i++) {
        if (controller.decide(request(c, work), Ask.now(ticker.nanos()))
            instanceof Decision.Admit a) {
          held.add(a.permit());
          admitted++;
        }
      }
      return admitted;
    }

    long granted() {
      return coordinator.statuses().get("p").grantedWork();
    }

    long work() {
      return replica.work();
    }
  }

  private void rounds(List<Replica> rs, int n) {
    for (int i = 0; i < n; i++) {
      rs.forEach(x -> x.coordinator.tick(List.of(x.pool())));
      ticker.advance(RENEW);
      assertThat(rs.stream().mapToLong(Replica::work).sum())
          .as("work in flight across the replicas")
          .isLessThanOrEqualTo(C);
    }
  }

  /**
   * For {@code n} renewals: {@code count} requests of class {@code c} (10 work units each) offered
   * to {@code x}, then a round; returns how many were admitted.
   */
  private int offerEachRound(List<Replica> rs, Replica x, ClassPolicy c, int n, int count) {
    int admitted = 0;
    for (int i = 0; i < n; i++) {
      admitted += x.offer(c, count, 10);
      rounds(rs, 1);
    }
    return admitted;
  }

  /**
   * Replica b runs batch up to batch's part of the pool (30). An interactive burst on replica a
   * then gets interactive's guarantee of the pool (70) within three renewals, although b's share
   * had been the larger one; per-replica class pieces would have cut a's interactive to 70 % of its
   * own share.
   */
  @Test
  void anInteractiveBurstOnOneReplicaGetsInteractivesGuaranteeOfThePool() {
    List<Replica> rs = List.of(new Replica("a"), new Replica("b"), new Replica("c"));
    rounds(rs, 2);
    Replica a = rs.get(0);
    Replica b = rs.get(1);
    // b: batch far beyond batch's part; only 30 of it can ever run in the pool
    offerEachRound(rs, b, BATCH, 4, 20);
    assertThat(b.work()).as("batch holds its part of the pool, no more").isEqualTo(30);
    // a: an interactive burst, offered every round (refusals are its unmet demand)
    // the peers see a's demand at their next renewal (they compute their targets from the
    // demands of their last exchange) and shrink; a grows at the renewal after that
    int admitted = offerEachRound(rs, a, INTERACTIVE, 4, 10);
    assertThat(admitted * 10L)
        .as("interactive's guarantee of the pool, on replica a")
        .isEqualTo(70);
    assertThat(a.granted()).isGreaterThanOrEqualTo(70);
    // batch on a finds no room: interactive's guarantee and b's batch fill the pool
    Decision d = a.controller.decide(a.request(BATCH, 10), Ask.now(ticker.nanos()));
    assertThat(d).isInstanceOf(Decision.Reject.class);
    assertThat(((Decision.Reject) d).reason()).isEqualTo(Reason.POOL_SATURATED);
  }

  /**
   * A class's reserve is the pool's: batch may not borrow and has 30 % of the pool. With batch
   * holding 30 on replica b, batch on replica a is refused {@code class_share} although a's own
   * share is idle (a's class rules count b's batch, as last renewed), while interactive on a runs.
   * (Scaled to a's share, batch's reserve would have let a admit 30 % of its share more.)
   */
  @Test
  void aClassReserveHeldOnAnotherReplicaCountsHere() {
    List<Replica> rs =
        List.of(
            new Replica("a", List.of(INTERACTIVE, CAPPED_BATCH)),
            new Replica("b", List.of(INTERACTIVE, CAPPED_BATCH)));
    rounds(rs, 2);
    Replica a = rs.get(0);
    Replica b = rs.get(1);
    offerEachRound(rs, b, CAPPED_BATCH, 5, 10);
    assertThat(b.work()).isEqualTo(30);
    assertThat(a.granted()).as("a idle: an even part of what nobody wants").isGreaterThan(30);
    Decision d = a.controller.decide(a.request(CAPPED_BATCH, 10), Ask.now(ticker.nanos()));
    assertThat(d).isInstanceOf(Decision.Reject.class);
    assertThat(((Decision.Reject) d).reason()).isEqualTo(Reason.CLASS_SHARE);
    assertThat(a.offer(INTERACTIVE, 1, 10)).isEqualTo(1);
  }

  /**
   * A replica's demand is what its requests ask for, and the pool's numbers are its real limits.
   * Next to a saturated replica b, replica a has 15 (its even part of batch's idle guarantee, kept
   * for batch) and queues an interactive request of 60. Its demand is its own 60, so a gets its
   * fair part of interactive's guarantee (35 of 70, max-min against b); but while b holds 35 of
   * interactive the request does not fit the pool (35 + 60 + batch's 30 > 100), so it waits —
   * before, it started counted as the 35 interactive may hold on a's share, and the pool ran 110
   * units of work on a capacity of 100. Once b's interactive work ends it starts: held on a's share
   * as the 35 interactive may hold there, counted in the pool (and reported to peers) as its 60.
   */
  @Test
  void aRequestLargerThanTheShareAsksForItsOwnWork() {
    PoolPolicy one = PoolPolicy.builder("p", C).build();
    List<Replica> rs = List.of(new Replica("a"), new Replica("b"));
    rounds(rs, 2);
    Replica a = rs.get(0);
    Replica b = rs.get(1);
    // b saturates: batch and interactive far beyond the pool, every round
    for (int i = 0; i < 6; i++) {
      b.held.forEach(p -> p.release(io.sluice.core.admission.Outcome.COMPLETED, ticker.nanos()));
      b.held.clear();
      b.offer(INTERACTIVE, 20, 10);
      rounds(rs, 1);
    }
    assertThat(a.granted()).as("a idle next to a saturated b").isLessThan(60);
    List<Permit> started = new ArrayList<>();
    Waiter waiter =
        new Waiter() {
          @Override
          public void admitted(Permit permit, long waitedNanos) {
            started.add(permit);
          }

          @Override
          public void refused(Decision.Reject rejection, long waitedNanos) {}
        };
    Decision d =
        a.controller.decide(
            new AdmissionRequest(
                one,
                INTERACTIVE,
                TENANT,
                60,
                ticker.nanos(),
                ticker.nanos() + Duration.ofSeconds(30).toNanos(),
                -1,
                -1),
            Ask.hold(Duration.ofSeconds(20).toNanos(), waiter, ticker.nanos()));
    assertThat(d).isInstanceOf(Decision.Queued.class);
    for (int i = 0; i < 8 && started.isEmpty(); i++) {
      b.held.forEach(p -> p.release(io.sluice.core.admission.Outcome.COMPLETED, ticker.nanos()));
      b.held.clear();
      b.offer(INTERACTIVE, 20, 10);
      rounds(rs, 1);
    }
    assertThat(a.granted())
        .as("a's fair part: 35 of interactive, 15 of batch's idle")
        .isEqualTo(50);
    assertThat(started).as("waits: b holds 35 of interactive, 35 + 60 + 30 > 100").isEmpty();
    b.held.forEach(p -> p.release(io.sluice.core.admission.Outcome.COMPLETED, ticker.nanos()));
    b.held.clear();
    for (int i = 0; i < 8 && started.isEmpty(); i++) {
      rounds(rs, 1);
    }
    assertThat(a.pool().demand().classes())
        .as("nothing queued any more")
        .allSatisfy(c -> assertThat(c.demandWork()).isLessThanOrEqualTo(60));
    assertThat(started).as("the 60-unit request started on a once b's work ended").hasSize(1);
    assertThat(started.get(0).workUnits())
        .as("held as what interactive may hold on a")
        .isEqualTo(35);
    assertThat(a.pool().demand().classes())
        .as("counted in the pool (reported to b) as its own work")
        .anySatisfy(
            c -> {
              assertThat(c.name()).isEqualTo(INTERACTIVE.name());
              assertThat(c.inFlightWork()).isEqualTo(60);
            });
  }

  /**
   * The waiting room is the pool's: a replica's class queues hold its share's part of it, so two
   * replicas of half the pool each hold half a room, and one tenant half of that, not a whole room
   * each. With queue.workShare 2.0 (200 work units of room per class in the pool) and tenantShare
   * 0.5, a replica granted 50 has a room of 100 and queues 50 units of one tenant's batch, not the
   * 100 of the whole pool's room.
   */
  @Test
  void theWaitingRoomAndATenantsPartOfItFollowTheShare() {
    List<Replica> rs = List.of(new Replica("a"), new Replica("b"));
    rounds(rs, 4);
    Replica a = rs.get(0);
    assertThat(a.granted()).isEqualTo(50);
    // interactive takes what it may of a's share (35 less its idle batch part kept: 30); batch
    // starts in what is left, then waits
    assertThat(a.offer(INTERACTIVE, 5, 10)).isEqualTo(3);
    int queued = 0;
    for (int i = 0; i < 30; i++) {
      Decision d =
          a.controller.decide(
              a.request(BATCH, 5),
              Ask.hold(
                  Duration.ofSeconds(20).toNanos(),
                  new Waiter() {
                    @Override
                    public void admitted(Permit permit, long waitedNanos) {}

                    @Override
                    public void refused(Decision.Reject rejection, long waitedNanos) {}
                  },
                  ticker.nanos()));
      if (d instanceof Decision.Queued) {
        queued++;
      } else if (!(d instanceof Decision.Admit)) {
        assertThat(((Decision.Reject) d).reason()).isEqualTo(Reason.TENANT_CONCURRENCY);
      }
    }
    assertThat(queued * 5).as("the tenant's part of a's half of the room").isEqualTo(50);
    assertThat(a.pool().queuedWork("batch")).isEqualTo(50);
  }

  /**
   * A rollout: a peer of the version before class loads reports only its totals (demand 100, none
   * by class). It counts with that demand, as a class with no guarantee: replica a, idle, keeps
   * half of interactive's guarantee (20 of 100, kept idle for interactive) and leaves the old peer
   * the unguaranteed 80. (Read as idle, the old peer would have been left 40 of the 80.)
   */
  @Test
  void aPeerWithoutClassLoadsCountsWithItsTotalDemand() {
    List<ClassPolicy> lendable =
        List.of(
            ReplicaSharesSimulationTest.cls(
                "interactive", 0, 0.7, 0.5, true, Duration.ofSeconds(10)),
            ReplicaSharesSimulationTest.cls("batch", 1, 0.3, 0.3, true, Duration.ofSeconds(10)));
    Replica a = new Replica("a", lendable);
    ShareStore.Exchange old =
        new ShareStore.Exchange("ns_", "p", "old", 5000, C, 0, 100, 0, 0, 0, 100, 0, List.of());
    for (int i = 0; i < 3; i++) {
      var unused = store.exchange(old);
      a.coordinator.tick(List.of(a.pool()));
      ticker.advance(RENEW);
    }
    assertThat(a.coordinator.statuses().get("p").targetWork()).isEqualTo(10);
  }
}
