package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A pool's {@link LimitSource}s in registration order: composed, from the configured numbers, into
 * the {@link PoolLimits} the ledger enforces, and applied to the ledger and the waiting rooms where
 * they changed. Not thread-safe: guarded by the pool lock.
 */
final class LimitSources {
  private final ConfiguredLimit configured;
  private final List<LimitSource> sources; // the configured limit first
  private PoolLimits.@Nullable Share applied; // the share the ledger holds now

  LimitSources(ConfiguredLimit configured, List<LimitSource> sources) {
    this.configured = configured;
    this.sources = List.copyOf(sources);
  }

  /** Has {@code listener} told of every source's changes. */
  void notifyOnChange(LimitSource.Listener listener) {
    for (LimitSource s : sources) {
      s.notifyOnChange(listener);
    }
  }

  /** Every source in turn, from the configured numbers. */
  PoolLimits compose() {
    PoolLimits limits = new PoolLimits(configured.policy(), null);
    for (LimitSource s : sources) {
      limits = s.applyTo(limits);
    }
    return limits;
  }

  /** What every source in turn expects the pool to have again, and when (null: nothing). */
  PoolLimits.@Nullable Resume resume(long nowNanos) {
    PoolLimits.Resume r = null;
    for (LimitSource s : sources) {
      r = s.resume(r, nowNanos);
    }
    return r;
  }

  /**
   * A hot reload to {@code next}: every source hears of it, then the composed limits go into {@code
   * capacity} for the new {@code classes} and into the waiting rooms of {@code queues} (a queue
   * holding requests keeps its bounds until it is empty).
   */
  void reload(
      PoolPolicy next,
      CapacityLedger capacity,
      QueueCoordinator queues,
      List<ClassPolicy> classes) {
    for (LimitSource s : sources) {
      s.reconfigure(next);
    }
    PoolPolicy effective = compose().policy();
    List<ClassSlot> slots = capacity.reconfigure(effective, classes);
    queues.reconfigure(slots, effective);
  }

  /**
   * The composed limits into {@code capacity} (its policy, for the pool's active {@code classes},
   * and this replica's share) and the waiting rooms of {@code queues}, where they changed.
   */
  void apply(CapacityLedger capacity, QueueCoordinator queues, List<ClassPolicy> classes) {
    PoolLimits next = compose();
    boolean changed = false;
    if (!next.policy().equals(capacity.policy())) {
      List<ClassSlot> slots = capacity.reconfigure(next.policy(), classes);
      queues.reconfigure(slots, next.policy());
      changed = true;
    }
    PoolLimits.Share s = next.share();
    if (s != null && s != applied) {
      capacity.applyShare(s.work(), s.requests(), s.classes());
      applied = s;
      changed = true;
    }
    if (changed) {
      queues.reboundToShare();
    }
  }
}
