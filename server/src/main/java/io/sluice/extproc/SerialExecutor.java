package io.sluice.extproc;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Runs one stream's events one at a time, in the order they were submitted, on whichever thread
 * submits them (never blocks, never hands work to another thread) — the contract of gRPC's {@code
 * SynchronizationContext}, with a fast path: when nothing is running or waiting, the task runs at
 * once without being queued. Almost every event of an ext_proc stream (its messages, half-close,
 * cancel) arrives that way on its transport thread; only waiter callbacks from other streams or the
 * timer can overlap and queue. A task submitted while another runs (from that task itself or from
 * another thread) runs after it, on the thread that is draining.
 */
final class SerialExecutor {
  private final AtomicInteger pending = new AtomicInteger(); // running + queued tasks
  private final Queue<Runnable> queue = new ConcurrentLinkedQueue<>();
  private final Consumer<Throwable> onFailure;

  SerialExecutor(Consumer<Throwable> onFailure) {
    this.onFailure = onFailure;
  }

  void execute(Runnable task) {
    // Idle: run now, then whatever arrived meanwhile. "Idle" needs the queue empty too: a drainer
    // can run a task that was added but not yet counted in place of a counted one and stop at 0
    // with that one still queued; running past it would break the submitter's order.
    if (queue.isEmpty() && pending.compareAndSet(0, 1)) {
      run(task);
      if (pending.decrementAndGet() != 0) {
        drain();
      }
      return;
    }
    queue.add(task);
    if (pending.getAndIncrement() == 0) { // the runner finished between our CAS and add
      drain();
    }
  }

  /** Runs queued tasks until none is left; only one thread is ever here. */
  private void drain() {
    do {
      Runnable next = queue.poll(); // never null: a queued task is added before it is counted
      run(next);
    } while (pending.decrementAndGet() != 0);
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
