package io.sluice.store.redis;

import static io.sluice.store.redis.RedisProcesses.cli;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.bootstrap.StoreEnv;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.QuotaCheck;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.quota.TenantSlots;
import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.PoolKeys;
import io.sluice.core.store.StoreException;
import io.sluice.core.store.TokenBucketResult;
import io.sluice.core.store.TokenBucketSpec;
import io.sluice.core.time.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The Redis ports ({@link RedisPorts}) as production builds them ({@code REDIS_TYPE=cluster})
 * against a real 3-master cluster with one replica each: a counter batch across every master, token
 * buckets through EVALSHA on every node (also after the script cache was flushed), tenant budgets,
 * the pool key hash tag, and a master killed and replaced by its replica.
 *
 * <p>Shares: two replicas' leases ({@code <ns>{<pool>}:shares}, {@code share_lease.lua}) on the
 * same cluster before the failover test and again after it.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RedisClusterTest {
  private static final Duration FAILOVER = Duration.ofSeconds(20);

  private static RedisProcesses.Cluster topo;
  private static RedisPorts store;

  @BeforeAll
  static void start() throws Exception {
    assumeTrue(RedisProcesses.available(), "redis-server and redis-cli binaries");
    topo = RedisProcesses.cluster();
    store =
        RedisPorts.open(
            StoreEnv.redis(
                topo.env(
                    Map.of(
                        "REDIS_COMMAND_TIMEOUT", "500ms",
                        "REDIS_TIMEOUT", "1s",
                        "REDIS_RECONNECT_INTERVAL", "100ms"))),
            Ticker.system());
    // SCRIPT LOAD on every node, then counters and buckets on throwaway keys in many slots
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
  void counterBatch_acrossSlotsOnEveryMaster_eachIncrbyAndExpireOnItsNode() throws Exception {
    List<CounterIncrement> batch = new ArrayList<>();
    Set<Integer> masters = new HashSet<>();
    for (int i = 0; i < 60; i++) {
      String key = "rl_domain_key_" + i + "_1700000000";
      batch.add(new CounterIncrement(key, i % 7 + 1, 60, 0));
      masters.add(topo.masterPortFor(key));
    }
    assertThat(masters).hasSize(3);
    long[] first = incr(batch);
    long[] second = incr(batch);
    for (int i = 0; i < batch.size(); i++) {
      assertThat(first[i]).isEqualTo(i % 7 + 1);
      assertThat(second[i]).isEqualTo(2L * (i % 7 + 1));
    }
    for (int i = 0; i < batch.size(); i += 7) {
      String key = batch.get(i).key();
      int node = topo.masterPortFor(key);
      assertThat(cli(node, "GET", key).trim()).isEqualTo(Long.toString(second[i]));
      assertThat(Long.parseLong(cli(node, "TTL", key).trim())).isBetween(1L, 60L);
    }
  }

  @Test
  @Order(2)
  void tokenBuckets_evalshaOnEveryNode_evenAfterTheScriptCacheIsFlushed() throws Exception {
    for (RedisProcesses.Node n : topo.nodes) {
      cli(n.port(), "SCRIPT", "FLUSH"); // NOSCRIPT on the next EVALSHA: the store falls back
    }
    TokenBucketSpec two = new TokenBucketSpec(2, 2, 60_000);
    long now = System.currentTimeMillis();
    Set<Integer> masters = new HashSet<>();
    for (int i = 0; i < 12; i++) {
      String key = "tb_" + i;
      masters.add(topo.masterPortFor(key));
      assertThat(take(key, two, now).granted()).isTrue();
      assertThat(take(key, two, now).granted()).isTrue();
      TokenBucketResult third = take(key, two, now);
      assertThat(third.granted()).isFalse();
      assertThat(third.retryAfterMillis()).isPositive();
      assertThat(cli(topo.masterPortFor(key), "HGET", key, "t").trim()).isEqualTo("0");
    }
    assertThat(masters).hasSize(3);

    TenantQuotas quotas = new TenantQuotas(store.keyValue(), "q_", TenantQuotas.FailureMode.CLOSED);
    for (String id : List.of("acme", "globex", "initech", "umbrella")) {
      Tenant t = new Tenant(id, new TierPolicy("pro", 1, 0, 1, 0, 0));
      assertThat(takeRequest(quotas, t)).isEqualTo(QuotaCheck.ALLOWED);
      QuotaCheck second = takeRequest(quotas, t);
      assertThat(second.allowed()).isFalse();
      assertThat(second.storeFailed()).isFalse();
    }
  }

  @Test
  @Order(3)
  void poolKeys_shareOneSlot() {
    for (String pool : List.of("default", "gpu-a100", "batch")) {
      int slot = topo.slot(PoolKeys.shares("sluice_", pool));
      assertThat(slot).isEqualTo(topo.slot(PoolKeys.tag(pool)));
      assertThat(topo.slot(PoolKeys.key("other_", pool, "anything"))).isEqualTo(slot);
    }
    assertThat(PoolKeys.shares("sluice_", "default")).isEqualTo("sluice_{default}:shares");
  }

  /** Two replicas' leases on the cluster: granted within the pool, peers seen, left. */
  @Test
  @Order(4)
  void shares_grantedWithinThePool() throws Exception {
    assertShares("before_");
  }

  /**
   * Budgets ({@code budgets.lua}) on every master: a budget's hash and its reservation ids (a
   * second key, the same hash tag) in one slot; reserve, cut and settle by id.
   */
  @Test
  @Order(5)
  void budgets_reserveCutSettleById_keyAndIdsInOneSlot_onEveryMaster() throws Exception {
    RedisBudgetStore budgets = new RedisBudgetStore(store.connection());
    io.sluice.core.budget.Period day =
        new io.sluice.core.budget.Period.Calendar(
            io.sluice.core.budget.Period.Unit.DAY,
            java.time.ZoneOffset.UTC,
            java.time.DayOfWeek.MONDAY);
    io.sluice.core.budget.Terms t = new io.sluice.core.budget.Terms(1000, List.of(), 0);
    java.time.Instant now = java.time.Instant.now();
    String w = day.at(now).id();
    Set<Integer> masters = new HashSet<>();
    for (int i = 0; i < 30; i++) {
      String key = "bud_budget:{tenant:t" + i + ":daily}";
      masters.add(topo.masterPortFor(key));
      assertThat(
              budgets
                  .reserve(key, "r" + i, day, t, 600, now)
                  .toCompletableFuture()
                  .get(10, TimeUnit.SECONDS))
          .isInstanceOf(io.sluice.core.budget.Ledger.Outcome.Admit.class);
      var hold = new io.sluice.core.budget.BudgetStore.Hold("r" + i, w, 600, true);
      assertThat(
              budgets
                  .shrink(key, day, t, hold, 100, now)
                  .toCompletableFuture()
                  .get(10, TimeUnit.SECONDS))
          .isEqualTo(500L);
      budgets.settle(key, day, t, hold, 80, now).toCompletableFuture().get(10, TimeUnit.SECONDS);
      var state = budgets.read(key, day, t, now).toCompletableFuture().get(10, TimeUnit.SECONDS);
      assertThat(new long[] {state.spent(), state.reserved()}).containsExactly(80, 0);
      assertThat(cli(topo.masterPortFor(key), "HGET", key, "s").trim()).isEqualTo("80");
    }
    assertThat(masters).hasSize(3);
  }

  /** The same after a master failover (the shares' node may be the one that was replaced). */
  @Test
  @Order(11)
  void shares_afterTheFailover() throws Exception {
    RedisProcesses.waitFor(
        "shares answered",
        FAILOVER,
        () -> {
          try {
            assertShares("after_");
            return true;
          } catch (ExecutionException e) {
            return false;
          } catch (Exception e) {
            throw new AssertionError(e);
          }
        });
  }

  private static void assertShares(String ns) throws Exception {
    for (String pool : List.of("fo", "gpu-a100", "batch")) {
      var a =
          store
              .shares()
              .exchange(
                  new io.sluice.core.share.ShareStore.Exchange(
                      ns, pool, "a", 60_000, 100, 8, 70, 5, 0, 0, 70, 5, List.of()))
              .toCompletableFuture()
              .get(10, TimeUnit.SECONDS);
      assertThat(a.work()).isEqualTo(70);
      var b =
          store
              .shares()
              .exchange(
                  new io.sluice.core.share.ShareStore.Exchange(
                      ns, pool, "b", 60_000, 100, 8, 70, 5, 0, 0, 70, 5, List.of()))
              .toCompletableFuture()
              .get(10, TimeUnit.SECONDS);
      assertThat(b.work()).isEqualTo(30);
      assertThat(b.requests()).isEqualTo(3);
      assertThat(b.peers())
          .extracting(io.sluice.core.share.ShareStore.Peer::replica)
          .containsExactly("a");
      store.shares().leave(ns, pool, "a").toCompletableFuture().get(10, TimeUnit.SECONDS);
      store.shares().leave(ns, pool, "b").toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }

  @Test
  @Order(10)
  void masterKilled_replicaPromoted_storeRecovers() throws Exception {
    String key = "{fo}counter"; // probes below share its slot (so its master)
    int master = topo.masterPortFor(key);
    int replica = topo.replicaPortOf(master);
    String other = otherMastersKey(master);
    assertThat(incr(List.of(new CounterIncrement(key, 1, 60, 0)))).containsExactly(1);
    // two slots of a tenant of pool "fo" (its key shares the slot, so this master), cap 2
    assertThat(slot("a")).isEqualTo(new TenantSlots.SlotAnswer(true, 0));
    assertThat(slot("b")).isEqualTo(new TenantSlots.SlotAnswer(true, 1));
    assertThat(cli(master, "WAIT", "1", "2000").trim()).isEqualTo("1");

    topo.node(master).kill();
    ExecutionException failed =
        org.junit.jupiter.api.Assertions.assertThrows(
            ExecutionException.class, () -> incr(List.of(new CounterIncrement(key, 1, 60, 0))));
    assertThat(failed.getCause()).isInstanceOf(StoreException.class);
    // keys on the other masters are served throughout
    assertThat(incr(List.of(new CounterIncrement(other, 1, 60, 0)))).containsExactly(1);

    RedisProcesses.waitFor(
        "replica " + replica + " promoted, cluster ok",
        FAILOVER,
        () ->
            topo.node(replica).role().equals("master")
                && RedisProcesses.fields(cli(replica, "CLUSTER", "INFO"), ":")
                    .get("cluster_state")
                    .equals("ok"));
    long start = System.nanoTime();
    RedisProcesses.waitFor(
        "store recovers",
        FAILOVER,
        () -> {
          try {
            incr(List.of(new CounterIncrement("{fo}probe", 1, 60, 0)));
            take("{fo}tb", new TokenBucketSpec(5, 5, 60_000), System.currentTimeMillis());
            return true;
          } catch (ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(StoreException.class);
            return false;
          } catch (Exception e) {
            throw new AssertionError(e);
          }
        });
    long recovered = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    // the counter replicated before the kill goes on on the promoted replica
    assertThat(incr(List.of(new CounterIncrement(key, 1, 60, 0)))).containsExactly(2);
    assertThat(cli(replica, "GET", key).trim()).isEqualTo("2");
    // the tenant slots taken before the failover still count after it, and a's slot is given
    // back exactly once (a second release of it does not free b's)
    assertThat(slot("c")).isEqualTo(new TenantSlots.SlotAnswer(false, 2));
    releaseSlot("a");
    assertThat(slot("c")).isEqualTo(new TenantSlots.SlotAnswer(true, 1));
    releaseSlot("a");
    assertThat(slot("d")).isEqualTo(new TenantSlots.SlotAnswer(false, 2));
    assertThat(store.connection().health().healthy()).isTrue();
    System.out.printf("cluster kill: store recovered %d ms after promotion%n", recovered);
  }

  private static String otherMastersKey(int master) {
    for (int i = 0; ; i++) {
      if (topo.masterPortFor("other_" + i) != master) {
        return "other_" + i;
      }
    }
  }

  /** One slot of tenant "t" of pool "fo" (cap 2, 60 s lease) for {@code replica}. */
  static TenantSlots.SlotAnswer slot(String replica) throws Exception {
    return store
        .slots()
        .acquire("ts_", "fo", "t", replica, 2, 60_000)
        .toCompletableFuture()
        .get(10, TimeUnit.SECONDS);
  }

  static void releaseSlot(String replica) throws Exception {
    store
        .slots()
        .release("ts_", "fo", "t", replica, 60_000)
        .toCompletableFuture()
        .get(10, TimeUnit.SECONDS);
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
