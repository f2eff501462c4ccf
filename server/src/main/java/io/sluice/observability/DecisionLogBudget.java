package io.sluice.observability;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * How many decision records may be written per second, per kind (admitted, refused), over the whole
 * process: a fixed one-second window on the injected clock. Outlives config reloads (the bootstrap
 * keeps one), so the dropped counts it keeps are monotonic.
 *
 * <p>A take is the hot path of every sampled request once the second's records are written: an
 * unbounded kind ({@code max} 0) reads no clock; a bounded one reads it once and compares it with
 * the window's first and last nanosecond (no division but at the second's first take), and once the
 * second's count is spent reads that count instead of adding to it, and counts the drop on a {@link
 * LongAdder} (threads that drop at once do not contend on one word).
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
    if (max <= 0) {
      return true; // unbounded: no clock to read
    }
    return (rejected ? refused : admitted).take(max, nanos.getAsLong());
  }

  /**
   * As {@link #take(boolean, int)} at {@code nowNanos}, a time of this budget's clock the caller
   * has just read (a release's): no read of its own.
   */
  boolean take(boolean rejected, int max, long nowNanos) {
    return max <= 0 || (rejected ? refused : admitted).take(max, nowNanos);
  }

  /** Records not written because their kind's per-second bound was reached. */
  public long dropped(boolean rejected) {
    return (rejected ? refused : admitted).dropped.sum();
  }

  private static final class Window {
    private volatile @Nullable Second current; // null: no record asked for yet
    private final LongAdder dropped = new LongAdder();

    boolean take(int max, long now) {
      Second s = current;
      if (s == null || !s.holds(now)) {
        s = roll(s, now);
      }
      AtomicLong used = s.used;
      if (used.get() < max && used.incrementAndGet() <= max) {
        return true;
      }
      dropped.increment();
      return false;
    }

    /** The window of {@code now}'s second, in place of {@code seen} (unless another took it). */
    private synchronized Second roll(@Nullable Second seen, long now) {
      Second s = current;
      if (s != seen && s != null && s.holds(now)) {
        return s; // another thread rolled to this second first
      }
      s = Second.of(now);
      current = s;
      return s;
    }
  }

  /**
   * One second of the clock, {@code floorDiv(now, 1 s)}, as its first and last nanosecond (clamped
   * to the clock's range: no wrap at its ends), and the records taken in it.
   */
  private static final class Second {
    final long first;
    final long last;
    final AtomicLong used = new AtomicLong();

    private Second(long first, long last) {
      this.first = first;
      this.last = last;
    }

    /** The second {@code now} is in. */
    static Second of(long now) {
      long into = Math.floorMod(now, SECOND);
      long first = now - into;
      long last = now + (SECOND - 1 - into);
      return new Second(
          first > now ? Long.MIN_VALUE : first, // it began before the clock's range
          last < now ? Long.MAX_VALUE : last); // it ends after it
    }

    /** Whether {@code now} is in this second: two comparisons, no division. */
    boolean holds(long now) {
      return now >= first && now <= last;
    }
  }
}
