package io.sluice.core.share;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.PoolState;
import io.sluice.core.admission.Waiter;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.FakeTicker;
import io.sluice.testing.Seeded;
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
      PoolPolicy.builder("p", CAPACITY).maxRequests(MAX_REQUESTS).build();
  static final ClassPolicy CLS =
      ClassPolicy.builder("c")
          .shares(1.0, 0.0)
          .deadline(Duration.ofSeconds(30))
          .maxQueueWait(Duration.ofSeconds(2))
          .outputTokens(100, 1000)
          .build();
  static final Tenant TENANT = new Tenant("t", TierPolicy.defaults("t"));
  static final Duration RENEW = Duration.ofMillis(200);
  // two classes with whole guarantees (70 % and 30 % of the pool), both may borrow
  static final List<ClassPolicy> TWO_CLASSES =
      List.of(
          cls("interactive", 0, 0.7, 0.0, true, Duration.ofSeconds(2)),
          cls("batch", 1, 0.3, 0.0, true, Duration.ofSeconds(2)));

  /** A class of the share tests: 30 s deadline, the given longest wait, defaults otherwise. */
  static ClassPolicy cls(
      String name, int rank, double reserved, double lendable, boolean borrow, Duration wait) {
    return ClassPolicy.builder(name)
        .rank(rank)
        .shares(reserved, lendable)
        .borrow(borrow)
        .deadline(Duration.ofSeconds(30))
        .maxQueueWait(wait)
        .outputTokens(100, 1000)
        .build();
  }

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
    final List<ClassPolicy> classes;
    long started; // permits taken through offer (at once or after waiting)
    final ShareCoordinator coordinator;
    final List<Held> held = new ArrayList<>();
    boolean alive = true;
    boolean inFallback;
    double rate; // arrivals per 10 ms step

    /** One request of {@code work} units arriving at {@code now}, with a 30 s deadline. */
    Decision admit(long work, long now) {
      return controller.decide(
          new AdmissionRequest(
              POOL, CLS, TENANT, work, now, now + Duration.ofSeconds(30).toNanos(), -1, -1),
          Ask.now(now));
    }

    /**
     * One request of class {@code c}, queued up to 1 s when it cannot start (the waiter keeps what
     * starts later, held until {@code end} after its start).
     */
    Decision offer(ClassPolicy c, long work, long now, long holdNanos) {
      Waiter w =
          new Waiter() {
            @Override
            public void admitted(Permit permit, long waitedNanos) {
              held.add(new Held(permit, permit.admittedAtNanos() + holdNanos));
              started++;
            }

            @Override
            public void refused(Decision.Reject rejection, long waitedNanos) {}
          };
      Decision d =
          controller.decide(
              new AdmissionRequest(
                  POOL, c, TENANT, work, now, now + Duration.ofSeconds(30).toNanos(), -1, -1),
              Ask.hold(Duration.ofSeconds(1).toNanos(), w, now));
      if (d instanceof Decision.Admit a) {
        held.add(new Held(a.permit(), now + holdNanos));
        started++;
      }
      return d;
    }

    Replica(String id, ReplicaPolicy policy, ShareStore store, FakeTicker ticker) {
      this(id, policy, store, ticker, List.of(CLS));
    }

    Replica(
        String id,
        ReplicaPolicy policy,
        ShareStore store,
        FakeTicker ticker,
        List<ClassPolicy> classes) {
      this(id, policy, store, ticker, POOL, classes);
    }

    Replica(
        String id,
        ReplicaPolicy policy,
        ShareStore store,
        FakeTicker ticker,
        PoolPolicy pool,
        List<ClassPolicy> classes) {
      this.classes = classes;
      controller =
          new AdmissionController(
              List.of(pool),
              classes,
              Duration.ofSeconds(10),
              PoolState.ReleaseListener.NONE,
              Math::random);
      coordinator = new ShareCoordinator(id, "", "ns_", policy, store, ticker);
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

  /**
   * As the two above, with two classes whose guarantees are whole (70 % and 30 %) and requests that
   * wait up to 1 s when they cannot start: the class rules count the pool across the replicas, the
   * guarantees follow demand, and the remainders that blocked replicas cannot use are gathered, and
   * still the pool is never exceeded.
   */
  @ParameterizedTest
  @MethodSource("seeds")
  void property_twoClassesQueued_inFlightNeverExceedsThePool(long seed) {
    simulate(
        seed,
        seed % 2 == 0 ? ReplicaPolicy.StoreDown.REFUSE : ReplicaPolicy.StoreDown.FALLBACK,
        TWO_CLASSES);
  }

  private void simulate(long seed, ReplicaPolicy.StoreDown down) {
    simulate(seed, down, List.of(CLS));
  }

  private void simulate(long seed, ReplicaPolicy.StoreDown down, List<ClassPolicy> classes) {
    boolean queued = classes.size() > 1;
    SplittableRandom r = new SplittableRandom(seed);
    SplittableRandom pick = new SplittableRandom(~seed); // classes drawn apart: same history
    FakeTicker ticker = new FakeTicker();
    long start = ticker.nanos();
    ShareLeaseModel store = new ShareLeaseModel(() -> (ticker.nanos() - start) / 1_000_000L);
    int n = r.nextInt(2, 5);
    ReplicaPolicy policy = policy(down, n);
    List<Replica> replicas = new ArrayList<>();
    int ids = 0;
    for (int i = 0; i < n; i++) {
      replicas.add(new Replica("r" + ids++, policy, store, ticker, classes));
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
        admitted += replicas.get(k).started; // what the crashed replica had started counts
        Replica fresh = new Replica("r" + ids++, policy, store, ticker, classes);
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
        // releases due (a release may start a waiting request, which joins x.held)
        List<Held> due = new ArrayList<>();
        for (var it = x.held.iterator(); it.hasNext(); ) {
          Held h = it.next();
          if (h.endNanos - now <= 0) {
            due.add(h);
            it.remove();
          }
        }
        due.forEach(h -> h.permit.release(Outcome.COMPLETED, now));
        if (queued) {
          x.controller.expireDue("p", now);
        }
        // arrivals
        double a = x.rate;
        while (a > 0 && r.nextDouble() < a) {
          a -= 1;
          long work = r.nextLong(1, 31);
          long hold = Duration.ofMillis(r.nextLong(50, 2000)).toNanos();
          if (queued) {
            var unused = x.offer(classes.get(pick.nextInt(classes.size())), work, now, hold);
            continue;
          }
          Decision d = x.admit(work, now);
          if (d instanceof Decision.Admit ad) {
            admitted++;
            x.held.add(new Held(ad.permit(), now + hold));
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
    for (Replica x : replicas) {
      admitted += x.started;
    }
    // 8 slots held ~1 s each admit at most ~480 in 60 s; outages, crashes and idle phases cost some
    assertThat(admitted).as("the replicas kept admitting").isGreaterThan(250);
  }

  /**
   * A history drawn for {@link #property_afterAnyHistory_steadyDemandGetsItsFairPartWithinBound}.
   *
   * @param n live replicas once all have joined (2–5; also the fallback's expected replicas)
   * @param joinRound the round each replica starts (replica 0 at round 0)
   * @param crashRound the round replica {@code crashIndex} crashes (a fresh one replaces it)
   * @param outageStart first round the store is down; {@code outageEnd}: first round it answers
   * @param history rounds of history before the demand is held steady
   * @param offers requests each replica is offered every steady round (0: idle; 20: saturating)
   * @param workEach work units of each of those requests
   */
  record ConvergenceCase(
      int n,
      ReplicaPolicy.StoreDown down,
      List<Integer> joinRound,
      int crashRound,
      int crashIndex,
      int outageStart,
      int outageEnd,
      int history,
      List<Integer> offers,
      List<Integer> workEach,
      long trafficSeed) {}

  static ConvergenceCase convergenceCase(Seeded.Gen g) {
    int n = g.intBetween(2, 5);
    List<Integer> joins = new ArrayList<>();
    List<Integer> offers = new ArrayList<>();
    List<Integer> work = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      joins.add(i == 0 ? 0 : g.intBetween(0, 20));
      switch (g.intBetween(0, 2)) {
        case 0 -> { // idle
          offers.add(0);
          work.add(0);
        }
        case 1 -> { // some demand, maybe below its fair part: 1 to 12 requests of one unit
          // (one unit: a request larger than the replica's share is admitted counted as the share
          // (CapacityLedger.accountedWork), so its demand would read as the share it already has)
          offers.add(g.intBetween(1, 12));
          work.add(1);
        }
        default -> { // saturating: more than the whole pool, in work and in requests
          offers.add(20);
          work.add(10);
        }
      }
    }
    int history = g.intBetween(30, 80);
    int outageStart = g.intBetween(0, history - 1);
    int outageEnd = Math.min(history, outageStart + g.intBetween(1, 50)); // up to 10 s: it ends
    return new ConvergenceCase(
        n,
        g.oneOf(ReplicaPolicy.StoreDown.values()),
        joins,
        g.intBetween(0, history - 1),
        g.intBetween(0, n - 1),
        outageStart,
        outageEnd,
        history,
        offers,
        work,
        g.random().nextLong());
  }

  /** Lease TTL in renewal rounds: how long a crashed replica's stale lease and demand count. */
  static final int LEASE_ROUNDS = (int) (Duration.ofSeconds(5).toMillis() / RENEW.toMillis());

  /**
   * Rounds after which the shares have converged: {@link #LEASE_ROUNDS} (25; a replica that crashed
   * in the last history round still counts, with its share and its stale demand, until its lease
   * expires) plus 4. Once only live replicas count, the targets agree after one round (every
   * replica has seen the others' steady demand), a shrinking replica holds the work it admitted on
   * its old grant one more round ({@code held = max(grant, in flight)}), and the growing one gets
   * the freed part at its next renewal. The post-outage probation (2 rounds) and the keep time (10
   * rounds, ended with the outage) run concurrently with the lease expiry.
   */
  static final int CONVERGENCE_ROUNDS = LEASE_ROUNDS + 4;

  /**
   * Issue 15's liveness half. Any history (2–5 replicas joining at different rounds, one crash
   * replaced by a fresh replica, one store outage of 1–50 rounds that ends, random traffic), then
   * each replica's demand held steady (idle, some, or saturating: every round it releases what it
   * holds and is offered the same requests again, so its reported demand is exactly those). Within
   * {@link #CONVERGENCE_ROUNDS} renewal rounds every replica's granted work and request slots equal
   * {@link ShareAllocator}'s water-filling target for the steady demands (tolerance 0: all replicas
   * compute the same targets from the same demands, and the store grants them once the others hold
   * theirs), and stay there; in every round, history included, the grants of the live replicas add
   * up to at most the pool.
   */
  @Test
  void property_afterAnyHistory_steadyDemandGetsItsFairPartWithinBound() {
    Seeded.forAll(
        0x15L,
        300,
        ReplicaSharesSimulationTest::convergenceCase,
        ReplicaSharesSimulationTest::converge);
  }

  static void converge(ConvergenceCase c) {
    SplittableRandom r = new SplittableRandom(c.trafficSeed());
    FakeTicker ticker = new FakeTicker();
    long start = ticker.nanos();
    ShareLeaseModel store = new ShareLeaseModel(() -> (ticker.nanos() - start) / 1_000_000L);
    ReplicaPolicy policy = policy(c.down(), c.n());
    Replica[] rs = new Replica[c.n()];
    String[] ids = new String[c.n()];
    int fresh = 0;
    int steadyRounds = CONVERGENCE_ROUNDS + 5;
    for (int round = 0; round < c.history() + steadyRounds; round++) {
      long now = ticker.nanos();
      boolean steady = round >= c.history();
      store.down = round >= c.outageStart() && round < c.outageEnd();
      for (int i = 0; i < c.n(); i++) {
        if (round == c.joinRound().get(i)) {
          ids[i] = String.format("r%02d", fresh++);
          rs[i] = new Replica(ids[i], policy, store, ticker);
        }
      }
      if (round == c.crashRound() && rs[c.crashIndex()] != null) {
        ids[c.crashIndex()] = String.format("r%02d", fresh++); // gone with its work; a new one
        rs[c.crashIndex()] = new Replica(ids[c.crashIndex()], policy, store, ticker);
      }
      for (int i = 0; i < c.n(); i++) {
        Replica x = rs[i];
        if (x == null) {
          continue;
        }
        for (var it = x.held.iterator(); it.hasNext(); ) {
          Held h = it.next();
          if (steady || h.endNanos - now <= 0) {
            h.permit.release(Outcome.COMPLETED, now);
            it.remove();
          }
        }
        int offered = steady ? c.offers().get(i) : r.nextInt(0, 8);
        for (int k = 0; k < offered; k++) {
          long work = steady ? c.workEach().get(i) : r.nextLong(1, 31);
          Decision d = x.admit(work, now);
          if (d instanceof Decision.Admit ad) {
            x.held.add(new Held(ad.permit(), now + RENEW.toNanos() * r.nextLong(1, 10)));
          }
        }
      }
      for (Replica x : rs) {
        if (x != null) {
          x.coordinator.tick(List.of(x.pool()));
        }
      }
      long work = 0;
      long requests = 0;
      for (Replica x : rs) {
        if (x != null) {
          work += x.coordinator.statuses().get("p").grantedWork();
          requests += x.coordinator.statuses().get("p").grantedRequests();
        }
      }
      assertThat(work)
          .as("round %d: work granted across the replicas", round)
          .isLessThanOrEqualTo(CAPACITY);
      assertThat(requests)
          .as("round %d: request slots granted across the replicas", round)
          .isLessThanOrEqualTo(MAX_REQUESTS);
      int steadyRound = round - c.history();
      if (steadyRound >= CONVERGENCE_ROUNDS) {
        // the targets, in the replicas' id order, as every replica computes them
        Integer[] order = new Integer[c.n()];
        for (int i = 0; i < c.n(); i++) {
          order[i] = i;
        }
        java.util.Arrays.sort(order, (a, b) -> ids[a].compareTo(ids[b]));
        long[] dw = new long[c.n()];
        long[] dr = new long[c.n()];
        for (int j = 0; j < c.n(); j++) {
          dw[j] = (long) c.offers().get(order[j]) * c.workEach().get(order[j]);
          dr[j] = c.offers().get(order[j]);
        }
        long[] tw = ShareAllocator.allocate(CAPACITY, dw, (long) Math.floor(0.02 * CAPACITY));
        long[] tr =
            ShareAllocator.allocate(MAX_REQUESTS, dr, (long) Math.floor(0.02 * MAX_REQUESTS));
        for (int j = 0; j < c.n(); j++) {
          ShareCoordinator.Status s = rs[order[j]].coordinator.statuses().get("p");
          List<String> all = new ArrayList<>();
          for (int m = 0; m < c.n(); m++) {
            ShareCoordinator.Status o = rs[m].coordinator.statuses().get("p");
            all.add(
                ids[m]
                    + " "
                    + o.mode()
                    + " "
                    + o.grantedWork()
                    + "/"
                    + o.grantedRequests()
                    + " inflight "
                    + rs[m].work()
                    + " demand "
                    + o.demandWork()
                    + " peers "
                    + o.peers());
          }
          all.add(String.valueOf(store));
          assertThat(new long[] {s.grantedWork(), s.grantedRequests()})
              .as(
                  "steady round %d: replica %d (%s, demand %d work, %d requests) of demands %s / %s; %s",
                  steadyRound,
                  order[j],
                  ids[order[j]],
                  dw[j],
                  dr[j],
                  java.util.Arrays.toString(dw),
                  java.util.Arrays.toString(dr),
                  all)
              .containsExactly(tw[j], tr[j]);
        }
      }
      ticker.advance(RENEW);
    }
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
                .decide(
                    new AdmissionRequest(
                        POOL, CLS, TENANT, 10, now, now + Duration.ofSeconds(30).toNanos(), -1, -1),
                    Ask.now(now));
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

  /** Releases what {@code x} holds, then offers it {@code count} requests of {@code work}. */
  private static void offer(Replica x, int count, long work, long now) {
    x.held.forEach(h -> h.permit.release(Outcome.COMPLETED, now));
    x.held.clear();
    for (int i = 0; i < count; i++) {
      Decision d = x.admit(work, now);
      if (d instanceof Decision.Admit ad) {
        x.held.add(new Held(ad.permit(), Long.MAX_VALUE));
      }
    }
  }

  /**
   * Why a replica back from a store outage stays within its outage share (ShareCoordinator's
   * probation; decision 0008). Replica a had nearly the whole pool (98 of 100), b the floor. The
   * store is down for 6 s, longer than the lease TTL (5 s): both fall back to 100 / 2 (and 4 of the
   * 8 slots); a keeps its fallback share busy (40 in 4 requests) and b admits 48 on its own. The
   * store comes back; a renews first, 100 ms before b. The store no longer counts b (its lease
   * expired) and a's last view of b says b wants nothing, so a asks for, and is granted, 69 and 6
   * slots. Without the probation a would fill them (60 in 6 requests) on top of b's 48, which the
   * store cannot see until b renews: 108 work units and 10 requests in flight in a pool of 100 and
   * 8, none of it admitted before the fallback began. With it, a keeps 50 and 4 slots until b has
   * renewed, and the pool holds.
   */
  @Test
  void backFromAnOutage_theFirstReplicaToRenewStaysWithinItsFallbackShare() {
    FakeTicker ticker = new FakeTicker();
    long start = ticker.nanos();
    ShareLeaseModel store = new ShareLeaseModel(() -> (ticker.nanos() - start) / 1_000_000L);
    ReplicaPolicy policy = policy(ReplicaPolicy.StoreDown.FALLBACK, 2);
    Replica a = new Replica("a", policy, store, ticker);
    Replica b = new Replica("b", policy, store, ticker);
    for (int round = 0; round < 5; round++) {
      offer(a, 20, 10, ticker.nanos()); // a saturates the pool; b is idle
      a.coordinator.tick(List.of(a.pool()));
      b.coordinator.tick(List.of(b.pool()));
      ticker.advance(RENEW);
    }
    assertThat(a.coordinator.statuses().get("p").grantedWork()).isEqualTo(98);
    assertThat(b.coordinator.statuses().get("p").grantedWork()).isEqualTo(2);

    store.down = true;
    for (int round = 0; round < 30; round++) { // 6 s: past keepShareFor and the lease TTL
      offer(a, 20, 10, ticker.nanos()); // a still wants the whole pool
      a.coordinator.tick(List.of(a.pool()));
      b.coordinator.tick(List.of(b.pool()));
      ticker.advance(RENEW);
    }
    assertThat(a.coordinator.statuses().get("p").mode()).isEqualTo(ShareCoordinator.Mode.FALLBACK);
    assertThat(b.coordinator.statuses().get("p").mode()).isEqualTo(ShareCoordinator.Mode.FALLBACK);
    // b takes its fallback share (4 of the 8 slots), all of it admitted in fallback
    offer(b, 4, 12, ticker.nanos());
    assertThat(b.work()).isEqualTo(48);

    store.down = false;
    a.coordinator.tick(List.of(a.pool())); // a renews first
    ShareCoordinator.Status sa = a.coordinator.statuses().get("p");
    assertThat(sa.mode()).isEqualTo(ShareCoordinator.Mode.LEASED);
    assertThat(sa.grantedWork())
        .as("a, back before b has renewed: within its fallback share (%s)", sa)
        .isLessThanOrEqualTo(CAPACITY / 2);
    assertThat(sa.grantedWork() + b.coordinator.statuses().get("p").grantedWork())
        .as("shares across the replicas")
        .isLessThanOrEqualTo(CAPACITY);
    offer(a, 20, 10, ticker.nanos());
    assertThat(a.work() + b.work())
        .as("work in flight across the replicas")
        .isLessThanOrEqualTo(CAPACITY);

    ticker.advance(RENEW.dividedBy(2));
    b.coordinator.tick(List.of(b.pool())); // b's 48 in flight reaches the store
    for (int round = 0; round < 5; round++) {
      ticker.advance(RENEW);
      offer(a, 20, 10, ticker.nanos());
      a.coordinator.tick(List.of(a.pool()));
      assertThat(a.work() + b.work()).isLessThanOrEqualTo(CAPACITY);
    }
    // b drains and idles: a gets the pool less b's floor again
    for (int round = 0; round < 4; round++) {
      ticker.advance(RENEW);
      offer(b, 0, 10, ticker.nanos());
      b.coordinator.tick(List.of(b.pool()));
      offer(a, 20, 10, ticker.nanos());
      a.coordinator.tick(List.of(a.pool()));
    }
    assertThat(a.coordinator.statuses().get("p").grantedWork()).isEqualTo(98);
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
        x.controller.decide(
            new AdmissionRequest(POOL, CLS, TENANT, 1, now, now + 1_000_000_000L, -1, -1),
            Ask.now(now));
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
            x.controller.decide(
                new AdmissionRequest(POOL, CLS, TENANT, 1, now, now + 1_000_000_000L, -1, -1),
                Ask.now(now)))
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
    assertThat(store.replicas("ns_", "p")).contains("a");
    x.coordinator.tick(List.of());
    assertThat(store.replicas("ns_", "p")).doesNotContain("a");
    assertThat(x.coordinator.statuses()).isEmpty();
  }
}
