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
  private volatile Map<String, PoolState> pools = Map.of();
  private volatile List<ClassPolicy> classes = List.of();

  public AdmissionController(
      Collection<PoolPolicy> pools,
      Collection<ClassPolicy> classes,
      Duration rateWindow,
      PoolState.ReleaseListener listener) {
    this(pools, classes, rateWindow, listener, Math::random);
  }

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
      PoolState existing = pools.get(p.name());
      if (existing != null) {
        existing.reconfigure(p, sorted);
        next.put(p.name(), existing);
      } else {
        next.put(p.name(), new PoolState(p, sorted, rateTauNanos, listener, uniform));
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

  /**
   * A degrade rung's start: admit now or refuse, never queued, and a refusal is not counted as the
   * pool's unmet demand (the request it stands for is decided again and counted then).
   */
  public Decision tryRung(AdmissionRequest request, long nowNanos) {
    PoolState pool = pools.get(request.pool().name());
    if (pool == null) {
      return new Decision.Reject(
          Reason.UNKNOWN_ROUTE, 404, 0, "pool " + request.pool().name() + " is not configured");
    }
    return pool.tryRung(request, nowNanos);
  }

  /**
   * Admit now, queue, or refuse (PRODUCT.md rules 2–4). A {@link Decision.Queued} result means
   * {@code waiter} will be called exactly once.
   *
   * @param maxHoldNanos how long the adapter can hold this request (0 = never queue)
   */
  public Decision decide(
      AdmissionRequest request, long maxHoldNanos, Waiter waiter, long nowNanos) {
    PoolState pool = pools.get(request.pool().name());
    if (pool == null) {
      return new Decision.Reject(
          Reason.UNKNOWN_ROUTE, 404, 0, "pool " + request.pool().name() + " is not configured");
    }
    return pool.decide(request, maxHoldNanos, waiter, nowNanos);
  }

  /**
   * As {@link #decide(AdmissionRequest, long, Waiter, long)}, with a degrade ladder's wait trigger:
   * a request that cannot start now and whose expected wait (predicted, or the age of its class's
   * oldest waiting request when that is longer) exceeds {@code degradeWaitNanos} (or that would be
   * refused for want of capacity) is answered {@link Decision.Degradable}, nothing queued. {@code
   * degradeWaitNanos <= 0}: no trigger.
   */
  public Decision decide(
      AdmissionRequest request,
      long maxHoldNanos,
      Waiter waiter,
      long nowNanos,
      long degradeWaitNanos) {
    PoolState pool = pools.get(request.pool().name());
    if (pool == null) {
      return new Decision.Reject(
          Reason.UNKNOWN_ROUTE, 404, 0, "pool " + request.pool().name() + " is not configured");
    }
    return pool.decide(request, maxHoldNanos, waiter, nowNanos, degradeWaitNanos);
  }

  /**
   * The decision {@link #decide} would make, for a request in shadow mode (observe only): an admit
   * takes its permit as usual; a refusal is returned as such; where {@link #decide} would queue,
   * {@link Decision.WouldQueue} is returned and nothing is queued (the queue checks run against the
   * queue as it is, without the offer).
   */
  public Decision decideShadow(AdmissionRequest request, long maxHoldNanos, long nowNanos) {
    PoolState pool = pools.get(request.pool().name());
    if (pool == null) {
      return new Decision.Reject(
          Reason.UNKNOWN_ROUTE, 404, 0, "pool " + request.pool().name() + " is not configured");
    }
    return pool.decideShadow(request, maxHoldNanos, nowNanos);
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
    for (PoolState p : pools.values()) {
      n += p.refuseAllQueued(Reason.SHUTTING_DOWN, nowNanos);
    }
    return n;
  }

  /** The configured pools' names. */
  public java.util.Set<String> poolNames() {
    return pools.keySet();
  }

  public Collection<PoolState> pools() {
    return pools.values();
  }

  public @Nullable PoolState pool(String name) {
    return pools.get(name);
  }

  public List<ClassPolicy> classes() {
    return classes;
  }
}
