package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.queue.LogQuantile;
import io.sluice.core.queue.TenantFairQueue;

/**
 * One class's accounting inside one pool: its shares on both dimensions the pool counts (work units
 * and request slots), what it holds in flight, its waiting room and its service-time tail. Every
 * field is guarded by the owning {@link PoolState}'s lock; the pool's parts ({@link
 * CapacityLedger}, {@link QueueCoordinator}, {@link ServiceTimes}) read and write it only under
 * that lock.
 */
final class ClassSlot {
  ClassPolicy policy;

  /** {@code floor(reservedShare × capacity)} work units. */
  long reserved;

  /** {@code floor(guaranteedShare × capacity)} work units nobody else may occupy. */
  long guaranteed;

  /** Request slots the class may hold without borrowing (0 when the pool has no request cap). */
  int reservedRequests;

  /** Request slots nobody else may occupy (0 when the pool has no request cap). */
  int guaranteedRequests;

  /**
   * The most work one request of this class is accounted as ({@link CapacityLedger#accountedWork}):
   * the pool less the other classes' guaranteed shares, and at most the class's reserve when it may
   * not borrow; at least 1. Set by {@link CapacityLedger} whenever the limits or shares change.
   */
  long reach = 1;

  /** Removed from the policy but still holding permits: no shares, kept until it drains. */
  boolean retired;

  long work;
  int requests;
  TenantFairQueue<QueueCoordinator.Entry> queue;

  /** How much longer than the pool's service model this class's requests take (quantile). */
  final LogQuantile overrun = ServiceTimes.newTail();

  /** A slot with an empty waiting room bounded for {@code policy} in {@code pool}. */
  ClassSlot(ClassPolicy policy, PoolPolicy pool) {
    this.policy = policy;
    this.queue = new TenantFairQueue<>(QueueCoordinator.bounds(policy, pool));
  }

  String name() {
    return policy.name();
  }
}
