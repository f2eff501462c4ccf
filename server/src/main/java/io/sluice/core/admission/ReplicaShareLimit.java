package io.sluice.core.admission;

import io.sluice.core.share.ClassShares;
import io.sluice.core.share.SharedPool;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * The limit source of a replica's share of the pool (several replicas share it through a store):
 * the share coordinator's last grant ({@link PoolState#applyShare}). Before the first: the whole
 * pool for a pool that no store shares, a share of nothing for one held for a share ({@link #hold}:
 * a pool shared across replicas never admits on the whole pool before its first grant).
 */
final class ReplicaShareLimit implements LimitSource {
  private static final PoolLimits.Share NOTHING = new PoolLimits.Share(0, 0, null);
  private final AtomicReference<PoolLimits.@Nullable Share> granted = new AtomicReference<>();
  private Listener listener = nowNanos -> {};
  // the self-fence of the last grant: from its instant on, unless granted again first, the pool
  // admits on its store-down share (written under "this", with granted; volatile: read without it
  // first, so that a decision or a release takes no monitor while no fence is due)
  private volatile SharedPool.@Nullable Fence fence;

  @Override
  public void notifyOnChange(Listener listener) {
    this.listener = listener;
  }

  /** The coordinator granted this share at {@code nowNanos}: the pool applies it at once. */
  void grant(long work, int requests, @Nullable ClassShares classes, long nowNanos) {
    grant(work, requests, classes, null, nowNanos);
  }

  /** The same, with the grant's fence ({@link SharedPool.Fence}; null for none). */
  void grant(
      long work,
      int requests,
      @Nullable ClassShares classes,
      SharedPool.@Nullable Fence fence,
      long nowNanos) {
    synchronized (this) {
      this.fence = fence;
      granted.set(new PoolLimits.Share(work, requests, classes));
    }
    listener.changed(nowNanos);
  }

  /**
   * Under the pool lock, before anything may start: whether the fence passed at {@code nowNanos}
   * and its share replaced the grant (the caller then applies the limits). Once. Every decision and
   * every release asks: without a fence, or before its instant, it answers without a monitor.
   */
  boolean fenced(long nowNanos) {
    SharedPool.Fence seen = fence;
    if (seen == null || nowNanos - seen.atNanos() < 0) {
      return false; // as if asked just before a grant that races with it
    }
    synchronized (this) {
      SharedPool.Fence f = fence; // again: a grant may have replaced it meanwhile
      if (f == null || nowNanos - f.atNanos() < 0) {
        return false;
      }
      fence = null;
      granted.set(new PoolLimits.Share(f.work(), f.requests(), null));
      return true;
    }
  }

  /**
   * A share of nothing until the first grant; false when a share was already granted or held (the
   * caller applies the limits when it is true).
   */
  boolean hold() {
    return granted.compareAndSet(null, NOTHING);
  }

  /** What the pool gets back, within this replica's share. */
  @Override
  public PoolLimits.@Nullable Resume resume(PoolLimits.@Nullable Resume before, long nowNanos) {
    PoolLimits.Share s = granted.get();
    return before == null || s == null ? before : before.within(s);
  }

  @Override
  public PoolLimits applyTo(PoolLimits limits) {
    PoolLimits.Share s = granted.get();
    return s == null ? limits : limits.withShare(s);
  }
}
