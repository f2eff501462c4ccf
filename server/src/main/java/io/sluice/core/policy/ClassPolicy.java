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

  /** Class {@code name} with every setting at its default (the loader's, for absent keys). */
  public static ClassPolicy defaults(String name) {
    return builder(name).build();
  }

  /** A builder starting from {@link #defaults}. */
  public static Builder builder(String name) {
    return new Builder(name);
  }

  public double guaranteedShare() {
    return reservedShare - lendableShare;
  }

  /** Builds a {@link ClassPolicy}; each setting starts at its default, shown beside it. */
  public static final class Builder {
    private final String name;
    private int rank = 0;
    private double reservedShare = 0.0;
    private double lendableShare = 0.0;
    private boolean borrow = true;
    private Duration deadline = Duration.ofSeconds(60);
    private Duration maxQueueWait = Duration.ZERO;
    private long defaultOutputTokens = 1024;
    private long maxOutputTokens = 8192;
    private int shedStatus = 503;
    private double queueWorkShare = 2.0;
    private int maxQueueItems = 1000;
    private double tenantQueueShare = 0.5;
    private double reserveQuantile = DEFAULT_RESERVE_QUANTILE;
    private DegradePolicy degrade = DegradePolicy.OFF;

    private Builder(String name) {
      this.name = name;
    }

    public Builder rank(int v) {
      rank = v;
      return this;
    }

    /** The reserved share and, of it, the part others may borrow while idle. */
    public Builder shares(double reserved, double lendable) {
      reservedShare = reserved;
      lendableShare = lendable;
      return this;
    }

    public Builder borrow(boolean v) {
      borrow = v;
      return this;
    }

    public Builder deadline(Duration v) {
      deadline = v;
      return this;
    }

    public Builder maxQueueWait(Duration v) {
      maxQueueWait = v;
      return this;
    }

    /** The output reserve when the body sets no cap, and the largest reserve. */
    public Builder outputTokens(long defaultTokens, long maxTokens) {
      defaultOutputTokens = defaultTokens;
      maxOutputTokens = maxTokens;
      return this;
    }

    public Builder shedStatus(int v) {
      shedStatus = v;
      return this;
    }

    /** The queue's bounds: work share of the pool, items, one tenant's share of the work. */
    public Builder queue(double workShare, int maxItems, double tenantShare) {
      queueWorkShare = workShare;
      maxQueueItems = maxItems;
      tenantQueueShare = tenantShare;
      return this;
    }

    public Builder reserveQuantile(double v) {
      reserveQuantile = v;
      return this;
    }

    public Builder degrade(DegradePolicy v) {
      degrade = v;
      return this;
    }

    public ClassPolicy build() {
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
          degrade);
    }
  }
}
