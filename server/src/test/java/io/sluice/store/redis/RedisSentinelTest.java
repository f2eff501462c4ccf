package io.sluice.store.redis;

import static io.sluice.store.redis.RedisProcesses.cli;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.bootstrap.StoreEnv;
import io.sluice.core.budget.Ledger;
import io.sluice.core.budget.Period;
import io.sluice.core.budget.Terms;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.QuotaCheck;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.quota.TenantSlots;
import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.StoreException;
import io.sluice.core.store.TokenBucketResult;
import io.sluice.core.store.TokenBucketSpec;
import io.sluice.core.time.Ticker;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The Redis ports ({@link RedisPorts}) as production builds them ({@code REDIS_TYPE=sentinel})
 * against a real master, replica and three sentinels: counters, token buckets, tenant budgets,
 * share leases and budgets over billing periods ({@code budgets.lua}) work, and the store follows
 * two failovers by itself (a hung master, then a killed one; a lease, a tenant slot and a budget
 * reservation taken before the kill still count after it, and settle once by their ids).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RedisSentinelTest {
  /** Bound on a failover (sentinel down-after 1 s + election) plus the store's reconnect. */
  private static final Duration FAILOVER = Duration.ofSeconds(20);

  private static RedisProcesses.Sentinel topo;
  private static RedisPorts store;

  @BeforeAll
  static void start() throws Exception {
    assumeTrue(RedisProcesses.available(), "redis-server and redis-cli binaries");
    topo = RedisProcesses.sentinel();
    store =
        RedisPorts.open(
            StoreEnv.redis(
                topo.env(
                    Map.of(
                        // a loaded 2-core box stalls commands; the failover is what is tested
                        "REDIS_COMMAND_TIMEOUT", "500ms",
                        "REDIS_TIMEOUT", "1s",
                        "REDIS_RECONNECT_INTERVAL", "100ms"))),
            Ticker.system());
    store.keyValue().warmUp("warm_", 3).toCompletableFuture().get(20, TimeUnit.SECONDS);
  }

  @AfterAll
  static void stop() {
    if (store != null) {
      store.close();
    }
    if (topo != null) {
      topo.close();
    }
  }

  @Test
  @Order(1)
  void countersAndBuckets_onTheMaster() throws Exception {
    String k = "s_domain_key_value_1700000000";
    assertThat(incr(List.of(inc(k, 2), inc(k + "b", 5)))).containsExactly(2, 5);
    assertThat(incr(List.of(inc(k, 3)))).containsExactly(5);
    int master = topo.master().port();
    assertThat(cli(master, "GET", k).trim()).isEqualTo("5");
    assertThat(Long.parseLong(cli(master, "TTL", k).trim())).isBetween(1L, 60L);

    TokenBucketSpec two = new TokenBucketSpec(2, 2, 60_000);
    long now = System.currentTimeMillis();
    assertThat(take("s_tb", two, now).granted()).isTrue();
    assertThat(take("s_tb", two, now).granted()).isTrue();
    assertThat(take("s_tb", two, now).granted()).isFalse();

    TenantQuotas quotas = new TenantQuotas(store.keyValue(), "q_", TenantQuotas.FailureMode.CLOSED);
    Tenant acme = new Tenant("acme", new TierPolicy("pro", 1, 0, 1, 0, 0));
    assertThat(takeRequest(quotas, acme)).isEqualTo(QuotaCheck.ALLOWED);
    QuotaCheck second = takeRequest(quotas, acme);
    assertThat(second.allowed()).isFalse();
    assertThat(second.storeFailed()).isFalse();
  }

  @Test
  @Order(2)
  void masterHangs_sentinelPromotesReplica_storeMovesToIt() throws Exception {
    RedisProcesses.Node old = topo.master();
    RedisProcesses.Node next = topo.replica();
    assertThat(incr(List.of(inc("s_hang", 1)))).containsExactly(1);
    assertThat(cli(old.port(), "WAIT", "1", "2000").trim()).isEqualTo("1");

    old.sleepInBackground(5); // > down-after (1 s) + election: sentinels fail over meanwhile
    RedisProcesses.waitFor(
        "store fails on the hung master", Duration.ofSeconds(10), () -> incrFails("s_hang"));
    assertThat(store.connection().health().healthy()).isFalse();

    topo.awaitPromotion(next, FAILOVER);
    long recoveredAfter = awaitRecovery("s_hang2");
    System.out.printf(
        "sentinel hang: first write after promotion went to %s%n",
        cli(next.port(), "EXISTS", "s_hang2").trim().equals("1") ? "the new master" : "the old");
    // Known window (docs/ratelimit.md, "Redis topologies"): the store's connection stays on the
    // old master, which wakes up still a master and takes writes until Sentinel demotes it (~8 s
    // later; it then kills its clients) and they are lost in the resync. The store, reconnecting
    // through the sentinels, then writes to the new master only.
    topo.awaitReplicaInSync(old, FAILOVER);
    RedisProcesses.waitFor(
        "an increment lands on the new master",
        FAILOVER,
        () -> {
          if (incrFails("s_hang3")) {
            return false;
          }
          long onNew = Long.parseLong("0" + cli(next.port(), "GET", "s_hang3").trim());
          long onOld = Long.parseLong("0" + cli(old.port(), "GET", "s_hang3").trim());
          return onNew >= 1 && onOld == onNew; // written on the master, replicated to the old one
        });
    long before = Long.parseLong(cli(next.port(), "GET", "s_hang3").trim());
    assertThat(incr(List.of(inc("s_hang3", 1)))).containsExactly(before + 1);
    assertThat(store.connection().health().healthy()).isTrue();
    System.out.printf("sentinel hang: store recovered %d ms after promotion%n", recoveredAfter);
    topo.master = next;
    topo.replica = old;
  }

  @Test
  @Order(3)
  void masterKilled_sentinelPromotesReplica_storeRecoversWithTheData() throws Exception {
    RedisProcesses.Node old = topo.master();
    RedisProcesses.Node next = topo.replica();
    assertThat(incr(List.of(inc("s_kill", 1)))).containsExactly(1);
    TokenBucketSpec one = new TokenBucketSpec(1, 1, 60_000);
    long now = System.currentTimeMillis();
    assertThat(take("s_kill_tb", one, now).granted()).isTrue();
    // a replica's lease on a pool's share (share_lease.lua)
    assertThat(share("a", 70).work()).isEqualTo(70);
    // two slots of a tenant capped at 2 across replicas (tenant_slots.lua), held by a and b
    assertThat(slot("a")).isEqualTo(new TenantSlots.SlotAnswer(true, 0));
    assertThat(slot("b")).isEqualTo(new TenantSlots.SlotAnswer(true, 1));
    // a budget reservation (budgets.lua) of 600 of 1,000 under id k1
    Instant at = Instant.now();
    assertThat(budgetReserve("k1", 600, at)).isInstanceOf(Ledger.Outcome.Admit.class);
    assertThat(cli(old.port(), "WAIT", "1", "2000").trim()).isEqualTo("1");

    old.kill();
    ExecutionException failed =
        org.junit.jupiter.api.Assertions.assertThrows(
            ExecutionException.class, () -> incr(List.of(inc("s_kill", 1))));
    assertThat(failed.getCause()).isInstanceOf(StoreException.class);
    assertThatThrownBy(() -> take("s_kill_tb", one, now))
        .isInstanceOf(ExecutionException.class)
        .hasCauseInstanceOf(StoreException.class);
    assertThat(store.connection().health().healthy()).isFalse();

    topo.awaitPromotion(next, FAILOVER);
    long recoveredAfter = awaitRecovery("s_kill2");
    // what was replicated before the kill is on the new master: the counter goes on from 1 and
    // the bucket is still empty
    assertThat(incr(List.of(inc("s_kill", 1)))).containsExactly(2);
    assertThat(take("s_kill_tb", one, now).granted()).isFalse();
    // the lease was replicated: another replica is granted only what it does not hold
    io.sluice.core.share.ShareStore.Grant b = share("b", 100);
    assertThat(b.work()).isEqualTo(30);
    assertThat(b.peers())
        .extracting(io.sluice.core.share.ShareStore.Peer::replica)
        .containsExactly("a");
    // the tenant slots taken before the failover still count after it, and a's slot is given
    // back exactly once (a second release of it does not free b's)
    assertThat(slot("c")).isEqualTo(new TenantSlots.SlotAnswer(false, 2));
    releaseSlot("a");
    assertThat(slot("c")).isEqualTo(new TenantSlots.SlotAnswer(true, 1));
    releaseSlot("a");
    assertThat(slot("d")).isEqualTo(new TenantSlots.SlotAnswer(false, 2));
    // the budget's reservation was replicated: k1 sent again takes nothing more, another request
    // of 500 waits for it (600 + 500 > 1,000 with nothing spent), its settle counts once
    assertThat(budgetState(at)).containsExactly(0, 600);
    assertThat(budgetReserve("k1", 600, at)).isInstanceOf(Ledger.Outcome.Admit.class);
    assertThat(budgetState(at)).as("k1 again: held already").containsExactly(0, 600);
    assertThat(budgetReserve("k2", 500, at)).isInstanceOf(Ledger.Outcome.Wait.class);
    budgetSettle("k1", 600, 300, at);
    budgetSettle("k1", 600, 300, at);
    assertThat(budgetState(at)).as("settled once, by its id").containsExactly(300, 0);
    assertThat(budgetReserve("k2", 500, at)).isInstanceOf(Ledger.Outcome.Admit.class);
    // k2 runs a cheaper way: cut to 200 by its id, once
    var k2 = new io.sluice.core.budget.BudgetStore.Hold("k2", DAY.at(at).id(), 500, true);
    RedisBudgetStore budgets = new RedisBudgetStore(store.connection());
    assertThat(budgets.shrink(BUDGET_KEY, DAY, THOUSAND, k2, 200, at).toCompletableFuture().get())
        .isEqualTo(300);
    assertThat(budgets.shrink(BUDGET_KEY, DAY, THOUSAND, k2, 200, at).toCompletableFuture().get())
        .isZero();
    assertThat(budgetState(at)).containsExactly(300, 200);
    assertThat(store.connection().health().healthy()).isTrue();
    System.out.printf("sentinel kill: store recovered %d ms after promotion%n", recoveredAfter);
  }

  private static final String BUDGET_KEY = "s_budget:{tenant:acme:daily}";
  private static final Period DAY =
      new Period.Calendar(Period.Unit.DAY, java.time.ZoneOffset.UTC, java.time.DayOfWeek.MONDAY);
  private static final Terms THOUSAND = new Terms(1000, List.of(), 0);

  static Ledger.Outcome budgetReserve(String id, long units, Instant at) throws Exception {
    return new RedisBudgetStore(store.connection())
        .reserve(BUDGET_KEY, id, DAY, THOUSAND, units, at)
        .toCompletableFuture()
        .get(10, TimeUnit.SECONDS);
  }

  static void budgetSettle(String id, long units, long actual, Instant at) throws Exception {
    new RedisBudgetStore(store.connection())
        .settle(
            BUDGET_KEY,
            DAY,
            THOUSAND,
            new io.sluice.core.budget.BudgetStore.Hold(id, DAY.at(at).id(), units, true),
            actual,
            at)
        .toCompletableFuture()
        .get(10, TimeUnit.SECONDS);
  }

  /** The budget's {spent, reserved}. */
  static long[] budgetState(Instant at) throws Exception {
    Ledger.State st =
        new RedisBudgetStore(store.connection())
            .read(BUDGET_KEY, DAY, THOUSAND, at)
            .toCompletableFuture()
            .get(10, TimeUnit.SECONDS);
    return new long[] {st.spent(), st.reserved()};
  }

  /** Waits (bounded) until an increment succeeds; returns how long that took. */
  private static long awaitRecovery(String key) {
    long start = System.nanoTime();
    RedisProcesses.waitFor("store recovers", FAILOVER, () -> !incrFails(key));
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
  }

  private static boolean incrFails(String key) {
    try {
      incr(List.of(inc(key, 1)));
      return false;
    } catch (ExecutionException e) {
      assertThat(e.getCause()).isInstanceOf(StoreException.class);
      return true;
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  /** A 60 s lease of {@code replica} on pool "p" of 100 work units, asking for {@code target}. */
  static io.sluice.core.share.ShareStore.Grant share(String replica, long target) throws Exception {
    return store
        .shares()
        .exchange(
            new io.sluice.core.share.ShareStore.Exchange(
                "s_", "p", replica, 60_000, 100, 0, target, 0, 0, 0, target, 0, List.of()))
        .toCompletableFuture()
        .get(10, TimeUnit.SECONDS);
  }

  /** One slot of tenant "t" of pool "p" (cap 2, 60 s lease) for {@code replica}. */
  static TenantSlots.SlotAnswer slot(String replica) throws Exception {
    return store
        .slots()
        .acquire("s_", "p", "t", replica, 2, 60_000)
        .toCompletableFuture()
        .get(10, TimeUnit.SECONDS);
  }

  static void releaseSlot(String replica) throws Exception {
    store
        .slots()
        .release("s_", "p", "t", replica, 60_000)
        .toCompletableFuture()
        .get(10, TimeUnit.SECONDS);
  }

  static CounterIncrement inc(String key, long hits) {
    return new CounterIncrement(key, hits, 60, 0);
  }

  static long[] incr(List<CounterIncrement> batch) throws Exception {
    return store.keyValue().increment(batch).toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  static TokenBucketResult take(String key, TokenBucketSpec spec, long now) throws Exception {
    return store.keyValue().take(key, spec, 1, now).toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  static QuotaCheck takeRequest(TenantQuotas q, Tenant t) throws Exception {
    return q.takeRequest(t, System.currentTimeMillis())
        .toCompletableFuture()
        .get(10, TimeUnit.SECONDS);
  }
}
