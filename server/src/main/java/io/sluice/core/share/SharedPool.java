package io.sluice.core.share;

import io.sluice.core.policy.PoolPolicy;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A pool as the share coordinator sees it (the port it drives; the admission pool implements it):
 * what the replica holds and wants of the pool, the class parts the allocation divides, and where
 * its granted share goes. The share side depends only on this port, never on the pool's internals.
 */
public interface SharedPool {
  /** The policy in effect (the pool's own numbers: capacity and maxRequests). */
  PoolPolicy policy();

  /**
   * What this replica holds and wants of the pool now: in flight, waiting, and refused for want of
   * capacity since the last call (which this call resets), in total and by class, with the limits
   * it counts against. Demand counts each request's own work (at most what its class can hold in
   * the pool), not the work it is counted as on this replica's share: a request larger than the
   * share asks for more than the share.
   */
  Demand demand();

  /**
   * Work units and requests in flight on this replica now, as counted against the share (what it
   * holds; read after a lowered share applied, the most it can hold until the share grows).
   */
  Load inFlight();

  /** Every active class's {@link ClassLimits}, in rank order. */
  List<ClassLimits> classLimits();

  /**
   * Limits this replica to its granted share of the pool ({@code work} units, {@code requests}
   * slots); a larger share starts waiting requests at once, a smaller one admits nothing new until
   * in-flight work drains below it. Permits in flight are kept either way. With {@code classes}
   * (the other replicas' load by class, and the idle class guarantees placed on this replica) the
   * class reserves and guarantees hold for the pool as a whole; with null they are scaled to the
   * share. No fence: the share holds until the next one.
   */
  default void applyShare(long work, int requests, @Nullable ClassShares classes, long nowNanos) {
    applyShare(work, requests, classes, null, nowNanos);
  }

  /**
   * {@link #applyShare(long, int, ClassShares, long)} with its self-fence: from {@code
   * fence.atNanos()} on, unless a share is applied first, the pool admits on the fence's share (its
   * store-down share, class rules scaled to it). The pool checks it on its own clock whenever
   * something may start, so a replica whose renewals stall (a stuck thread, a GC pause) stops
   * admitting on a share the store may already have given to the others.
   */
  void applyShare(
      long work, int requests, @Nullable ClassShares classes, @Nullable Fence fence, long nowNanos);

  /**
   * A share's fence: from {@code atNanos} on, the pool admits on {@code work} and {@code requests}.
   */
  record Fence(long atNanos, long work, int requests) {}
}
