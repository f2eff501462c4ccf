package io.sluice.core.share;

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
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Replicas that share one pool through a store whose exchanges take time ({@link
 * SteppedShareStore}), on a fake clock, in a seeded random order of single actions: replicas join
 * (and take requests at once, before or after their first round), renew, the store runs and answers
 * their exchanges in any order, requests arrive one by one and in bursts, permits end, replicas
 * drain and leave or crash. After <b>every</b> action the requests and work in flight across the
 * live replicas are checked against the pool's own {@code maxRequests} and {@code capacity}. The
 * store always answers (within 300 ms of fake time: no store-down mode is reached), so the bound is
 * the pool itself, with nothing extra.
 */
public final class ShareRace {
  static final Tenant TENANT = new Tenant("t", TierPolicy.defaults("t"));
  static final List<ClassPolicy> ONE_CLASS =
      List.of(ReplicaSharesSimulationTest.cls("c", 0, 1.0, 0.0, true, Duration.ofSeconds(1)));

  /**
   * One run's settings.
   *
   * @param capacity the pool's work units
   * @param maxRequests the pool's request slots
   * @param twoClasses two classes with whole guarantees (70 % and 30 %) instead of one
   * @param leaseTtl the replicas' lease TTL (the fake clock's for an in-process store)
   * @param namespace the store's key namespace for this run
   */
  public record Setup(
      long capacity,
      int maxRequests,
      boolean twoClasses,
      Duration leaseTtl,
      String namespace,
      int actions) {}

  /** What a run saw: the peaks across the replicas and the first action that broke the bound. */
  public record Result(
      long peakWork, int peakRequests, long admitted, String firstBreach, List<String> log) {}

  /** Draws a run's settings from {@code seed}. */
  public static Setup setup(long seed, Duration leaseTtl, String namespace, int actions) {
    SplittableRandom r = new SplittableRandom(seed * 31 + 7);
    long[] caps = {20, 50, 100};
    int[] slots = {3, 5, 5, 8};
    return new Setup(
        caps[r.nextInt(caps.length)],
        slots[r.nextInt(slots.length)],
        r.nextBoolean(),
        leaseTtl,
        namespace,
        actions);
  }

  /** A held permit and the fake time it ends. */
  private record Held(Permit permit, long endNanos) {}

  /** One replica: its admission controller and its coordinator on the stepped store. */
  private static final class Replica {
    final String id;
    final AdmissionController controller;
    final ShareCoordinator coordinator;
    final List<Held> held = new ArrayList<>();
    long lastTick = Long.MIN_VALUE;
    boolean draining;

    Replica(String id, PoolPolicy pool, List<ClassPolicy> classes, ReplicaPolicy p, Ctx ctx) {
      this.id = id;
      this.controller =
          new AdmissionController(
              List.of(pool),
              classes,
              Duration.ofSeconds(10),
              PoolState.ReleaseListener.NONE,
              Math::random);
      controller.holdForShares(ctx.ticker.nanos()); // as the bootstrap's ReplicaShares.create
      this.coordinator =
          new ShareCoordinator(id, "", ctx.setup.namespace(), p, ctx.store, ctx.ticker);
    }

    PoolState pool() {
      return controller.pool("p");
    }

    void tick(long now) {
      lastTick = now;
      var unused = coordinator.tick(List.of(pool()));
    }
  }

  /** The run's shared state. */
  private static final class Ctx {
    final Setup setup;
    final SteppedShareStore store;
    final FakeTicker ticker;
    final Map<SteppedShareStore.Trip, Long> sentAt = new java.util.IdentityHashMap<>();

    Ctx(Setup setup, SteppedShareStore store, FakeTicker ticker) {
      this.setup = setup;
      this.store = store;
      this.ticker = ticker;
    }
  }

  private ShareRace() {}

  /**
   * One seeded run on {@code inner} (the store the exchanges run on: the lease model on {@code
   * ticker}'s clock, or Redis). Returns the peaks; {@link Result#firstBreach} is empty when the
   * bound held after every action.
   */
  public static Result run(long seed, Setup setup, ShareStore inner, FakeTicker ticker) {
    SplittableRandom r = new SplittableRandom(seed);
    Ctx ctx = new Ctx(setup, new SteppedShareStore(inner), ticker);
    PoolPolicy pool =
        PoolPolicy.builder("p", setup.capacity()).maxRequests(setup.maxRequests()).build();
    List<ClassPolicy> classes =
        setup.twoClasses() ? ReplicaSharesSimulationTest.TWO_CLASSES : ONE_CLASS;
    Duration renew = Duration.ofMillis(r.nextBoolean() ? 100 : 200);
    ReplicaPolicy.PoolMode mode =
        new ReplicaPolicy.PoolMode(
            ReplicaPolicy.StoreDown.REFUSE, setup.leaseTtl().dividedBy(2), 3, 0.02);
    ReplicaPolicy policy = new ReplicaPolicy(setup.leaseTtl(), renew, mode, Map.of());
    List<Replica> live = new ArrayList<>();
    List<String> log = new ArrayList<>();
    int ids = 0;
    long peakWork = 0;
    int peakRequests = 0;
    long[] admitted = {0};
    String breach = "";
    int target = r.nextInt(2, 5); // replicas it settles around
    for (int step = 0; step < setup.actions(); step++) {
      long now = ticker.nanos();
      int roll = r.nextInt(100);
      String what;
      if (live.size() < target && (live.isEmpty() || roll < (step < 40 ? 25 : 3))) {
        Replica x = new Replica(String.format("r%02d", ids++), pool, classes, policy, ctx);
        live.add(x);
        boolean roundFirst = r.nextBoolean();
        if (roundFirst) {
          x.tick(now);
        }
        what = "join " + x.id + (roundFirst ? " (first round sent)" : " (no round yet)");
      } else if (roll < 40) {
        Replica x = pick(r, live);
        what = x.draining ? "nothing" : arrive(r, x, classes, pool, now, admitted, renew);
      } else if (roll < 46) {
        int n = r.nextInt(8, 26);
        for (int i = 0; i < n; i++) {
          Replica x = pick(r, live);
          if (!x.draining) {
            var unused = arrive(r, x, classes, pool, now, admitted, renew);
          }
        }
        what = "burst of " + n;
      } else if (roll < 60) {
        Replica x = pick(r, live);
        x.tick(now);
        what = "round " + x.id;
      } else if (roll < 70 && !ctx.store.trips().isEmpty()) {
        SteppedShareStore.Trip t = pick(r, ctx.store.trips());
        ctx.store.run(t);
        what = "store runs " + t.replica();
      } else if (roll < 76 && !ctx.store.trips().isEmpty()) {
        SteppedShareStore.Trip t = pick(r, ctx.store.trips());
        ctx.store.answer(t);
        what = "answer to " + t.replica();
      } else if (roll < 80 && live.size() > 1) {
        Replica x = pick(r, live);
        x.draining = true;
        what = "drain " + x.id;
      } else if (roll < 81 && live.size() > 1 && r.nextBoolean()) {
        Replica x = pick(r, live);
        live.remove(x);
        for (SteppedShareStore.Trip t : ctx.store.trips()) {
          if (t.replica().equals(x.id)) {
            ctx.store.drop(t);
          }
        }
        what = "crash " + x.id + " (its work gone, its lease left to expire)";
      } else {
        long ms = r.nextLong(1, 41);
        ticker.advance(Duration.ofMillis(ms));
        what = "advance " + ms + " ms";
        now = ticker.nanos();
        for (Replica x : List.copyOf(live)) {
          settle(x, now, renew, live, ctx.store);
        }
      }
      // an exchange unanswered for 300 ms is answered (the store always answers here)
      for (SteppedShareStore.Trip t : ctx.store.trips()) {
        long sent = ctx.sentAt.computeIfAbsent(t, k -> ticker.nanos());
        if (ticker.nanos() - sent >= Duration.ofMillis(300).toNanos()) {
          ctx.store.answer(t);
        }
      }
      long work = 0;
      int requests = 0;
      StringBuilder state = new StringBuilder();
      for (Replica x : live) {
        PoolState.Snapshot s = x.pool().snapshot(now);
        work += s.workInFlight();
        requests += s.requestsInFlight();
        ShareCoordinator.Status st = x.coordinator.statuses().get("p");
        state
            .append(' ')
            .append(x.id)
            .append('=')
            .append(s.requestsInFlight())
            .append('/')
            .append(st == null ? "-" : st.grantedRequests() + " " + st.mode().label());
      }
      peakWork = Math.max(peakWork, work);
      peakRequests = Math.max(peakRequests, requests);
      log.add(step + " " + what + ":" + state + " | " + requests + " requests, " + work + " work");
      if (log.size() > 40) {
        log.remove(0);
      }
      if (breach.isEmpty() && (work > setup.capacity() || requests > setup.maxRequests())) {
        breach =
            String.format(
                "action %d (%s): %d requests and %d work in flight across the replicas, pool %d"
                    + " and %d",
                step, what, requests, work, setup.maxRequests(), setup.capacity());
        return new Result(peakWork, peakRequests, admitted[0], breach, List.copyOf(log));
      }
    }
    return new Result(peakWork, peakRequests, admitted[0], breach, List.copyOf(log));
  }

  /** Ends what is due, expires waits, renews a replica due for it, lets a drained one leave. */
  private static void settle(
      Replica x, long now, Duration renew, List<Replica> live, SteppedShareStore store) {
    List<Held> due = new ArrayList<>();
    for (var it = x.held.iterator(); it.hasNext(); ) {
      Held h = it.next();
      if (h.endNanos() - now <= 0) {
        due.add(h);
        it.remove();
      }
    }
    due.forEach(h -> h.permit().release(Outcome.COMPLETED, now));
    x.controller.expireDue("p", now);
    if (x.lastTick == Long.MIN_VALUE || now - x.lastTick >= renew.toNanos()) {
      x.tick(now);
    }
    if (x.draining && x.held.isEmpty() && x.pool().snapshot(now).requestsInFlight() == 0) {
      live.remove(x);
      // one connection keeps the order: what it sent before it left runs before the leave
      for (SteppedShareStore.Trip t : store.trips()) {
        if (t.replica().equals(x.id)) {
          store.answer(t);
        }
      }
      var unused = x.coordinator.leaveAll();
    }
  }

  /** One request on {@code x}: refused at once, or allowed to wait up to 1 s. */
  private static String arrive(
      SplittableRandom r,
      Replica x,
      List<ClassPolicy> classes,
      PoolPolicy pool,
      long now,
      long[] admitted,
      Duration renew) {
    ClassPolicy c = classes.get(r.nextInt(classes.size()));
    long work = r.nextLong(1, Math.max(2, pool.capacityWorkUnits() / 3));
    long hold = Duration.ofMillis(r.nextLong(20, 1500)).toNanos();
    boolean waits = r.nextBoolean();
    AdmissionRequest q =
        new AdmissionRequest(
            pool, c, TENANT, work, now, now + Duration.ofSeconds(30).toNanos(), -1, -1);
    Waiter w =
        new Waiter() {
          @Override
          public void admitted(Permit permit, long waitedNanos) {
            x.held.add(new Held(permit, permit.admittedAtNanos() + hold));
            admitted[0]++;
          }

          @Override
          public void refused(Decision.Reject rejection, long waitedNanos) {}
        };
    Decision d =
        x.controller.decide(
            q, waits ? Ask.hold(Duration.ofSeconds(1).toNanos(), w, now) : Ask.now(now));
    if (d instanceof Decision.Admit a) {
      x.held.add(new Held(a.permit(), now + hold));
      admitted[0]++;
      return "admit on " + x.id;
    }
    return (d instanceof Decision.Queued ? "queued on " : "refused on ") + x.id;
  }

  private static <T> T pick(SplittableRandom r, List<T> from) {
    return from.get(r.nextInt(from.size()));
  }
}
