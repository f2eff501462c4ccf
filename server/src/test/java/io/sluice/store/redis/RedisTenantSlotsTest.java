package io.sluice.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.sluice.core.quota.TenantSlots;
import io.sluice.store.LocalRedis;
import io.sluice.store.TenantSlotsContractTest;
import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code tenant_slots.lua} on the Redis at 127.0.0.1:6379 (skipped when none answers), read back
 * from the raw sorted set (holders counted by replica); plus what only Redis shows: the key's hash
 * tag and expiry, and a contribution lost from the hash written back by renewal.
 */
class RedisTenantSlotsTest extends TenantSlotsContractTest {
  private static RedisPorts store;
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

  @Override
  protected TenantSlots store() {
    return store.slots();
  }

  @Override
  protected Map<String, Long> contributions(String ns) {
    Map<String, Long> out = new HashMap<>();
    for (String holder : conn.sync().zrange(RedisTenantSlots.tenantKey(ns, "p", "acme"), 0, -1)) {
      out.merge(RedisTenantSlots.replicaOf(holder), 1L, Long::sum);
    }
    return out;
  }

  @Test
  void theKeyIsHashTaggedOnThePool() {
    assertThat(RedisTenantSlots.tenantKey("sluice_", "gpu", "acme"))
        .isEqualTo("sluice_{gpu}:tenant:acme");
  }

  @Test
  void theKeyExpiresAtTwiceTheLease() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "a", 3, LONG_TTL).granted()).isTrue();
    long pttl = conn.sync().pttl(RedisTenantSlots.tenantKey(ns, "p", "acme"));
    assertThat(pttl).as("the key expires at 2 x ttl").isBetween(1L, 2 * LONG_TTL);
  }

  @Test
  void renewalWritesBackAContributionThatWasLost() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "a", 2, LONG_TTL).granted()).isTrue();
    // a contribution lost (deleted) is written back with the count held
    conn.sync().del(RedisTenantSlots.tenantKey(ns, "p", "acme"));
    store()
        .renew(ns, "p", "a", Map.of("acme", 1), LONG_TTL)
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
    assertThat(contributions(ns).get("a")).isEqualTo(1);
  }

  /**
   * The race a renewal runs with a release: the renewal reads the holders, the slot is given back
   * (its holder removed from Redis), then the renewal is sent and writes the holder back. Played
   * here in that order, on one thread: the places held handed to the renewal give the slot back
   * while the renewal reads them. The slot given back must not stay in the store for its lease.
   */
  @Test
  void aSlotGivenBackWhileARenewalIsOut_isNotLeftWrittenBack() throws Exception {
    String ns = LocalRedis.uniquePrefix();
    assertThat(acquire(ns, "a", 3, LONG_TTL).granted()).isTrue();
    AtomicBoolean given = new AtomicBoolean();
    Map.Entry<String, Integer> acme = Map.entry("acme", 1);
    Map.Entry<String, Integer> releasing =
        new AbstractMap.SimpleImmutableEntry<>("other", 0) {
          @Override
          public String getKey() {
            if (given.compareAndSet(false, true)) {
              store().release(ns, "p", "acme", "a", LONG_TTL);
            }
            return super.getKey();
          }
        };
    Map<String, Integer> held =
        new AbstractMap<>() {
          @Override
          public Set<Map.Entry<String, Integer>> entrySet() {
            return new AbstractSet<>() {
              @Override
              public Iterator<Map.Entry<String, Integer>> iterator() {
                return List.of(acme, releasing).iterator();
              }

              @Override
              public int size() {
                return 2;
              }
            };
          }
        };
    store().renew(ns, "p", "a", held, LONG_TTL).toCompletableFuture().get(5, TimeUnit.SECONDS);
    assertThat(given).as("the slot was given back during the renewal").isTrue();
    org.awaitility.Awaitility.await()
        .atMost(java.time.Duration.ofSeconds(5))
        .until(() -> contributions(ns).isEmpty());
  }
}
