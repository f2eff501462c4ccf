package io.sluice.extproc;

import io.sluice.core.time.Ticker;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Clock;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Runs one stream's events one at a time, in the order they were submitted, on whichever thread
 * submits them (never blocks, never hands work to another thread) — the contract of gRPC's {@code
 * SynchronizationContext}, with a fast path: when nothing is running or waiting, the task runs at
 * once without being queued. Almost every event of an ext_proc stream (its messages, half-close,
 * cancel) arrives that way on its transport thread; only waiter callbacks from other streams or the
 * timer can overlap and queue. A task submitted while another runs (from that task itself or from
 * another thread) runs after it, on the thread that is draining.
 */
final class SerialExecutor implements java.util.concurrent.Executor {
  private static final VarHandle PENDING;
  private static final VarHandle QUEUE;

  static {
    try {
      MethodHandles.Lookup l = MethodHandles.lookup();
      PENDING = l.findVarHandle(SerialExecutor.class, "pending", int.class);
      QUEUE = l.findVarHandle(SerialExecutor.class, "queue", Queue.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  @SuppressWarnings("unused") // through PENDING
  private volatile int pending; // running + queued tasks

  // Created by the first task that has to wait: most streams never need one.
  private volatile @Nullable Queue<Runnable> queue;
  private final Consumer<Throwable> onFailure;
  // while a Step runs at once on the thread that submitted it: the time it was handed (stepNanosOr)
  private boolean inStep;
  private long stepNanos;
  // the wall clock's read of the Step running now, taken by the first that asks (stepMillisOr)
  private boolean stepWallRead;
  private long stepMillis;

  SerialExecutor(Consumer<Throwable> onFailure) {
    this.onFailure = onFailure;
  }

  @Override
  public void execute(Runnable task) {
    // Idle: run now, then whatever arrived meanwhile. "Idle" needs the queue empty too: a drainer
    // can run a task that was added but not yet counted in place of a counted one and stop at 0
    // with that one still queued; running past it would break the submitter's order.
    if (enter()) {
      run(task);
      leave();
      return;
    }
    queue().add(task);
    if ((int) PENDING.getAndAdd(this, 1) == 0) { // the runner finished between our CAS and add
      drain();
    }
  }

  /**
   * A task of an owner's with an argument and a time: a non-capturing method reference ({@code
   * Owner::method}) is one shared instance, so {@link #execute(Step, Object, Object, long)} runs it
   * without allocating anything when the executor is idle.
   */
  @FunctionalInterface
  interface Step<O, A> {
    void run(O owner, A arg, long nanos);
  }

  /** As {@code execute(() -> step.run(owner, arg, nanos))}, with no Runnable made when idle. */
  <O, A> void execute(Step<O, A> step, O owner, A arg, long nanos) {
    if (enter()) {
      stepNanos = nanos;
      stepWallRead = false;
      inStep = true;
      try {
        step.run(owner, arg, nanos);
      } catch (Throwable t) {
        onFailure.accept(t);
      } finally {
        inStep = false;
      }
      leave();
      return;
    }
    execute(() -> step.run(owner, arg, nanos));
  }

  /**
   * The time the {@link Step} running now was handed, when it runs at once on the thread that read
   * it (one event: what the step does, it does at that instant), else a read of {@code ticker} (a
   * step that waited, any other task). Only from a task of this executor (the fields are the
   * running task's: the executor's hand-over orders them).
   */
  long stepNanosOr(Ticker ticker) {
    return inStep ? stepNanos : ticker.nanos();
  }

  /**
   * The wall clock at the {@link Step} running now, read once by whatever asks first in it (the
   * request's arrival, its admit's epoch deadline: microseconds apart in one event), else a read of
   * {@code clock} (a step that waited, any other task: a later event reads its own). Only from a
   * task of this executor, as {@link #stepNanosOr}.
   */
  long stepMillisOr(Clock clock) {
    if (!inStep) {
      return clock.millis();
    }
    if (!stepWallRead) {
      stepMillis = clock.millis();
      stepWallRead = true;
    }
    return stepMillis;
  }

  /** As {@code execute(() -> step.accept(owner))}, with no Runnable made when idle. */
  <O> void execute(Consumer<O> step, O owner) {
    if (enter()) {
      try {
        step.accept(owner);
      } catch (Throwable t) {
        onFailure.accept(t);
      }
      leave();
      return;
    }
    execute(() -> step.accept(owner));
  }

  /** Idle (nothing running, nothing queued): claimed for one task, run at once by the caller. */
  private boolean enter() {
    Queue<Runnable> q = queue;
    return (q == null || q.isEmpty()) && PENDING.compareAndSet(this, 0, 1);
  }

  /** The task {@link #enter} let in has run: then whatever was submitted meanwhile runs. */
  private void leave() {
    if ((int) PENDING.getAndAdd(this, -1) - 1 != 0) {
      drain();
    }
  }

  private Queue<Runnable> queue() {
    Queue<Runnable> q = queue;
    if (q == null) {
      Queue<Runnable> created = new ConcurrentLinkedQueue<>();
      q = (Queue<Runnable>) QUEUE.compareAndExchange(this, null, created);
      if (q == null) {
        q = created;
      }
    }
    return q;
  }

  /** Runs queued tasks until none is left; only one thread is ever here. */
  private void drain() {
    Queue<Runnable> q = queue(); // a counted task beyond the running one was queued: q exists
    do {
      Runnable next = q.poll(); // never null: a queued task is added before it is counted
      run(next);
    } while ((int) PENDING.getAndAdd(this, -1) - 1 != 0);
  }

  private void run(Runnable task) {
    try {
      if (task == null) {
        throw new IllegalStateException("a counted task was not queued");
      }
      task.run();
    } catch (Throwable t) {
      onFailure.accept(t);
    }
  }
}
