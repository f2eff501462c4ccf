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

  /**
   * The most work one request of this class can ever be counted as in the pool as a whole (the pool
   * less the other classes' guaranteed shares, within its reserve when it may not borrow): what a
   * request reports as demand, whatever this replica's share is now.
   */
  long poolReach = 1;

  /** Removed from the policy but still holding permits: no shares, kept until it drains. */
  boolean retired;

  long work;
  int requests;

  /** Work in flight as the requests asked for it (each at most {@link #poolReach}). */
  long demandWork;

  /** Work waiting in the queue as the requests asked for it (each at most {@link #poolReach}). */
  long queuedDemandWork;

  /** Work and requests refused for want of capacity since the last demand read. */
  long refusedWork;

  int refusedRequests;

  /**
   * The other replicas' work and requests in flight in this class, as of their last renewal (0 with
   * no store, or when the replica counts its class shares within its own share).
   */
  long peerWork;

  int peerRequests;

  /**
   * The part of this class's guarantee that the share allocation placed on this replica and that it
   * did not want then: other classes may not use it here (as one pool keeps a class's idle
   * guarantee). 0 with no store.
   */
  long idleWork;

  int idleRequests;
  TenantFairQueue<QueueCoordinator.Entry> queue;

  /** How much longer than the pool's service model this class's requests take (quantile). */
  final LogQuantile overrun = ServiceTimes.newTail();

  /** The median time from admission to the response's end, of completions whose end was seen. */
  final LogQuantile endToEnd = ServiceTimes.newMedian();

  /** A slot with an empty waiting room bounded for {@code policy} in {@code pool}. */
  ClassSlot(ClassPolicy policy, PoolPolicy pool) {
    this.policy = policy;
    this.queue = new TenantFairQueue<>(QueueCoordinator.bounds(policy, pool));
  }

  String name() {
    return policy.name();
  }
}
