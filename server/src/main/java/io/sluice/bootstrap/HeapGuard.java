package io.sluice.bootstrap;

import io.sluice.core.time.Ticker;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.time.Duration;
import java.util.List;
import java.util.function.DoubleSupplier;

/**
 * Fails health while the heap stays nearly full after garbage collection: a JVM in a GC death
 * spiral (every collection frees almost nothing, the mutator barely runs) still answers a cheap
 * probe for minutes before it throws OutOfMemoryError, and meanwhile answers ext_proc streams too
 * late. Reading: for each heap pool that supports collection usage thresholds ({@link
 * MemoryPoolMXBean#isCollectionUsageThresholdSupported()}: the old generation, survivor spaces),
 * the memory still used after its last collection, divided by the pool's maximum; the largest ratio
 * counts. The threshold is also set on those pools, so {@code getCollectionUsageThresholdCount}
 * (JMX) counts the collections that ended above it.
 *
 * <p>Exhausted: the ratio has been at or above {@code maxRatio} at every check for {@code window}.
 * One check below clears it.
 *
 * <p>Concurrency: {@link #check()} runs on the housekeeping thread; readers see volatile fields.
 */
final class HeapGuard {
  private final double maxRatio;
  private final long windowNanos;
  private final Ticker ticker;
  private final DoubleSupplier usedAfterGcRatio;
  private volatile double lastRatio;
  private volatile boolean exhausted;
  private long aboveSinceNanos = -1;

  HeapGuard(double maxRatio, Duration window, Ticker ticker, DoubleSupplier usedAfterGcRatio) {
    this.maxRatio = maxRatio;
    this.windowNanos = window.toNanos();
    this.ticker = ticker;
    this.usedAfterGcRatio = usedAfterGcRatio;
  }

  /** A guard on this JVM's heap pools (sets their collection usage thresholds). */
  static HeapGuard forThisJvm(double maxRatio, Duration window, Ticker ticker) {
    List<MemoryPoolMXBean> pools =
        ManagementFactory.getMemoryPoolMXBeans().stream()
            .filter(p -> p.getType() == MemoryType.HEAP)
            .filter(MemoryPoolMXBean::isCollectionUsageThresholdSupported)
            .toList();
    if (maxRatio > 0) {
      for (MemoryPoolMXBean p : pools) {
        long max = p.getUsage().getMax();
        if (max > 0) {
          try {
            p.setCollectionUsageThreshold((long) (max * maxRatio));
          } catch (RuntimeException ignored) {
            // unsupported or not permitted: the ratio below is still read
          }
        }
      }
    }
    return new HeapGuard(maxRatio, window, ticker, () -> usedAfterGcRatio(pools));
  }

  /** Largest (used after last collection / max) over {@code pools}; 0 when none is known. */
  static double usedAfterGcRatio(List<MemoryPoolMXBean> pools) {
    double worst = 0;
    for (MemoryPoolMXBean p : pools) {
      MemoryUsage after = p.getCollectionUsage();
      long max = p.getUsage().getMax();
      if (after != null && max > 0) {
        worst = Math.max(worst, (double) after.getUsed() / max);
      }
    }
    return worst;
  }

  /** Samples the heap; returns whether it is exhausted now. */
  boolean check() {
    if (maxRatio <= 0) {
      return false;
    }
    double r = usedAfterGcRatio.getAsDouble();
    lastRatio = r;
    long now = ticker.nanos();
    if (r >= maxRatio) {
      if (aboveSinceNanos < 0) {
        aboveSinceNanos = now;
      }
      exhausted = now - aboveSinceNanos >= windowNanos;
    } else {
      aboveSinceNanos = -1;
      exhausted = false;
    }
    return exhausted;
  }

  boolean exhausted() {
    return exhausted;
  }

  double lastRatio() {
    return lastRatio;
  }

  double maxRatio() {
    return maxRatio;
  }

  Duration window() {
    return Duration.ofNanos(windowNanos);
  }
}
