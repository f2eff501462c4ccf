package io.sluice.core.intake;

/**
 * The predicted start window of a waiting job (epoch milliseconds). The earliest start assumes the
 * whole of what the pool can run ({@link #canRun}: its capacity over its service time, the mean
 * hold it learned from completions, else its declared {@code defaultServiceTime}; bounded by its
 * request slots when it caps them) drains the work ahead of the job, after what waits in Sluice's
 * own queues (a job is dispatched only when nothing waits). The latest assumes background work gets
 * only the part of that rate {@link #drainShare} says: what the job queue was <em>measured</em> to
 * drain lately, pool-wide ({@link QueueDrain}, the store's answers), times {@link #DRAIN_MARGIN};
 * before there is such evidence, the part of the pool the other classes leave idle now, by work and
 * by request slots (none while a request waits in Sluice's queue); never less than {@link
 * #MIN_IDLE}; plus one dispatch interval. Neither is later than the job's expiry. Without a pool,
 * the window is [now, expiry]: honest, not precise.
 *
 * <p>Before, the latest start assumed the pool's idle part <em>now</em> (one less the other
 * classes' work in flight over the limit): at a fresh start, while the other classes' traffic ramps
 * up or their requests wait in Sluice's queue, that instant promised the configured rate from the
 * first second, and the first jobs started after their window. The rate before that was the pool's
 * recent <em>completion</em> rate (what it ran, not what it can run), which promised windows too
 * early.
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
   * The smallest part of the pool's rate a latest start assumes background work gets: a pool held
   * wholly by other classes now still frees room as their requests end. An assumption: a pool the
   * other classes hold entirely for longer than a window breaks that window.
   */
  static final double MIN_IDLE = 0.1;

  /**
   * What the pool can run, in work units per second (the whole pool): its capacity over {@code
   * serviceNanos} (learned: the mean hold of its completed requests; declared: its {@code
   * defaultServiceTime}); when it caps request slots ({@code maxRequests} &gt; 0), at most that
   * many jobs of {@code jobWork} at a time. 0 when unknown.
   */
  public static double canRun(
      long capacityWorkUnits, int maxRequests, long jobWork, double serviceNanos) {
    if (!(serviceNanos > 0) || capacityWorkUnits <= 0) {
      return 0;
    }
    double concurrent =
        maxRequests > 0 && jobWork > 0
            ? Math.min(capacityWorkUnits, (double) maxRequests * jobWork)
            : capacityWorkUnits;
    return concurrent * 1e9 / serviceNanos;
  }

  /**
   * The part of the pool left idle by the classes intake does not take in, by work alone: 1 less
   * their work in flight over the work limit it counts against, in {@code [MIN_IDLE, 1]}; {@code
   * MIN_IDLE} when the limit is unknown (no share granted yet). The same of request slots when the
   * pool caps them ({@code othersInFlightWork}: their requests, {@code workLimit}: the slots).
   */
  public static double idleShare(long othersInFlightWork, long workLimit) {
    if (workLimit <= 0) {
      return MIN_IDLE;
    }
    return Math.max(MIN_IDLE, Math.min(1.0, 1.0 - (double) othersInFlightWork / workLimit));
  }

  /**
   * How much of the measured drain the latest start counts on: the queue may drain slower than it
   * did over the last {@link QueueDrain#LOOKBACK_MILLIS}.
   */
  static final double DRAIN_MARGIN = 0.5;

  /**
   * The part of what the pool can run ({@code canRunWorkPerSecond}) the latest start assumes
   * background work gets ({@link #predict}'s {@code idle}, which floors it at {@link #MIN_IDLE}):
   * with evidence, the rate its queue was measured to drain ({@code measuredWorkPerSecond}, the
   * store's, pool-wide) times {@link #DRAIN_MARGIN} (0, the floor, while jobs have waited for less
   * than {@link QueueDrain#MIN_SPAN_MILLIS}: no drain shown yet); without ({@code NaN}: the store
   * never saw jobs waiting in the last {@link QueueDrain#LOOKBACK_MILLIS}), the room the pool gives
   * it now ({@code roomNow}: 0 while a request waits in Sluice's queue, else the smaller {@link
   * #idleShare} of work and of request slots).
   */
  public static double drainShare(
      double measuredWorkPerSecond, double canRunWorkPerSecond, double roomNow) {
    if (Double.isNaN(measuredWorkPerSecond) || !(canRunWorkPerSecond > 0)) {
      return roomNow;
    }
    return measuredWorkPerSecond * DRAIN_MARGIN / canRunWorkPerSecond;
  }

  /**
   * The window from what the pool can run ({@link #canRun}, 0 or less: unknown, [now, expiry]).
   *
   * @param aheadWork work units of the jobs waiting ahead of the job (the whole pool's)
   * @param othersQueuedWork work waiting in Sluice's queues of the classes intake does not take in
   *     (the whole pool's): it starts before any job
   * @param queuedWork work waiting in all of Sluice's queues (the whole pool's): a job is
   *     dispatched only once none waits
   * @param ownWork the job's own work units
   * @param idle the part of the pool's rate background work gets ({@link #drainShare}), at least
   *     {@link #MIN_IDLE}
   */
  public static StartWindow predict(
      long nowMillis,
      long expiresMillis,
      long aheadWork,
      long othersQueuedWork,
      long queuedWork,
      long ownWork,
      double canRunWorkPerSecond,
      double idle,
      long intervalMillis) {
    long cap = Math.max(nowMillis, expiresMillis);
    if (!(canRunWorkPerSecond > 0)) {
      return new StartWindow(nowMillis, cap);
    }
    long earliest =
        nowMillis + (long) ((aheadWork + othersQueuedWork) * 1000.0 / canRunWorkPerSecond);
    double drains = canRunWorkPerSecond * Math.max(MIN_IDLE, Math.min(1.0, idle));
    long latest =
        nowMillis
            + (long)
                ((aheadWork + Math.max(queuedWork, othersQueuedWork) + ownWork) * 1000.0 / drains)
            + intervalMillis;
    return new StartWindow(Math.min(earliest, cap), Math.min(Math.max(earliest, latest), cap));
  }

  /**
   * The window from a rate alone, with no measure of the pool's idle part or its queues: the latest
   * start assumes half of the rate ({@link #predict} with {@link #LATEST_SHARE}).
   *
   * @param aheadWork work units waiting ahead of the job
   * @param ownWork the job's own work units
   * @param workPerSecond the pool's rate (0 or less: unknown)
   * @param intervalMillis how often a replica looks for room to dispatch
   */
  public static StartWindow of(
      long nowMillis,
      long expiresMillis,
      long aheadWork,
      long ownWork,
      double workPerSecond,
      long intervalMillis) {
    return predict(
        nowMillis,
        expiresMillis,
        aheadWork,
        0,
        0,
        ownWork,
        workPerSecond,
        LATEST_SHARE,
        intervalMillis);
  }
}
