package io.sluice.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.sluice.core.quota.TenantSlots;
import io.sluice.store.LocalRedis;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code tenant_slots.lua} on the Redis at 127.0.0.1:6379: one tenant's cap across two replicas,
 * the contribution of a replica that stopped renewing expiring on Redis's clock, a release never
 * below zero, renewal writing back a contribution that was lost, and atomicity under concurrent
 * acquires.
 */
class RedisTenantSlotsTest {
  private static final long LONG_TTL = 60_000;
  private static RedisStore store;
  private static RedisClient raw;
  private static StatefulRedisConnection<String, String> conn;

  @BeforeAll
  static void connect() {
    store = LocalRedisStore.open();
    raw = RedisClient.create("redis://127.0.0.1:" + LocalRedis.PORT);
    conn = raw.connect();
  }

  @AfterAll
  static void close() {
    if (store != null) {
      store.close();
    }
    if (conn != null) {
      conn.close();
      raw.shutdown();
    }
  }

  private static TenantSlots.SlotAnswer acquire(String ns, String replica, int cap, long ttl)
      throws Exception {
    return store
        .acquire(ns, "p", "acme", replica, cap, ttl)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
  }

  private static void release(String ns, String replica) throws Exception {
    store
        .release(ns, "p", "acme", replica, LONG_TTL)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
  }

  private static Map<String, String> hash(String ns) {
    return conn.sync().hgetall(RedisStore.tenantKey(ns, "p", "acme"));
  }

  private static long count(String ns, String replica) {
    String v = hash(ns).get(replica);
    return v == null ? 0 : Long.parseLong(v.substring(v.indexOf(' ') + 1));
  }

  @Test
  void theKeyIsHashTaggedOnThePool() {
    assertThat(RedisStore.tenantKey("sluice_", "gpu", "acme"))
        .isEqualTo("sluice_{gpu}:tenant:acme");
  }

  @Test
  void theCapHoldsAcrossTwoReplicas_andAReleaseFreesASlotForEither() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "a", 3, LONG_TTL).granted()).isTrue();
    assertThat(acquire(ns, "b", 3, LONG_TTL).granted()).isTrue();
    assertThat(acquire(ns, "a", 3, LONG_TTL).granted()).isTrue();
    TenantSlots.SlotAnswer full = acquire(ns, "b", 3, LONG_TTL);
    assertThat(full.granted()).isFalse();
    assertThat(full.total()).isEqualTo(3);
    assertThat(acquire(ns, "a", 3, LONG_TTL).granted()).isFalse();
    assertThat(count(ns, "a")).isEqualTo(2);
    assertThat(count(ns, "b")).isEqualTo(1);

    release(ns, "a");
    assertThat(acquire(ns, "b", 3, LONG_TTL).granted()).as("a's slot went back").isTrue();
    assertThat(count(ns, "b")).isEqualTo(2);
    long pttl = conn.sync().pttl(RedisStore.tenantKey(ns, "p", "acme"));
    assertThat(pttl).as("the key expires at 2 x ttl").isBetween(1L, 2 * LONG_TTL);
  }

  @Test
  void aReleaseNeverGoesBelowZero_andTheFieldLeavesAtZero() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    release(ns, "a"); // nothing held: no field appears
    assertThat(hash(ns)).isEmpty();
    assertThat(acquire(ns, "a", 2, LONG_TTL).granted()).isTrue();
    release(ns, "a");
    release(ns, "a");
    release(ns, "a");
    assertThat(hash(ns)).isEmpty();
    assertThat(acquire(ns, "a", 2, LONG_TTL).granted()).isTrue();
    assertThat(acquire(ns, "a", 2, LONG_TTL).granted()).as("not counted below zero").isTrue();
    assertThat(acquire(ns, "a", 2, LONG_TTL).granted()).isFalse();
  }

  @Test
  void aDeadReplicasSlotsExpireOnRedissClock_andReturnToTheOthers() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "dead", 3, 1_000).granted()).isTrue();
    assertThat(acquire(ns, "dead", 3, 1_000).granted()).isTrue();
    // a live replica's long lease keeps the key itself alive: only the field can expire
    assertThat(acquire(ns, "other", 3, LONG_TTL).granted()).isTrue();
    // "dead" never renews; "live" is refused until its contribution expired on Redis's clock
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    boolean granted = false;
    int refusals = 0;
    while (System.nanoTime() < deadline) {
      TenantSlots.SlotAnswer a = acquire(ns, "live", 3, LONG_TTL);
      if (a.granted()) {
        granted = true;
        break;
      }
      assertThat(a.total()).isEqualTo(3);
      refusals++;
      Thread.sleep(20);
    }
    assertThat(granted).as("the dead replica's slots expired within 10 s").isTrue();
    assertThat(hash(ns)).as("its field was dropped").containsOnlyKeys("other", "live");
    assertThat(refusals).isPositive(); // it did count while its lease lived
  }

  @Test
  void renewalKeepsAContributionAlive_andWritesBackOneThatWasLost() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "a", 2, 300).granted()).isTrue();
    // renewed with a long lease: it outlives the 300 ms it was taken with
    store
        .renew(ns, "p", "a", Map.of("acme", 1), LONG_TTL)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
    Thread.sleep(400);
    assertThat(acquire(ns, "b", 2, LONG_TTL).granted()).isTrue();
    assertThat(acquire(ns, "b", 2, LONG_TTL).granted()).as("a's slot still counts").isFalse();
    // a contribution lost (deleted) is written back with the count held
    conn.sync().hdel(RedisStore.tenantKey(ns, "p", "acme"), "a");
    store
        .renew(ns, "p", "a", Map.of("acme", 1), LONG_TTL)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
    assertThat(count(ns, "a")).isEqualTo(1);
    // renewing a count of 0 for a field that is gone writes nothing
    store
        .renew(ns, "p", "c", Map.of("acme", 0), LONG_TTL)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
    assertThat(hash(ns)).doesNotContainKey("c");
  }

  @Test
  void concurrentAcquiresOfManyReplicas_neverPassTheCap() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    List<CompletableFuture<TenantSlots.SlotAnswer>> all = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      all.add(store.acquire(ns, "p", "acme", "r" + (i % 5), 7, LONG_TTL).toCompletableFuture());
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
    long granted = all.stream().filter(f -> f.join().granted()).count();
    assertThat(granted).isEqualTo(7);
    long sum = 0;
    for (String r : hash(ns).keySet()) {
      sum += count(ns, r);
    }
    assertThat(sum).isEqualTo(7);
  }
}
