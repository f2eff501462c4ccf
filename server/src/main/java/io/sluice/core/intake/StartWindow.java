package io.sluice.core.intake;

/**
 * The predicted start window of a waiting job (epoch milliseconds), from the work waiting ahead of
 * it and its pool's recent completion rate (work units per second): the earliest start assumes the
 * whole rate drains the backlog, the latest that half of it does (background work only borrows idle
 * capacity), plus one dispatch interval; neither is later than the job's expiry. The rate is {@link
 * #rate}: measured since the replica started, or a starting rate before any completion; without
 * either the window is [now, expiry]: honest, not precise.
 *
 * @param earliestMillis the earliest the job may start
 * @param latestMillis the latest it is predicted to start (its expiry at most)
 */
public record StartWindow(long earliestMillis, long latestMillis) {
  /** How much slower than the pool's whole rate the latest start assumes. */
  static final double LATEST_SHARE = 0.5;

  /**
   * The pool's completion rate from this replica's: the jobs ahead are the whole pool's (the store
   * is shared), and every replica's completions drain them, while this replica completes about its
   * share of the pool ({@code share}, its granted fraction; 1 alone). Without a share yet (0), the
   * replica's own rate.
   */
  public static double poolRate(double replicaWorkPerSecond, double share) {
    return share > 0 && share < 1 ? replicaWorkPerSecond / share : replicaWorkPerSecond;
  }

  /**
   * The pool's rate a window is predicted with: this replica's rate since it started ({@link
   * io.sluice.core.admission.PoolState#startedWorkPerSecond}, corrected for a young replica) over
   * its share ({@link #poolRate}); before this replica has seen any completion, the starting rate
   * {@code prior} (the pool's configured capacity over its {@code defaultServiceTime}: the rate of
   * a full pool's worth of work completing), so that a fresh replica's first windows are predicted
   * rather than {@code [now, expiry]}.
   */
  public static double rate(double startedReplicaWorkPerSecond, double share, double prior) {
    return startedReplicaWorkPerSecond > 0
        ? poolRate(startedReplicaWorkPerSecond, share)
        : Math.max(0, prior);
  }

  /** The starting rate of a pool: {@code capacity} work units per {@code serviceNanos}. */
  public static double prior(long capacityWorkUnits, long serviceNanos) {
    return serviceNanos > 0 ? capacityWorkUnits * 1e9 / serviceNanos : 0;
  }

  /**
   * @param aheadWork work units waiting ahead of the job
   * @param ownWork the job's own work units
   * @param workPerSecond the pool's recent completion rate (0 or less: unknown)
   * @param intervalMillis how often a replica looks for room to dispatch
   */
  public static StartWindow of(
      long nowMillis,
      long expiresMillis,
      long aheadWork,
      long ownWork,
      double workPerSecond,
      long intervalMillis) {
    if (!(workPerSecond > 0)) {
      return new StartWindow(nowMillis, Math.max(nowMillis, expiresMillis));
    }
    long earliest = nowMillis + (long) (aheadWork * 1000.0 / workPerSecond);
    long latest =
        nowMillis
            + (long) ((aheadWork + ownWork) * 1000.0 / (workPerSecond * LATEST_SHARE))
            + intervalMillis;
    long cap = Math.max(nowMillis, expiresMillis);
    return new StartWindow(Math.min(earliest, cap), Math.min(latest, cap));
  }
}
