package io.sluice.core.policy;

import java.time.Duration;
import java.util.Objects;

/**
 * A priority class such as {@code interactive}, {@code agent} or {@code batch}.
 *
 * <p>Shares are fractions of each pool's capacity. {@code reservedShare} is what the class may use
 * without borrowing; of it, {@code reservedShare - lendableShare} is <em>guaranteed</em>: other
 * classes can never occupy it, so the class gets it the moment it asks. The lendable part may be
 * borrowed by others while idle and comes back as their work completes.
 *
 * @param rank 0 = highest priority
 * @param borrow whether the class may use idle capacity beyond its reserved share
 * @param shedStatus HTTP status used when this class is shed for pool saturation (503 or 429)
 * @param queueWorkShare work that may wait in this class's queue, as a fraction of the pool's
 *     capacity
 * @param maxQueueItems requests that may wait in this class's queue
 * @param tenantQueueShare fraction of the queue's work one tenant may own
 * @param reserveQuantile the quantile of actual output the learned output reserve uses for this
 *     class (docs/estimation.md, "Learned output reserve")
 * @param degrade the class's degrade ladder ({@link DegradePolicy#OFF}: never degraded)
 */
public record ClassPolicy(
    String name,
    int rank,
    double reservedShare,
    double lendableShare,
    boolean borrow,
    Duration deadline,
    Duration maxQueueWait,
    long defaultOutputTokens,
    long maxOutputTokens,
    int shedStatus,
    double queueWorkShare,
    int maxQueueItems,
    double tenantQueueShare,
    double reserveQuantile,
    DegradePolicy degrade) {

  /** The learned reserve's quantile when the config sets none. */
  public static final double DEFAULT_RESERVE_QUANTILE = 0.95;

  public ClassPolicy {
    Objects.requireNonNull(name, "name");
    String p = "classes." + name + ".";
    if (rank < 0) {
      throw new IllegalArgumentException(p + "rank: " + rank + " (expected: >= 0)");
    }
    if (!(reservedShare >= 0 && reservedShare <= 1)) {
      throw new IllegalArgumentException(
          p + "reservedShare: " + reservedShare + " (expected: 0.0 .. 1.0)");
    }
    if (!(lendableShare >= 0 && lendableShare <= reservedShare)) {
      throw new IllegalArgumentException(
          p + "lendableShare: " + lendableShare + " (expected: 0.0 .. reservedShare)");
    }
    if (deadline.isNegative() || deadline.isZero()) {
      throw new IllegalArgumentException(p + "deadline: " + deadline + " (expected: > 0)");
    }
    if (maxQueueWait.isNegative()) {
      throw new IllegalArgumentException(p + "maxQueueWait: " + maxQueueWait + " (expected: >= 0)");
    }
    if (defaultOutputTokens < 0 || maxOutputTokens < defaultOutputTokens) {
      throw new IllegalArgumentException(
          p
              + "defaultOutputTokens/maxOutputTokens: "
              + defaultOutputTokens
              + "/"
              + maxOutputTokens
              + " (expected: 0 <= default <= max)");
    }
    if (shedStatus != 429 && shedStatus != 503) {
      throw new IllegalArgumentException(
          p + "shedStatus: " + shedStatus + " (expected: 429 or 503)");
    }
    if (!(reserveQuantile >= 0.5 && reserveQuantile <= 0.999)) {
      throw new IllegalArgumentException(
          p + "reserveQuantile: " + reserveQuantile + " (expected: 0.5 .. 0.999)");
    }
    Objects.requireNonNull(degrade, "degrade");
  }

  /** A class without a degrade ladder. */
  public ClassPolicy(
      String name,
      int rank,
      double reservedShare,
      double lendableShare,
      boolean borrow,
      Duration deadline,
      Duration maxQueueWait,
      long defaultOutputTokens,
      long maxOutputTokens,
      int shedStatus,
      double queueWorkShare,
      int maxQueueItems,
      double tenantQueueShare,
      double reserveQuantile) {
    this(
        name,
        rank,
        reservedShare,
        lendableShare,
        borrow,
        deadline,
        maxQueueWait,
        defaultOutputTokens,
        maxOutputTokens,
        shedStatus,
        queueWorkShare,
        maxQueueItems,
        tenantQueueShare,
        reserveQuantile,
        DegradePolicy.OFF);
  }

  /** This class with {@code ladder} as its degrade ladder. */
  public ClassPolicy withDegrade(DegradePolicy ladder) {
    return new ClassPolicy(
        name,
        rank,
        reservedShare,
        lendableShare,
        borrow,
        deadline,
        maxQueueWait,
        defaultOutputTokens,
        maxOutputTokens,
        shedStatus,
        queueWorkShare,
        maxQueueItems,
        tenantQueueShare,
        reserveQuantile,
        ladder);
  }

  /**
   * A class whose learned reserve uses the default quantile ({@value #DEFAULT_RESERVE_QUANTILE}).
   */
  public ClassPolicy(
      String name,
      int rank,
      double reservedShare,
      double lendableShare,
      boolean borrow,
      Duration deadline,
      Duration maxQueueWait,
      long defaultOutputTokens,
      long maxOutputTokens,
      int shedStatus,
      double queueWorkShare,
      int maxQueueItems,
      double tenantQueueShare) {
    this(
        name,
        rank,
        reservedShare,
        lendableShare,
        borrow,
        deadline,
        maxQueueWait,
        defaultOutputTokens,
        maxOutputTokens,
        shedStatus,
        queueWorkShare,
        maxQueueItems,
        tenantQueueShare,
        DEFAULT_RESERVE_QUANTILE);
  }

  /** A class with default queue bounds (two pools' worth of work, 1000 items, half per tenant). */
  public static ClassPolicy of(
      String name,
      int rank,
      double reservedShare,
      double lendableShare,
      boolean borrow,
      Duration deadline,
      Duration maxQueueWait,
      long defaultOutputTokens,
      long maxOutputTokens,
      int shedStatus) {
    return new ClassPolicy(
        name,
        rank,
        reservedShare,
        lendableShare,
        borrow,
        deadline,
        maxQueueWait,
        defaultOutputTokens,
        maxOutputTokens,
        shedStatus,
        2.0,
        1000,
        0.5);
  }

  public double guaranteedShare() {
    return reservedShare - lendableShare;
  }
}
