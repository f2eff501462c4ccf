package io.sluice.store.redis;

import io.sluice.core.quota.WorkflowPlaces;

/**
 * {@link WorkflowPlaces} on a {@link RedisConnection}: the workflow places are the leased places of
 * kind {@code workflow} ({@link RedisLeasedPlaces}, {@code leased_places.lua}): one sorted set per
 * workflow and pool, a member per place held named by the call that took it with its work units,
 * scored by its lease expiry on Redis's clock. Its late writes undone are counted under {@link
 * #STORE}.
 */
public final class RedisWorkflowPlaces extends WorkflowPlaces.Over {
  /** The {@code store} tag of this port's late writes undone. */
  public static final String STORE = "workflow_places";

  public RedisWorkflowPlaces(RedisConnection redis) {
    super(new RedisLeasedPlaces(redis, STORE));
  }

  /** {@code <namespace>{<pool>}:workflow:<id>}, hash-tagged on the pool. */
  public static String workflowKey(String namespace, String pool, String workflow) {
    return WorkflowPlaces.scope(namespace, pool).key(workflow);
  }

  /** The replica a holder id belongs to ({@link RedisLeasedPlaces#replicaOf}). */
  public static String replicaOf(String holder) {
    return RedisLeasedPlaces.replicaOf(holder);
  }
}
