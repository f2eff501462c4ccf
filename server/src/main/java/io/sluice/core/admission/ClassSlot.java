package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.queue.LogQuantile;
import io.sluice.core.queue.TenantFairQueue;
import io.sluice.core.share.Load;

/**
 * One class's accounting inside one pool: its shares on both dimensions the pool counts (work units
 * and request slots), what it holds in flight, its waiting room and its service-time tail. Every
 * field is private and guarded by the owning {@link PoolState}'s lock; each group is written by the
 * one part that owns it, through the methods of its group:
 *
 * <ul>
 *   <li>{@link CapacityLedger}: the shares, reaches and loads (this replica's and the peers');
 *   <li>{@link QueueCoordinator}: the waiting room and the demand waiting in it;
 *   <li>{@link PoolDemand}: the demand refused since the last read;
 *   <li>{@link ServiceTimes}: the service-time tails.
 * </ul>
 */
final class ClassSlot {
  private static final Load NONE = new Load(0, 0);

  private ClassPolicy policy;

  /** Removed from the policy but still holding permits: no shares, kept until it drains. */
  private boolean retired;

  // ---- CapacityLedger's: shares and reaches ----

  /** {@code floor(reservedShare × capacity)} work units. */
  private long reserved;

  /** {@code floor(guaranteedShare × capacity)} work units nobody else may occupy. */
  private long guaranteed;

  /** Request slots the class may hold without borrowing (0 when the pool has no request cap). */
  private int reservedRequests;

  /** Request slots nobody else may occupy (0 when the pool has no request cap). */
  private int guaranteedRequests;

  /**
   * The most work one request of this class is accounted as ({@link CapacityLedger#accountedWork}):
   * the pool less the other classes' guaranteed shares, and at most the class's reserve when it may
   * not borrow; at least 1. Set by {@link CapacityLedger} whenever the limits or shares change.
   */
  private long reach = 1;

  /**
   * The most work one request of this class can ever be counted as in the pool as a whole (the pool
   * less the other classes' guaranteed shares, within its reserve when it may not borrow): what a
   * request reports as demand, whatever this replica's share is now.
   */
  private long poolReach = 1;

  // ---- CapacityLedger's: loads ----

  private long work;
  private int requests;

  /** Work in flight as the requests asked for it (each at most {@link #poolReach}). */
  private long demandWork;

  /**
   * The other replicas' work and requests in flight in this class, as of their last renewal (0 with
   * no store, or when the replica counts its class shares within its own share).
   */
  private Load peers = NONE;

  /**
   * The part of this class's guarantee that the share allocation placed on this replica and that it
   * did not want then: other classes may not use it here (as one pool keeps a class's idle
   * guarantee). 0 with no store.
   */
  private Load idle = NONE;

  // ---- QueueCoordinator's ----

  private TenantFairQueue<QueueCoordinator.Entry> queue;

  /** Work waiting in the queue as the requests asked for it (each at most {@link #poolReach}). */
  private long queuedDemandWork;

  // ---- PoolDemand's: work and requests refused for want of capacity since the last read ----

  private long refusedWork;
  private int refusedRequests;

  // ---- ServiceTimes' ----

  /** How much longer than the pool's service model this class's requests take (quantile). */
  private final LogQuantile overrun = ServiceTimes.newTail();

  /** The median time from admission to the response's end, of completions whose end was seen. */
  private final LogQuantile endToEnd = ServiceTimes.newMedian();

  /** A slot with an empty waiting room bounded for {@code policy} in {@code pool}. */
  ClassSlot(ClassPolicy policy, PoolPolicy pool) {
    this.policy = policy;
    this.queue = new TenantFairQueue<>(WaitingRooms.bounds(policy, pool));
  }

  String name() {
    return policy.name();
  }

  ClassPolicy policy() {
    return policy;
  }

  boolean retired() {
    return retired;
  }

  /** The class is (again) in the policy, as {@code c}. */
  void activate(ClassPolicy c) {
    policy = c;
    retired = false;
  }

  /** The class left the policy but holds permits: no shares until it drains. */
  void retire() {
    retired = true;
    setShares(0, 0, 0, 0);
  }

  long reserved() {
    return reserved;
  }

  long guaranteed() {
    return guaranteed;
  }

  int reservedRequests() {
    return reservedRequests;
  }

  int guaranteedRequests() {
    return guaranteedRequests;
  }

  void setShares(long reserved, long guaranteed, int reservedRequests, int guaranteedRequests) {
    this.reserved = reserved;
    this.guaranteed = guaranteed;
    this.reservedRequests = reservedRequests;
    this.guaranteedRequests = guaranteedRequests;
  }

  long reach() {
    return reach;
  }

  long poolReach() {
    return poolReach;
  }

  void setReach(long reach, long poolReach) {
    this.reach = reach;
    this.poolReach = poolReach;
  }

  long work() {
    return work;
  }

  int requests() {
    return requests;
  }

  long demandWork() {
    return demandWork;
  }

  /** {@code work} and {@code demand} more in flight, {@code requests} more requests (or fewer). */
  void hold(long work, long demand, int requests) {
    this.work += work;
    this.demandWork += demand;
    this.requests += requests;
  }

  long peerWork() {
    return peers.work();
  }

  int peerRequests() {
    return peers.requests();
  }

  void setPeers(long work, int requests) {
    this.peers = work == 0 && requests == 0 ? NONE : new Load(work, requests);
  }

  long idleWork() {
    return idle.work();
  }

  int idleRequests() {
    return idle.requests();
  }

  void setIdle(long work, int requests) {
    this.idle = work == 0 && requests == 0 ? NONE : new Load(work, requests);
  }

  TenantFairQueue<QueueCoordinator.Entry> queue() {
    return queue;
  }

  void setQueue(TenantFairQueue<QueueCoordinator.Entry> queue) {
    this.queue = queue;
  }

  long queuedDemandWork() {
    return queuedDemandWork;
  }

  void addQueuedDemand(long demand) {
    queuedDemandWork += demand;
  }

  long refusedWork() {
    return refusedWork;
  }

  int refusedRequests() {
    return refusedRequests;
  }

  void refused(long demand) {
    refusedWork += demand;
    refusedRequests++;
  }

  void clearRefused() {
    refusedWork = 0;
    refusedRequests = 0;
  }

  LogQuantile overrun() {
    return overrun;
  }

  LogQuantile endToEnd() {
    return endToEnd;
  }
}
