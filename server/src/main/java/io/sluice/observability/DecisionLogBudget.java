package io.sluice.observability;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * How many decision records may be written per second, per kind (admitted, refused), over the whole
 * process: a fixed one-second window on the injected clock. Outlives config reloads (the bootstrap
 * keeps one), so the dropped counts it keeps are monotonic.
 *
 * <p>Concurrency: lock-free; a window roll may let a handful of extra lines through, never fewer.
 */
public final class DecisionLogBudget {
  private static final long SECOND = 1_000_000_000L;

  private final LongSupplier nanos;
  private final Window admitted = new Window();
  private final Window refused = new Window();

  public DecisionLogBudget(LongSupplier nanos) {
    this.nanos = nanos;
  }

  /** Whether one more record of this kind fits this second's {@code max} (0 = unbounded). */
  boolean take(boolean rejected, int max) {
    return (rejected ? refused : admitted).take(max, nanos.getAsLong());
  }

  /** Records not written because their kind's per-second bound was reached. */
  public long dropped(boolean rejected) {
    return (rejected ? refused : admitted).dropped.get();
  }

  private static final class Window {
    private final AtomicLong second = new AtomicLong(Long.MIN_VALUE);
    private final AtomicLong used = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();

    boolean take(int max, long now) {
      if (max <= 0) {
        return true;
      }
      long s = Math.floorDiv(now, SECOND);
      long cur = second.get();
      if (cur != s && second.compareAndSet(cur, s)) {
        used.set(0);
      }
      if (used.incrementAndGet() <= max) {
        return true;
      }
      dropped.incrementAndGet();
      return false;
    }
  }
}
