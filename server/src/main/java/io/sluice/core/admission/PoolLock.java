package io.sluice.core.admission;

import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A pool's lock and the waiter answers collected while it is held ({@link WaiterAnswers}), run once
 * it is released, never under it (a waiter may call back into the pool). {@link PoolState}'s hot
 * paths (decide, release) spell the sequence out with {@link #lock}, {@link #pending}, {@link
 * #take} and {@link #unlock}; every other section goes through {@link #answering} or a read.
 */
final class PoolLock {
  private final ReentrantLock mutex = new ReentrantLock();
  private final WaiterAnswers answers = new WaiterAnswers(); // guarded by mutex, but run

  /** The lock itself (a part that takes it on its own: the adaptive limit source). */
  ReentrantLock mutex() {
    return mutex;
  }

  void lock() {
    mutex.lock();
  }

  /** Under the lock: where a section puts its waiter answers. */
  List<QueueCoordinator.Callback> pending() {
    return answers.pending();
  }

  /** Under the lock, at the end of a section that did not throw: its answers, to run after. */
  QueueCoordinator.Callback[] take() {
    return answers.take();
  }

  /** In the section's {@code finally}: drops the answers of a section that threw, unlocks. */
  void unlock() {
    answers.clear();
    mutex.unlock();
  }

  /**
   * Runs {@code section} under the lock with the list its waiter answers go to; answers them once
   * the lock is released.
   */
  <T> T answering(Function<List<QueueCoordinator.Callback>, T> section) {
    QueueCoordinator.Callback[] callbacks;
    T out;
    lock();
    try {
      out = section.apply(pending());
      callbacks = take();
    } finally {
      unlock();
    }
    WaiterAnswers.run(callbacks);
    return out;
  }

  /** A reading under the lock. */
  <T> T read(Supplier<T> reading) {
    mutex.lock();
    try {
      return reading.get();
    } finally {
      mutex.unlock();
    }
  }

  /** A number read under the lock. */
  long readLong(LongSupplier reading) {
    mutex.lock();
    try {
      return reading.getAsLong();
    } finally {
      mutex.unlock();
    }
  }
}
