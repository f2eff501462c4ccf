package io.sluice.core.share;

/**
 * A pool's share just back from a store outage: the other replicas' leases may have expired
 * meanwhile, and the work they hold (admitted on their fallback share, or still draining) reaches
 * the store only with their next renewal. Until they have had the time to renew, the grant stays
 * within the share of the outage, so that the first replica back does not take the whole pool on
 * top of work the store cannot see yet. Not thread-safe: guarded by its pool share's monitor.
 */
final class Probation {
  private boolean on;
  private long untilNanos;
  private long work;
  private int requests;

  /** Starts (or restarts) a probation until {@code untilNanos}, within the outage share. */
  void start(long untilNanos, long work, int requests) {
    this.on = true;
    this.untilNanos = untilNanos;
    this.work = work;
    this.requests = requests;
  }

  /** Whether the probation still holds at {@code nowNanos}; once over, it stays over. */
  boolean holds(long nowNanos) {
    on = on && nowNanos - untilNanos < 0;
    return on;
  }

  /** The most work units a grant gives during the probation. */
  long work() {
    return work;
  }

  /** The most request slots a grant gives during the probation. */
  int requests() {
    return requests;
  }
}
