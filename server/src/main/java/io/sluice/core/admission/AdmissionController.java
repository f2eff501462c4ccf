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
import org.jspecify.annotations.Nullable;

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
  private final java.util.function.DoubleSupplier uniform;
  private volatile Pools pools = new Pools(Map.of());
  private volatile List<ClassPolicy> classes = List.of();
  // the pools count against replica shares: a pool starts at a share of nothing (holdForShares)
  private volatile boolean heldForShares;

  /**
   * @param uniform source of uniform values in [0, 1) for Retry-After jitter (tests pass a constant
   *     0.5 for no jitter)
   */
  public AdmissionController(
      Collection<PoolPolicy> pools,
      Collection<ClassPolicy> classes,
      Duration rateWindow,
      PoolState.ReleaseListener listener,
      java.util.function.DoubleSupplier uniform) {
    this.listener = Objects.requireNonNull(listener, "listener");
    this.uniform = Objects.requireNonNull(uniform, "uniform");
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
      PoolState existing = pools.byName.get(p.name());
      if (existing != null) {
        existing.reconfigure(p, sorted);
        next.put(p.name(), existing);
      } else {
        next.put(
            p.name(), new PoolState(p, sorted, rateTauNanos, listener, uniform, heldForShares));
      }
    }
    this.classes = sorted;
    this.pools = new Pools(java.util.Collections.unmodifiableMap(next));
  }

  /**
   * The pools are shared with other replicas through a store (the bootstrap's replica shares): from
   * now on every pool, and every pool a reload adds, admits on a share of nothing until the share
   * coordinator grants it one, never on the whole pool. A pool already granted a share keeps it.
   */
  public synchronized void holdForShares(long nowNanos) {
    heldForShares = true;
    for (PoolState p : pools.byName.values()) {
      p.holdForShare(nowNanos);
    }
  }

  /**
   * Admit now, queue, or refuse, as {@code ask} allows (PRODUCT.md rules 2–4): the one decision
   * entry ({@link Ask.Mode}). A {@link Decision.Queued} result means the ask's waiter will be
   * called exactly once.
   */
  public Decision decide(AdmissionRequest request, Ask ask) {
    PoolState pool = pools.get(request.pool().name());
    if (pool == null) {
      return new Decision.Reject(
          Reason.UNKNOWN_ROUTE,
          404,
          0,
          "pool " + request.pool().name() + " is not configured",
          Decision.Reject.UNPREDICTED);
    }
    return pool.decide(request, ask);
  }

  /** {@link PoolState#tenantRetryAfterSeconds()} of {@code pool} (1 when it is not configured). */
  public long tenantRetryAfterSeconds(String pool) {
    PoolState p = pools.get(pool);
    return p == null ? 1 : p.tenantRetryAfterSeconds();
  }

  /** The stream of a queued request went away: drop it at once. True if it was still queued. */
  public boolean cancel(String pool, long ticket, long nowNanos) {
    PoolState p = pools.get(pool);
    return p != null && p.cancel(ticket, nowNanos);
  }

  /** Expiry timer: answer due items with queue_timeout and start what fits. */
  public void expireDue(String pool, long nowNanos) {
    PoolState p = pools.get(pool);
    if (p != null) {
      p.expireDue(nowNanos);
    }
  }

  /** Shutdown: answer every queued request 503 with Retry-After. Returns how many. */
  public int refuseAllQueued(long nowNanos) {
    int n = 0;
    for (PoolState p : pools.byName.values()) {
      n += p.refuseAllQueued(Reason.SHUTTING_DOWN, nowNanos);
    }
    return n;
  }

  /** The configured pools' names. */
  public java.util.Set<String> poolNames() {
    return pools.byName.keySet();
  }

  public Collection<PoolState> pools() {
    return pools.byName.values();
  }

  public @Nullable PoolState pool(String name) {
    return pools.get(name);
  }

  public List<ClassPolicy> classes() {
    return classes;
  }

  /**
   * The pools of one configuration by name. A request names its pool with the very string its
   * policy's pool was configured with (one config snapshot): the few first pools are found by that
   * string's identity, without hashing it; any other name (an older snapshot's string, a pool past
   * the first few) by the map, which answers the same.
   */
  private static final class Pools {
    private static final int BY_IDENTITY = 4;

    final Map<String, PoolState> byName;
    private final String[] names;
    private final PoolState[] states;

    Pools(Map<String, PoolState> byName) {
      this.byName = byName;
      int n = Math.min(BY_IDENTITY, byName.size());
      this.names = new String[n];
      this.states = new PoolState[n];
      int i = 0;
      for (Map.Entry<String, PoolState> e : byName.entrySet()) {
        if (i == n) {
          break;
        }
        names[i] = e.getKey();
        states[i++] = e.getValue();
      }
    }

    @SuppressWarnings("StringEquality") // identity on purpose, then equality (the map)
    @Nullable PoolState get(String name) {
      String[] n = names;
      for (int i = 0; i < n.length; i++) {
        if (n[i] == name) { // identity first: the same snapshot's string (equal strings below)
          return states[i];
        }
      }
      return byName.get(name);
    }
  }
}
