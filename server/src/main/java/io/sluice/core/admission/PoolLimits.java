package io.sluice.core.admission;

import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.queue.WaitPredictor;
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

  /**
   * What a source holding the pool below its limit for a while gives back by itself ({@link
   * LimitSource#resume}): the pool will hold at most {@code work} units and {@code requests} slots
   * (0: no cap) again, at the latest {@code inNanos} from now.
   */
  public record Resume(long work, int requests, long inNanos) {
    /** The same within a replica's share {@code s}. */
    Resume within(Share s) {
      int r = requests > 0 && s.requests() > 0 ? Math.min(requests, s.requests()) : requests;
      return new Resume(Math.min(work, s.work()), r, inNanos);
    }

    /**
     * The wait of a request predicted from the pause's end on, when the pool holds these limits
     * again instead of {@code workLimit} and {@code requestLimit}: {@code inNanos} plus the wait
     * for the work and slots ahead with the free work and slots grown by the difference.
     */
    long waitNanos(
        WaitPredictor p,
        long ahead,
        long work,
        long freeWork,
        long requestsAhead,
        long freeSlots,
        long workLimit,
        int requestLimit) {
      long moreWork = Math.max(0, this.work - workLimit);
      long moreSlots = Math.max(0, requests - requestLimit);
      long slots = freeSlots == Long.MAX_VALUE ? freeSlots : freeSlots + moreSlots;
      long after = p.predictWaitNanos(ahead, work, freeWork + moreWork, requestsAhead, slots);
      return Math.min(Long.MAX_VALUE / 2, inNanos + after);
    }
  }

  /** The same with {@code next} as the policy in effect. */
  public PoolLimits withPolicy(PoolPolicy next) {
    return new PoolLimits(next, share);
  }

  /** The same with {@code next} as this replica's share. */
  public PoolLimits withShare(@Nullable Share next) {
    return new PoolLimits(policy, next);
  }
}
