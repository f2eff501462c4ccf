package io.sluice.core.share;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * How the replicas that share a store share each pool (the policy file's {@code replicas} section).
 *
 * @param leaseTtl how long the store counts a replica that stopped renewing (its share then returns
 *     to the others)
 * @param renewInterval how often each replica renews its leases and rebalances
 * @param defaults every pool's behaviour unless {@code pools} names it
 * @param pools per-pool overrides, by pool name
 */
public record ReplicaPolicy(
    Duration leaseTtl, Duration renewInterval, PoolMode defaults, Map<String, PoolMode> pools) {

  /** What a pool does when the store cannot be reached. */
  public enum StoreDown {
    /** Keep the last share for {@code keepShareFor}, then {@code capacity / expectedReplicas}. */
    FALLBACK,
    /** Keep the last share for {@code keepShareFor}, then admit nothing new (503). */
    REFUSE
  }

  /**
   * One pool's sharing behaviour.
   *
   * @param storeDown what to do once the last share is older than {@code keepShareFor}
   * @param keepShareFor how long a replica keeps admitting on its last granted share without the
   *     store (at most the lease TTL: after it, the other replicas may take this one's share)
   * @param expectedReplicas the replica count the fallback share divides the pool by
   * @param floor the fraction of the pool each live replica keeps even when idle
   */
  public record PoolMode(
      StoreDown storeDown, Duration keepShareFor, int expectedReplicas, double floor) {
    public PoolMode {
      Objects.requireNonNull(storeDown, "storeDown");
      Objects.requireNonNull(keepShareFor, "keepShareFor");
    }

    /** The share a replica admits on without the store: {@code pool / expectedReplicas}, or 0. */
    public Load storeDownShare(io.sluice.core.policy.PoolPolicy pool) {
      if (storeDown == StoreDown.REFUSE) {
        return new Load(0, 0);
      }
      int expected = Math.max(1, expectedReplicas);
      return new Load(
          pool.capacityWorkUnits() / expected, Math.max(0, pool.maxRequests()) / expected);
    }
  }

  /** The last share kept 800 ms without the store (the self-fence), then the fallback share. */
  public static final PoolMode DEFAULT_MODE =
      new PoolMode(StoreDown.FALLBACK, Duration.ofMillis(800), 3, 0.02);

  /**
   * 1 s leases renewed every 200 ms (a dead replica's share back within a second: decision 0008,
   * "Short leases, self-fenced"); every pool {@link #DEFAULT_MODE}.
   */
  public static final ReplicaPolicy DEFAULT =
      new ReplicaPolicy(Duration.ofSeconds(1), Duration.ofMillis(200), DEFAULT_MODE, Map.of());

  public ReplicaPolicy {
    Objects.requireNonNull(leaseTtl, "leaseTtl");
    Objects.requireNonNull(renewInterval, "renewInterval");
    Objects.requireNonNull(defaults, "defaults");
    pools = Map.copyOf(pools);
  }

  /**
   * How long a replica admits on its last granted share without an answer from the store (its
   * self-fence), counted from when the last answered exchange was sent: {@code keepShareFor}, but
   * at most {@code leaseTtl - renewInterval}, so it ends before the lease that exchange renewed can
   * expire on the store and the others take the share.
   */
  public long keepNanos(PoolMode m) {
    return Math.min(m.keepShareFor().toNanos(), leaseTtl.toNanos() - renewInterval.toNanos());
  }

  /** The behaviour of pool {@code name}. */
  public PoolMode mode(String name) {
    PoolMode m = pools.get(name);
    return m == null ? defaults : m;
  }
}
