package io.sluice.bootstrap.replay;

import io.sluice.core.session.HoldTimer;
import io.sluice.core.time.Ticker;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayDeque;
import java.util.PriorityQueue;
import java.util.concurrent.Executor;

/**
 * A replay's clock: the ticker, wall clock, hold timer and serial context the admission core runs
 * on, all virtual. Time moves only when the replay sets it ({@link #advance}); a scheduled task
 * runs when the replay reaches its time ({@link #runDue}), never before; work handed to the serial
 * context runs when the replay drains it ({@link #drain}), one task at a time, as a front end's
 * serial executor runs it. Single-threaded.
 */
final class VirtualTime implements Ticker, HoldTimer {
  /** The ticker's first value: never 0 (the core reads 0 as "no permit time"). */
  static final long START = 1_000_000_000_000L;

  private final long epochMillisAtStart;
  private long now = START;
  private long seq;
  private final PriorityQueue<Task> tasks =
      new PriorityQueue<>(
          (a, b) -> a.at != b.at ? Long.compare(a.at, b.at) : Long.compare(a.seq, b.seq));
  private final ArrayDeque<Runnable> serial = new ArrayDeque<>();

  private static final class Task implements Handle {
    final long at;
    final long seq;
    final Runnable run;
    boolean cancelled;

    Task(long at, long seq, Runnable run) {
      this.at = at;
      this.seq = seq;
      this.run = run;
    }

    @Override
    public void cancel() {
      cancelled = true;
    }
  }

  VirtualTime(long epochMillisAtStart) {
    this.epochMillisAtStart = epochMillisAtStart;
  }

  @Override
  public long nanos() {
    return now;
  }

  /** Ticker time of an epoch millisecond. */
  long at(long epochMillis) {
    return START + (epochMillis - epochMillisAtStart) * 1_000_000L;
  }

  /** Ticker time of an epoch nanosecond. */
  long atNanos(long epochNanos) {
    return START + (epochNanos - epochMillisAtStart * 1_000_000L);
  }

  /** Epoch nanoseconds of a ticker time (the inverse of {@link #atNanos}). */
  long epochNanos(long tick) {
    return tick - START + epochMillisAtStart * 1_000_000L;
  }

  /** Moves time forward to {@code t} (never back). */
  void advance(long t) {
    now = Math.max(now, t);
  }

  @Override
  public Handle schedule(long delayNanos, Runnable task) {
    Task t = new Task(now + Math.max(0, delayNanos), seq++, task);
    tasks.add(t);
    return t;
  }

  /** When the next scheduled task is due ({@link Long#MAX_VALUE}: none). */
  long nextDue() {
    while (!tasks.isEmpty() && tasks.peek().cancelled) {
      tasks.poll();
    }
    Task t = tasks.peek();
    return t == null ? Long.MAX_VALUE : t.at;
  }

  /** Runs the tasks due now, then what they handed to the serial context. */
  void runDue() {
    while (nextDue() <= now) {
      tasks.poll().run.run();
      drain();
    }
  }

  /** Tasks scheduled and not run or cancelled (a bound the tests check). */
  int pending() {
    nextDue();
    return (int) tasks.stream().filter(t -> !t.cancelled).count();
  }

  /** The serial context: tasks run at {@link #drain}, in order. */
  Executor serial() {
    return serial::add;
  }

  void drain() {
    Runnable r;
    while ((r = serial.poll()) != null) {
      r.run();
    }
  }

  /** Wall-clock time on the virtual ticker (the tenant buckets, the records' arrival). */
  Clock clock() {
    return new Clock() {
      @Override
      public ZoneId getZone() {
        return ZoneOffset.UTC;
      }

      @Override
      public Clock withZone(ZoneId zone) {
        return this;
      }

      @Override
      public long millis() {
        return epochMillisAtStart + Math.floorDiv(now - START, 1_000_000L);
      }

      @Override
      public Instant instant() {
        return Instant.ofEpochMilli(millis());
      }
    };
  }
}
