package io.sluice.core.admission;

import java.util.ArrayList;
import java.util.List;

/**
 * The waiter answers a pool collects under its lock and runs once it is released (a waiter may call
 * back into the pool). The list is reused, so an admit or release that answers nobody (the pool is
 * not saturated) allocates nothing. Guarded by the pool lock, but for {@link #run}.
 */
final class WaiterAnswers {
  private static final QueueCoordinator.Callback[] NONE = {};
  private final ArrayList<QueueCoordinator.Callback> pending = new ArrayList<>();

  /** Where a section under the lock puts its answers. */
  List<QueueCoordinator.Callback> pending() {
    return pending;
  }

  /** Under the lock, just before it is released: the answers collected, emptying the list. */
  QueueCoordinator.Callback[] take() {
    if (pending.isEmpty()) {
      return NONE;
    }
    QueueCoordinator.Callback[] out = pending.toArray(NONE);
    pending.clear();
    return out;
  }

  /** In the section's {@code finally}: empty unless it threw; then its answers are dropped. */
  void clear() {
    pending.clear();
  }

  /** Outside the lock: answers the waiters. */
  static void run(QueueCoordinator.Callback[] callbacks) {
    for (QueueCoordinator.Callback c : callbacks) {
      c.run();
    }
  }
}
