package io.sluice.store.redis;

import io.sluice.core.quota.TenantSlots;

/**
 * {@link TenantSlots} on a {@link RedisConnection}: the tenant slots are the leased places of kind
 * {@code tenant} ({@link RedisLeasedPlaces}, {@code leased_places.lua}): one sorted set per capped
 * tenant and pool, a member per slot held named by the call that took it, scored by its lease
 * expiry on Redis's clock. Its late writes undone are counted under {@link #STORE}.
 */
public final class RedisTenantSlots extends TenantSlots.Over {
  /** The {@code store} tag of this port's late writes undone. */
  public static final String STORE = "tenant_slots";

  public RedisTenantSlots(RedisConnection redis) {
    super(new RedisLeasedPlaces(redis, STORE));
  }

  /**
   * {@code <namespace>{<pool>}:tenant:<tenantId>}: one sorted set per capped tenant and pool,
   * hash-tagged on the pool.
   */
  public static String tenantKey(String namespace, String pool, String tenant) {
    return TenantSlots.scope(namespace, pool).key(tenant);
  }

  /** The replica a holder id belongs to ({@link RedisLeasedPlaces#replicaOf}). */
  public static String replicaOf(String holder) {
    return RedisLeasedPlaces.replicaOf(holder);
  }
}
