package io.sluice.store.redis;

import io.sluice.core.quota.TenantSlots;
import io.sluice.core.store.PoolKeys;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link TenantSlots} on a {@link RedisConnection}: one hash per capped tenant and pool kept by
 * {@code tenant_slots.lua}, atomic per call, each replica's contribution expiring on Redis's clock.
 * Its warm-up round takes and gives back one slot on a throwaway key.
 */
public final class RedisTenantSlots implements TenantSlots {
  private static final RedisScript SCRIPT = RedisScript.load("tenant_slots.lua");

  private final RedisConnection redis;

  public RedisTenantSlots(RedisConnection redis) {
    this.redis = redis;
    redis.register(
        SCRIPT,
        (key, n) ->
            acquire(key, "w" + n, "t", "warmup", 1, 1000)
                .thenCompose(a -> release(key, "w" + n, "t", "warmup", 1000)));
  }

  /**
   * {@code <namespace>{<pool>}:tenant:<tenantId>}: one hash per capped tenant and pool, hash-tagged
   * on the pool ({@link PoolKeys#key}).
   */
  public static String tenantKey(String namespace, String pool, String tenant) {
    return PoolKeys.key(namespace, pool, "tenant:" + tenant);
  }

  /**
   * {@code tenant_slots.lua acquire}: drop the expired, take a slot if the live sum is below cap.
   */
  @Override
  public CompletionStage<SlotAnswer> acquire(
      String namespace, String pool, String tenant, String replica, int cap, long leaseTtlMillis) {
    String[] keys = {tenantKey(namespace, pool, tenant)};
    String[] args = {
      "acquire", replica, Long.toString(Math.max(1, leaseTtlMillis)), Integer.toString(cap)
    };
    return redis.eval(
        SCRIPT,
        keys,
        args,
        r -> new SlotAnswer(((Number) r.get(0)).longValue() == 1, ((Number) r.get(1)).longValue()));
  }

  @Override
  public CompletionStage<Void> release(
      String namespace, String pool, String tenant, String replica, long leaseTtlMillis) {
    String[] keys = {tenantKey(namespace, pool, tenant)};
    String[] args = {"release", replica, Long.toString(Math.max(1, leaseTtlMillis))};
    return redis.eval(SCRIPT, keys, args, r -> (Void) null);
  }

  /** One script call over the pool's tenant keys (all in the pool's slot). */
  @Override
  public CompletionStage<Void> renew(
      String namespace,
      String pool,
      String replica,
      Map<String, Integer> held,
      long leaseTtlMillis) {
    if (held.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    String[] keys = new String[held.size()];
    String[] args = new String[3 + held.size()];
    args[0] = "renew";
    args[1] = replica;
    args[2] = Long.toString(Math.max(1, leaseTtlMillis));
    int i = 0;
    for (Map.Entry<String, Integer> e : held.entrySet()) {
      keys[i] = tenantKey(namespace, pool, e.getKey());
      args[3 + i] = Integer.toString(Math.max(0, e.getValue()));
      i++;
    }
    return redis.eval(SCRIPT, keys, args, r -> (Void) null);
  }
}
