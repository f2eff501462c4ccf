package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToLongFunction;

/**
 * What a pool shows of itself: consistent copies of its counters for the gauges and {@code
 * /debug/queues}, and the numbers the session reads (a class's headroom, this replica's share). Not
 * thread-safe: {@link PoolState} calls it under its lock.
 */
final class PoolReadings {
  private final CapacityLedger capacity;
  private final CapacityRules rules;
  private final RetryAdvice retry;

  PoolReadings(CapacityLedger capacity, CapacityRules rules, RetryAdvice retry) {
    this.capacity = capacity;
    this.rules = rules;
    this.retry = retry;
  }

  /** Active (non-retired) classes in rank order (lock-free: the slots are copy-on-write). */
  List<ClassPolicy> classes() {
    List<ClassPolicy> out = new ArrayList<>();
    for (ClassSlot s : capacity.slots()) {
      if (!s.retired()) {
        out.add(s.policy());
      }
    }
    return out;
  }

  /** See {@link PoolState#snapshot}. */
  PoolState.Snapshot snapshot(long nowNanos) {
    List<ClassSlot> active = new ArrayList<>();
    for (ClassSlot s : capacity.slots()) {
      if (!s.retired()) {
        active.add(s);
      }
    }
    long[] work = new long[active.size()];
    int[] reqs = new int[active.size()];
    String[] names = new String[active.size()];
    for (int i = 0; i < active.size(); i++) {
      work[i] = active.get(i).work();
      reqs[i] = active.get(i).requests();
      names[i] = active.get(i).name();
    }
    PoolPolicy policy = capacity.policy();
    return new PoolState.Snapshot(
        policy.name(),
        policy.capacityWorkUnits(),
        capacity.totalWork(),
        capacity.totalRequests(),
        names,
        work,
        reqs,
        capacity.tenantsInFlight(),
        retry.completedWorkPerSecond(nowNanos),
        retry.meanHoldNanos());
  }

  /** Queue state of every active class, in rank order. */
  List<PoolState.QueueSnapshot> queues(long nowNanos, int topTenants) {
    List<PoolState.QueueSnapshot> out = new ArrayList<>();
    for (ClassSlot s : capacity.slots()) {
      if (!s.retired()) {
        out.add(
            new PoolState.QueueSnapshot(
                s.name(),
                s.queue().depth(),
                s.queue().queuedWork(),
                s.queue().oldestAgeNanos(nowNanos),
                topTenants > 0 ? s.queue().topTenants(topTenants) : List.of()));
      }
    }
    return out;
  }

  /** One number of an active class slot; 0 if the class is unknown. */
  long slot(String className, ToLongFunction<ClassSlot> field) {
    ClassSlot s = capacity.slot(className);
    return s == null ? 0 : field.applyAsLong(s);
  }

  /** See {@link PoolState#replicaShare}. */
  double replicaShare() {
    if (!capacity.shared()) {
      return 1.0;
    }
    long whole = capacity.policy().capacityWorkUnits();
    return whole <= 0 ? 1.0 : Math.min(1.0, (double) capacity.workLimit() / whole);
  }

  /** See {@link PoolState#canStart}. */
  boolean canStart(String className, long work) {
    ClassSlot k = capacity.slot(className);
    return k != null && rules.checkCapacity(k, work) == null;
  }

  /** See {@link PoolState#classHeadroom}. */
  double classHeadroom(String className) {
    ClassSlot k = capacity.slot(className);
    return k == null ? 0 : rules.classHeadroom(k);
  }
}
