package io.sluice.emulator;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.Executors;
import java.util.concurrent.FutureTask;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A {@link ScheduledExecutorService} on a virtual clock: nothing runs until the test calls {@link
 * #advance} (or {@link #runDue}), which runs the due tasks in time order (ties in the order they
 * were scheduled) on the calling thread. Timer behaviour is then checked in exact virtual time,
 * never against the wall clock. Thread-safe: tasks may be scheduled from any thread.
 */
public final class VirtualScheduler extends AbstractExecutorService
    implements ScheduledExecutorService {
  private final PriorityQueue<Task<?>> queue = new PriorityQueue<>();
  private long now;
  private long seq;
  private boolean shutdown;

  /** The virtual time in nanoseconds (starts at 0). */
  public synchronized long nanoTime() {
    return now;
  }

  /** Tasks scheduled and not yet run or cancelled. */
  public synchronized int pending() {
    return queue.size();
  }

  /** Moves the clock forward by {@code d}, running every task that falls due on the way. */
  public void advance(Duration d) {
    long target;
    synchronized (this) {
      target = now + d.toNanos();
    }
    while (true) {
      Task<?> t;
      synchronized (this) {
        t = queue.peek();
        if (t == null || t.at > target) {
          now = target;
          return;
        }
        queue.poll();
        now = Math.max(now, t.at);
      }
      t.run(); // outside the lock: a task may schedule more (at or after now)
    }
  }

  /** Runs the tasks due now (e.g. those handed to {@link #execute}). */
  public void runDue() {
    advance(Duration.ZERO);
  }

  @Override
  public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
    return add(Executors.callable(command, null), unit.toNanos(delay));
  }

  @Override
  public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
    return add(callable, unit.toNanos(delay));
  }

  private synchronized <V> Task<V> add(Callable<V> c, long delayNanos) {
    if (shutdown) {
      throw new java.util.concurrent.RejectedExecutionException("shut down");
    }
    Task<V> t = new Task<>(c, now + Math.max(0, delayNanos), seq++);
    queue.add(t);
    return t;
  }

  @Override
  public void execute(Runnable command) {
    schedule(command, 0, TimeUnit.NANOSECONDS);
  }

  @Override
  public ScheduledFuture<?> scheduleAtFixedRate(
      Runnable command, long initialDelay, long period, TimeUnit unit) {
    throw new UnsupportedOperationException("not needed by the emulator or the upstream");
  }

  @Override
  public ScheduledFuture<?> scheduleWithFixedDelay(
      Runnable command, long initialDelay, long delay, TimeUnit unit) {
    throw new UnsupportedOperationException("not needed by the emulator or the upstream");
  }

  @Override
  public synchronized void shutdown() {
    shutdown = true;
  }

  @Override
  public synchronized List<Runnable> shutdownNow() {
    shutdown = true;
    List<Runnable> left = new ArrayList<>(queue);
    queue.clear();
    return left;
  }

  @Override
  public synchronized boolean isShutdown() {
    return shutdown;
  }

  @Override
  public synchronized boolean isTerminated() {
    return shutdown;
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) {
    return isTerminated();
  }

  private final class Task<V> extends FutureTask<V> implements ScheduledFuture<V> {
    final long at;
    final long order;

    Task(Callable<V> c, long at, long order) {
      super(c);
      this.at = at;
      this.order = order;
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(at - nanoTime(), TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed o) {
      Task<?> t = (Task<?>) o;
      int c = Long.compare(at, t.at);
      return c != 0 ? c : Long.compare(order, t.order);
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      boolean cancelled = super.cancel(mayInterruptIfRunning);
      synchronized (VirtualScheduler.this) {
        queue.remove(this);
      }
      return cancelled;
    }
  }
}
