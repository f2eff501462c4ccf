package io.sluice.core.queue;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.testing.Seeded;
import io.sluice.testing.Seeded.Gen;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TenantFairQueuePropertiesTest {
  private static final long MS = 1_000_000L;

  // ---------- fairness ----------

  /** One tenant of the fairness scenario: weight, the poll index it joins at, its item works. */
  record TenantPlan(int weight, int joinAt, List<Integer> works) {}

  /** Two to five tenants: weight 1, 2, 3, 5 or 8, joining at poll 0-40, 30-80 items of 1-50. */
  private static List<TenantPlan> tenants(Gen g) {
    return g.list(
        2,
        5,
        () ->
            new TenantPlan(
                g.oneOf(1, 2, 3, 5, 8),
                g.intBetween(0, 40),
                g.list(30, 80, () -> g.intBetween(1, 50))));
  }

  record Fairness(List<TenantPlan> plans, long deadlineSeed) {}

  @Test
  void poll_backloggedTenants_workProportionalToWeightWithinOneMaxItem() {
    Seeded.forAll(
        0x5EED_1301L,
        300,
        g -> new Fairness(tenants(g), g.longBetween(0, Long.MAX_VALUE)),
        c -> fairness(c.plans(), c.deadlineSeed()));
  }

  private static void fairness(List<TenantPlan> plans, long deadlineSeed) {
    long now = Long.MAX_VALUE - 1000 * MS;
    TenantFairQueue<Integer> q =
        new TenantFairQueue<>(new QueueBounds(Long.MAX_VALUE / 4, 100_000, 3_600_000 * MS, 1.0));
    long id = 0;
    java.util.SplittableRandom rnd = new java.util.SplittableRandom(deadlineSeed);
    int[] joinedAt = new int[plans.size()];
    java.util.Arrays.fill(joinedAt, -1);
    List<Integer> servedTenant = new ArrayList<>();
    List<Long> servedWork = new ArrayList<>();
    int step = 0;
    boolean allBacklogged = true;
    while (allBacklogged) {
      for (int t = 0; t < plans.size(); t++) {
        int join = t == 0 ? 0 : plans.get(t).joinAt();
        if (join == step) {
          joinedAt[t] = step;
          for (int w : plans.get(t).works()) {
            long deadline = now + (1 + rnd.nextInt(1_000_000)) * MS;
            q.offer(
                new QueuedItem<>(
                    id++,
                    "t" + t,
                    plans.get(t).weight(),
                    w,
                    now,
                    now + 3_600_000 * MS,
                    deadline,
                    t),
                now);
          }
        }
      }
      QueuedItem<Integer> served = q.poll(now).item();
      servedTenant.add(served.payload());
      servedWork.add(served.workUnits());
      step++;
      // stop at the first poll that empties a joined tenant, or once every tenant has joined
      // and been served for a while
      for (int t = 0; t < plans.size(); t++) {
        if (joinedAt[t] >= 0 && q.tenantQueuedWork("t" + t) == 0) {
          allBacklogged = false;
        }
      }
    }
    int n = servedTenant.size();
    for (int f = 0; f < plans.size(); f++) {
      for (int g = f + 1; g < plans.size(); g++) {
        if (joinedAt[f] < 0 || joinedAt[g] < 0) {
          continue;
        }
        int from = Math.max(joinedAt[f], joinedAt[g]);
        double wf = plans.get(f).weight();
        double wg = plans.get(g).weight();
        double bound =
            plans.get(f).works().stream().mapToInt(Integer::intValue).max().orElseThrow() / wf
                + plans.get(g).works().stream().mapToInt(Integer::intValue).max().orElseThrow()
                    / wg;
        // every interval [a, b) inside both backlogged periods
        for (int a = from; a < n; a++) {
          double sf = 0;
          double sg = 0;
          for (int b = a; b < n; b++) {
            if (servedTenant.get(b) == f) {
              sf += servedWork.get(b);
            } else if (servedTenant.get(b) == g) {
              sg += servedWork.get(b);
            }
            assertThat(Math.abs(sf / wf - sg / wg))
                .as("tenants %d,%d interval [%d,%d]", f, g, a, b)
                .isLessThanOrEqualTo(bound + 1e-9);
          }
        }
      }
    }
  }

  // ---------- random operation sequences: expiry, exactly-once, no leaks ----------

  sealed interface Op permits OfferOp, PollOp, RemoveOp, AdvanceOp, ExpireOp {}

  record OfferOp(int tenant, int weight, int work, int expiryMs, int deadlineMs) implements Op {}

  record PollOp() implements Op {}

  record RemoveOp(int pick) implements Op {}

  record AdvanceOp(int ms) implements Op {}

  record ExpireOp() implements Op {}

  /** Up to 300 operations: offer 6, poll 3, remove 2, advance 3, expire 1 (relative weights). */
  private static List<Op> ops(Gen g) {
    return g.list(0, 300, () -> op(g));
  }

  private static Op op(Gen g) {
    return g.<Op>frequency(
        Map.entry(
            6,
            () ->
                new OfferOp(
                    g.intBetween(0, 5),
                    g.intBetween(1, 4),
                    g.intBetween(1, 30),
                    g.intBetween(-5, 200),
                    g.intBetween(1, 400))),
        Map.entry(3, PollOp::new),
        Map.entry(2, () -> new RemoveOp(g.intBetween(0, 1000))),
        Map.entry(3, () -> new AdvanceOp(g.intBetween(0, 60))),
        Map.entry(1, ExpireOp::new));
  }

  /** Runs ops against the queue and a plain model; returns the queue for final checks. */
  private static TenantFairQueue<Long> run(List<Op> ops, long start, Set<Long> reported) {
    long maxWaitMs = 150;
    TenantFairQueue<Long> q = new TenantFairQueue<>(new QueueBounds(200, 25, maxWaitMs * MS, 0.5));
    Map<Long, QueuedItem<Long>> live = new LinkedHashMap<>();
    Map<Long, Long> expiryOf = new HashMap<>();
    long now = start;
    long nextId = 0;
    for (Op op : ops) {
      if (op instanceof OfferOp o) {
        long id = nextId++;
        QueuedItem<Long> item =
            new QueuedItem<>(
                id,
                "t" + o.tenant(),
                o.weight(),
                o.work(),
                now,
                now + o.expiryMs() * MS,
                now + o.deadlineMs() * MS,
                id);
        Offer result = q.offer(item, now);
        if (result instanceof Offer.Accepted) {
          live.put(id, item);
          expiryOf.put(id, now + Math.min(o.expiryMs(), maxWaitMs) * MS);
        } else {
          assertThat(reported.add(id)).isTrue();
        }
      } else if (op instanceof PollOp) {
        Poll<Long> p = q.poll(now);
        for (QueuedItem<Long> e : p.expired()) {
          assertThat(live.remove(e.id())).as("expired item was live").isNotNull();
          assertThat(expiryOf.get(e.id()) - now).isLessThanOrEqualTo(0);
          assertThat(reported.add(e.id())).isTrue();
        }
        if (p.hasItem()) {
          long id = p.item().id();
          assertThat(live.remove(id)).as("served item was live").isNotNull();
          assertThat(expiryOf.get(id) - now).as("served after expiry").isGreaterThan(0);
          assertThat(reported.add(id)).isTrue();
        } else {
          assertThat(live).isEmpty();
        }
      } else if (op instanceof RemoveOp r) {
        long id = nextId == 0 ? 0 : r.pick() % nextId;
        boolean wasLive = live.remove(id) != null;
        assertThat(q.remove(id).isPresent()).isEqualTo(wasLive);
        if (wasLive) {
          assertThat(reported.add(id)).isTrue();
        }
      } else if (op instanceof AdvanceOp a) {
        now += a.ms() * MS;
      } else if (op instanceof ExpireOp) {
        for (QueuedItem<Long> e : q.expire(now)) {
          assertThat(live.remove(e.id())).isNotNull();
          assertThat(expiryOf.get(e.id()) - now).isLessThanOrEqualTo(0);
          assertThat(reported.add(e.id())).isTrue();
        }
      }
      assertThat(q.depth()).isEqualTo(live.size());
      assertThat(q.queuedWork())
          .isEqualTo(live.values().stream().mapToLong(QueuedItem::workUnits).sum());
      assertThat(q.queuedWork()).isLessThanOrEqualTo(200);
      assertThat(q.depth()).isLessThanOrEqualTo(25);
      for (int t = 0; t < 6; t++) {
        String tenant = "t" + t;
        assertThat(q.tenantQueuedWork(tenant)).isLessThanOrEqualTo(100);
      }
      if (live.isEmpty()) {
        assertThat(q.nextExpiryNanos()).isEmpty();
      } else {
        long t = now;
        long earliest =
            live.keySet().stream().mapToLong(id -> expiryOf.get(id) - t).min().orElseThrow();
        assertThat(q.nextExpiryNanos()).hasValue(now + earliest);
      }
    }
    // finally everything left expires exactly once
    now += 10 * maxWaitMs * MS;
    Poll<Long> last = q.poll(now);
    assertThat(last.hasItem()).isFalse();
    for (QueuedItem<Long> e : last.expired()) {
      assertThat(live.remove(e.id())).isNotNull();
      assertThat(reported.add(e.id())).isTrue();
    }
    assertThat(live).isEmpty();
    assertThat(reported).hasSize((int) nextId);
    return q;
  }

  record Ops(List<Op> ops, int startChoice) {}

  @Test
  void pollAndExpire_randomOps_neverServeExpiredAndReportEachItemOnce() {
    Seeded.forAll(
        0x5EED_1302L,
        400,
        g -> new Ops(ops(g), g.intBetween(0, 2)),
        c -> {
          long start =
              switch (c.startChoice()) {
                case 0 -> 0;
                case 1 -> Long.MAX_VALUE - 1_000 * MS; // time wraps past Long.MAX_VALUE mid-run
                default -> -123_456_789L;
              };
          run(c.ops(), start, new HashSet<>());
        });
  }

  @Test
  void randomOps_afterDrain_leaveNoStateBehind() {
    Seeded.forAll(
        0x5EED_1303L,
        400,
        TenantFairQueuePropertiesTest::ops,
        ops -> {
          TenantFairQueue<Long> q = run(ops, Long.MAX_VALUE - 5_000 * MS, new HashSet<>());

          assertThat(q.depth()).isZero();
          assertThat(q.queuedWork()).isZero();
          assertThat(q.flowCount()).isZero();
          assertThat(q.activeFlowCount()).isZero();
          assertThat(q.expiryIndexSize()).isZero();
          assertThat(q.nextExpiryNanos()).isEmpty();
          assertThat(q.topTenants(10)).isEmpty();
        });
  }

  @Test
  void flows_whileBacklogged_neverExceedTenantsWithWaitingOrCredit() {
    Seeded.forAll(
        0x5EED_1304L,
        200,
        g -> g.list(1, 200, () -> g.intBetween(0, 50)),
        tenants -> {
          // many distinct tenants each queue one item and are served: idle flows are swept, not
          // kept
          TenantFairQueue<Integer> q =
              new TenantFairQueue<>(new QueueBounds(1_000_000, 10_000, 3_600_000 * MS, 1.0));
          long now = 0;
          q.offer(new QueuedItem<>(-1, "anchor", 1, 1, now, now + MS, now + MS, 0), now);
          long id = 0;
          for (int t : tenants) {
            q.offer(
                new QueuedItem<>(id++, "x" + t + "-" + id, 1, 1, now, now + MS, now + MS, t), now);
            q.poll(now);
            assertThat(q.flowCount()).isLessThanOrEqualTo(q.activeFlowCount() + 64 + 1);
          }
        });
  }
}
