package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import java.time.Duration;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Decides admit-or-reject against token-weighted work in flight per pool (PRODUCT.md rule 2).
 * Thread-safe; each pool has its own small lock. Time is passed in, never read here.
 *
 * <p>{@link #reconfigure} applies a new policy without losing in-flight permits: pools and classes
 * are matched by name; a removed pool stays reachable for releases until it drains.
 */
public final class AdmissionController {
  private final long rateTauNanos;
  private final PoolState.ReleaseListener listener;
  private volatile Map<String, PoolState> pools = Map.of();
  private volatile List<ClassPolicy> classes = List.of();

  public AdmissionController(
      Collection<PoolPolicy> pools,
      Collection<ClassPolicy> classes,
      Duration rateWindow,
      PoolState.ReleaseListener listener) {
    this.listener = Objects.requireNonNull(listener, "listener");
    this.rateTauNanos = rateWindow.toNanos();
    reconfigure(pools, classes);
  }

  /** Swaps in a new policy; permits in flight keep counting against their pool and class. */
  public synchronized void reconfigure(
      Collection<PoolPolicy> newPools, Collection<ClassPolicy> newClasses) {
    List<ClassPolicy> sorted =
        newClasses.stream().sorted(Comparator.comparingInt(ClassPolicy::rank)).toList();
    Map<String, PoolState> next = new LinkedHashMap<>();
    for (PoolPolicy p : newPools) {
      PoolState existing = pools.get(p.name());
      if (existing != null) {
        existing.reconfigure(p, sorted);
        next.put(p.name(), existing);
      } else {
        next.put(p.name(), new PoolState(p, sorted, rateTauNanos, listener));
      }
    }
    this.classes = sorted;
    this.pools = java.util.Collections.unmodifiableMap(next);
  }

  public Decision tryAdmit(AdmissionRequest request, long nowNanos) {
    PoolState pool = pools.get(request.pool().name());
    if (pool == null) {
      return new Decision.Reject(
          Reason.UNKNOWN_ROUTE, 404, 0, "pool " + request.pool().name() + " is not configured");
    }
    return pool.tryAdmit(request, nowNanos);
  }

  public Collection<PoolState> pools() {
    return pools.values();
  }

  public PoolState pool(String name) {
    return pools.get(name);
  }

  public List<ClassPolicy> classes() {
    return classes;
  }
}
