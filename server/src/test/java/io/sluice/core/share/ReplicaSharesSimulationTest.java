package io.sluice.core.share;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.PoolState;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Several replicas, each with its own admission controller and coordinator, on one lease store
 * ({@link ShareLeaseModel}), on a fake clock: random demand that moves between replicas, replicas
 * that crash and come back under new ids, store outages. After every 10 ms step the work and
 * requests in flight across the live replicas stay within the pool's own numbers — with {@code
 * storeDown: refuse} always; with {@code fallback}, within the pool plus what was already in flight
 * when a replica fell back (that work drains; nothing new is admitted above the fallback share).
 */
class ReplicaSharesSimulationTest {
  static final long CAPACITY = 100;
  static final int MAX_REQUESTS = 8;
  static final PoolPolicy POOL =
      PoolPolicy.of(
          "p",
          CAPACITY,
          MAX_REQUESTS,
          1.0,
          1.0,
          Duration.ofSeconds(1),
          Duration.ofSeconds(60),
          Duration.ZERO);
  static final ClassPolicy CLS =
      ClassPolicy.of(
          "c", 0, 1.0, 0.0, true, Duration.ofSeconds(30), Duration.ofSeconds(2), 100, 1000, 503);
  static final Tenant TENANT = new Tenant("t", new TierPolicy("t", 1.0, 0));
  static final Duration RENEW = Duration.ofMillis(200);

  static ReplicaPolicy policy(ReplicaPolicy.StoreDown down, int expected) {
    ReplicaPolicy.PoolMode m =
        new ReplicaPolicy.PoolMode(down, Duration.ofSeconds(2), expected, 0.02);
    return new ReplicaPolicy(Duration.ofSeconds(5), RENEW, m, Map.of());
  }

  /** A held permit, when it ends, and whether it was in flight when its replica fell back. */
  static final class Held {
    final Permit permit;
    final long endNanos;
    boolean beforeFallback;

    Held(Permit permit, long endNanos) {
      this.permit = permit;
      this.endNanos = endNanos;
    }
  }

  static final class Replica {
    final AdmissionController controller;
    final ShareCoordinator coordinator;
    final List<Held> held = new ArrayList<>();
    boolean alive = true;
    boolean inFallback;
    double rate; // arrivals per 10 ms step

    Replica(String id, ReplicaPolicy policy, ShareStore store, FakeTicker ticker) {
      controller =
          new AdmissionController(
              List.of(POOL), List.of(CLS), Duration.ofSeconds(10), PoolState.ReleaseListener.NONE);
      coordinator = new ShareCoordinator(id, "ns_", policy, store, ticker);
    }

    PoolState pool() {
      return controller.pool("p");
    }

    long work() {
      return pool().snapshot(0).workInFlight();
    }

    int requests() {
      return pool().snapshot(0).requestsInFlight();
    }
  }

  static LongStream seeds() {
    return LongStream.range(0, 24);
  }

  @ParameterizedTest
  @MethodSource("seeds")
  void property_inFlightNeverExceedsThePool_refuseMode(long seed) {
    simulate(seed, ReplicaPolicy.StoreDown.REFUSE);
  }

  @ParameterizedTest
  @MethodSource("seeds")
  void property_inFlightBoundedByPoolPlusPreFallbackWork_fallbackMode(long seed) {
    simulate(seed, ReplicaPolicy.StoreDown.FALLBACK);
  }

  private void simulate(long seed, ReplicaPolicy.StoreDown down) {
    SplittableRandom r = new SplittableRandom(seed);
    FakeTicker ticker = new FakeTicker();
    long start = ticker.nanos();
    ShareLeaseModel store = new ShareLeaseModel(() -> (ticker.nanos() - start) / 1_000_000L);
    int n = r.nextInt(2, 5);
    ReplicaPolicy policy = policy(down, n);
    List<Replica> replicas = new ArrayList<>();
    int ids = 0;
    for (int i = 0; i < n; i++) {
      replicas.add(new Replica("r" + ids++, policy, store, ticker));
    }
    long outageEnd = -1;
    long admitted = 0;
    for (int step = 0; step < 6000; step++) { // 60 s
      long now = ticker.nanos();
      if (step % 200 == 0) { // demand moves every 2 s
        for (Replica x : replicas) {
          x.rate =
              switch (r.nextInt(3)) {
                case 0 -> 0;
                case 1 -> 0.2;
                default -> 2.0;
              };
        }
      }
      if (outageEnd < 0 && r.nextInt(1500) == 0) {
        store.down = true;
        outageEnd = step + r.nextInt(50, 500);
      } else if (step == outageEnd) {
        store.down = false;
        outageEnd = -1;
      }
      if (r.nextInt(2000) == 0) { // a crash: the replica and its work are gone; another starts
        int k = r.nextInt(replicas.size());
        replicas.get(k).alive = false;
        Replica fresh = new Replica("r" + ids++, policy, store, ticker);
        fresh.coordinator.tick(
            List.of(fresh.pool())); // as the bootstrap: a first round, then serve
        replicas.set(k, fresh);
      }
      if (step % (RENEW.toMillis() / 10) == 0) {
        for (Replica x : replicas) {
          x.coordinator.tick(List.of(x.pool()));
        }
      }
      for (Replica x : replicas) {
        // releases due
        for (var it = x.held.iterator(); it.hasNext(); ) {
          Held h = it.next();
          if (h.endNanos - now <= 0) {
            h.permit.release(Outcome.COMPLETED, now);
            it.remove();
          }
        }
        // arrivals
        double a = x.rate;
        while (a > 0 && r.nextDouble() < a) {
          a -= 1;
          long work = r.nextLong(1, 31);
          Decision d =
              x.controller.tryAdmit(
                  new AdmissionRequest(
                      POOL, CLS, TENANT, work, now, now + Duration.ofSeconds(30).toNanos()),
                  now);
          if (d instanceof Decision.Admit ad) {
            admitted++;
            x.held.add(
                new Held(ad.permit(), now + Duration.ofMillis(r.nextLong(50, 2000)).toNanos()));
          }
        }
      }
      for (Replica x : replicas) {
        boolean fallback =
            x.coordinator.statuses().get("p") != null
                && x.coordinator.statuses().get("p").mode() == ShareCoordinator.Mode.FALLBACK;
        if (fallback && !x.inFallback) {
          x.held.forEach(h -> h.beforeFallback = true);
        }
        x.inFallback = fallback;
      }
      // the invariant
      long work = 0;
      long requests = 0;
      long allowanceWork = 0;
      long allowanceRequests = 0;
      for (Replica x : replicas) {
        work += x.work();
        requests += x.requests();
        for (Held h : x.held) {
          if (h.beforeFallback) {
            allowanceWork += h.permit.workUnits();
            allowanceRequests++;
          }
        }
      }
      assertThat(work)
          .as("seed %d step %d: work in flight across replicas", seed, step)
          .isLessThanOrEqualTo(CAPACITY + allowanceWork);
      assertThat(requests)
          .as("seed %d step %d: requests in flight across replicas", seed, step)
          .isLessThanOrEqualTo(MAX_REQUESTS + allowanceRequests);
      if (down == ReplicaPolicy.StoreDown.REFUSE) {
        assertThat(allowanceWork).isZero();
      }
      ticker.advance(Duration.ofMillis(10));
    }
    // 8 slots held ~1 s each admit at most ~480 in 60 s; outages, crashes and idle phases cost some
    assertThat(admitted).as("the replicas kept admitting").isGreaterThan(250);
  }

  @Test
  void aReplicaWithAllTheDemandGetsNearlyThePoolWithinASecond() {
    FakeTicker ticker = new FakeTicker();
    long start = ticker.nanos();
    ShareLeaseModel store = new ShareLeaseModel(() -> (ticker.nanos() - start) / 1_000_000L);
    ReplicaPolicy policy = policy(ReplicaPolicy.StoreDown.FALLBACK, 3);
    List<Replica> rs = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      rs.add(new Replica("r" + i, policy, store, ticker));
    }
    // every replica idle: each keeps a floor and the rest is split evenly
    for (int round = 0; round < 3; round++) {
      rs.forEach(x -> x.coordinator.tick(List.of(x.pool())));
      ticker.advance(RENEW);
    }
    assertThat(rs.stream().mapToLong(x -> x.coordinator.statuses().get("p").grantedWork()).sum())
        .isEqualTo(CAPACITY);
    // replica 0 is offered far more than the pool: refusals are its unmet demand
    int rounds = 0;
    while (rs.get(0).coordinator.statuses().get("p").grantedWork() < CAPACITY - 2 * 2
        && rounds < 20) {
      long now = ticker.nanos();
      for (int i = 0; i < 20; i++) {
        var unused =
            rs.get(0)
                .controller
                .tryAdmit(
                    new AdmissionRequest(
                        POOL, CLS, TENANT, 10, now, now + Duration.ofSeconds(30).toNanos()),
                    now);
      }
      rs.forEach(x -> x.coordinator.tick(List.of(x.pool())));
      ticker.advance(RENEW);
      rounds++;
    }
    assertThat(rounds)
        .as("rounds of %d ms until replica 0 holds the pool less the floors", 200)
        .isLessThanOrEqualTo(5);
    assertThat(rs.get(1).coordinator.statuses().get("p").grantedWork()).isEqualTo(2);
    // 2 % of 8 slots rounds down to no floor: the busy replica gets every slot
    assertThat(rs.get(0).coordinator.statuses().get("p").grantedRequests()).isEqualTo(MAX_REQUESTS);
  }

  @Test
  void storeDown_keptThenFallbackThenProbationThenLeased() {
    FakeTicker ticker = new FakeTicker();
    long start = ticker.nanos();
    ShareLeaseModel store = new ShareLeaseModel(() -> (ticker.nanos() - start) / 1_000_000L);
    Replica x = new Replica("a", policy(ReplicaPolicy.StoreDown.FALLBACK, 4), store, ticker);
    x.coordinator.tick(List.of(x.pool()));
    ShareCoordinator.Status s = x.coordinator.statuses().get("p");
    assertThat(s.mode()).isEqualTo(ShareCoordinator.Mode.LEASED);
    assertThat(s.grantedWork()).isEqualTo(CAPACITY); // alone: the whole pool

    store.down = true;
    ticker.advance(RENEW);
    x.coordinator.tick(List.of(x.pool()));
    assertThat(x.coordinator.statuses().get("p").mode()).isEqualTo(ShareCoordinator.Mode.KEPT);
    assertThat(x.coordinator.statuses().get("p").grantedWork()).isEqualTo(CAPACITY);

    ticker.advance(Duration.ofMillis(2100)); // past keepShareFor (2 s)
    x.coordinator.tick(List.of(x.pool()));
    s = x.coordinator.statuses().get("p");
    assertThat(s.mode()).isEqualTo(ShareCoordinator.Mode.FALLBACK);
    assertThat(s.grantedWork()).isEqualTo(CAPACITY / 4);
    assertThat(s.grantedRequests()).isEqualTo(MAX_REQUESTS / 4);
    assertThat(s.failures()).isEqualTo(2);

    store.down = false;
    ticker.advance(RENEW);
    x.coordinator.tick(List.of(x.pool()));
    s = x.coordinator.statuses().get("p");
    assertThat(s.mode()).isEqualTo(ShareCoordinator.Mode.LEASED);
    assertThat(s.grantedWork()).as("on probation: within the fallback share").isEqualTo(25);

    ticker.advance(RENEW);
    ticker.advance(RENEW);
    x.coordinator.tick(List.of(x.pool()));
    assertThat(x.coordinator.statuses().get("p").grantedWork()).isEqualTo(CAPACITY);
  }

  @Test
  void storeDown_refuse_admitsNothingNewAfterTheKeepTime() {
    FakeTicker ticker = new FakeTicker();
    long start = ticker.nanos();
    ShareLeaseModel store = new ShareLeaseModel(() -> (ticker.nanos() - start) / 1_000_000L);
    Replica x = new Replica("a", policy(ReplicaPolicy.StoreDown.REFUSE, 3), store, ticker);
    x.coordinator.tick(List.of(x.pool()));
    store.down = true;
    ticker.advance(Duration.ofMillis(2100));
    x.coordinator.tick(List.of(x.pool()));
    assertThat(x.coordinator.statuses().get("p").mode()).isEqualTo(ShareCoordinator.Mode.REFUSING);
    long now = ticker.nanos();
    Decision d =
        x.controller.tryAdmit(
            new AdmissionRequest(POOL, CLS, TENANT, 1, now, now + 1_000_000_000L), now);
    assertThat(d).isInstanceOf(Decision.Reject.class);
    assertThat(((Decision.Reject) d).message()).contains("this replica's share: 0 of 8");
  }

  @Test
  void beforeItsFirstGrantAReplicaHoldsNothing_andAStartWithTheStoreDownFallsBack() {
    FakeTicker ticker = new FakeTicker();
    ShareLeaseModel store = new ShareLeaseModel(() -> 0);
    store.down = true;
    Replica x = new Replica("a", policy(ReplicaPolicy.StoreDown.FALLBACK, 2), store, ticker);
    x.coordinator.tick(List.of(x.pool()));
    assertThat(x.coordinator.statuses().get("p").mode()).isEqualTo(ShareCoordinator.Mode.WAITING);
    long now = ticker.nanos();
    assertThat(
            x.controller.tryAdmit(
                new AdmissionRequest(POOL, CLS, TENANT, 1, now, now + 1_000_000_000L), now))
        .isInstanceOf(Decision.Reject.class);
    ticker.advance(Duration.ofMillis(2100));
    x.coordinator.tick(List.of(x.pool()));
    assertThat(x.coordinator.statuses().get("p").mode()).isEqualTo(ShareCoordinator.Mode.FALLBACK);
    assertThat(x.coordinator.statuses().get("p").grantedWork()).isEqualTo(50);
  }

  @Test
  void aPoolNoLongerConfiguredGivesUpItsLease() {
    FakeTicker ticker = new FakeTicker();
    ShareLeaseModel store = new ShareLeaseModel(() -> 0);
    Replica x = new Replica("a", policy(ReplicaPolicy.StoreDown.FALLBACK, 2), store, ticker);
    x.coordinator.tick(List.of(x.pool()));
    assertThat(store.pools.get("ns_{p}")).containsKey("a");
    x.coordinator.tick(List.of());
    assertThat(store.pools.get("ns_{p}")).doesNotContainKey("a");
    assertThat(x.coordinator.statuses()).isEmpty();
  }
}
