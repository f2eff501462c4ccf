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
 */
public final class AdmissionController {
  private final Map<String, PoolState> pools;
  private final List<ClassPolicy> classes;
  private final Map<String, Integer> classIndex;

  public AdmissionController(
      Collection<PoolPolicy> pools,
      Collection<ClassPolicy> classes,
      Duration rateWindow,
      PoolState.ReleaseListener listener) {
    Objects.requireNonNull(listener, "listener");
    this.classes = classes.stream().sorted(Comparator.comparingInt(ClassPolicy::rank)).toList();
    this.classIndex = new LinkedHashMap<>();
    for (int i = 0; i < this.classes.size(); i++) {
      classIndex.put(this.classes.get(i).name(), i);
    }
    this.pools = new LinkedHashMap<>();
    for (PoolPolicy p : pools) {
      this.pools.put(p.name(), new PoolState(p, this.classes, rateWindow.toNanos(), listener));
    }
  }

  public Decision tryAdmit(AdmissionRequest request, long nowNanos) {
    PoolState pool = pools.get(request.pool().name());
    Integer k = classIndex.get(request.requestClass().name());
    if (pool == null || k == null) {
      return new Decision.Reject(
          Reason.UNKNOWN_ROUTE, 404, 0, "no such pool or class in the current policy");
    }
    return pool.tryAdmit(request, k, nowNanos);
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
