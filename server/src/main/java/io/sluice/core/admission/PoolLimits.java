package io.sluice.core.admission;

import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.share.ClassShares;
import org.jspecify.annotations.Nullable;

/**
 * The limits a pool's ledger enforces, as its {@link LimitSource}s compose them.
 *
 * @param policy the policy in effect: the configured one, with any source's work units and request
 *     slots in place of its capacity and maxRequests (the adaptive limit's)
 * @param share this replica's granted share of the pool (null: the whole pool)
 */
public record PoolLimits(PoolPolicy policy, @Nullable Share share) {
  /**
   * A replica's granted share of the pool.
   *
   * @param work work units this replica may hold
   * @param requests request slots this replica may hold (ignored when the pool caps none)
   * @param classes the other replicas' load by class and the idle class guarantees placed here
   *     (null: the store is down, the class rules are scaled to the share)
   */
  public record Share(long work, int requests, @Nullable ClassShares classes) {}

  /** The same with {@code next} as the policy in effect. */
  public PoolLimits withPolicy(PoolPolicy next) {
    return new PoolLimits(next, share);
  }

  /** The same with {@code next} as this replica's share. */
  public PoolLimits withShare(@Nullable Share next) {
    return new PoolLimits(policy, next);
  }
}
