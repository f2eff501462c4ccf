package io.sluice.core.admission;

import io.sluice.core.share.ClassShares;
import org.jspecify.annotations.Nullable;

/**
 * The limit source of a replica's share of the pool (several replicas share it through a store):
 * the share coordinator's last grant ({@link PoolState#applyShare}); none before the first.
 */
final class ReplicaShareLimit implements LimitSource {
  private volatile PoolLimits.@Nullable Share granted;
  private Listener listener = nowNanos -> {};

  @Override
  public void notifyOnChange(Listener listener) {
    this.listener = listener;
  }

  /** The coordinator granted this share at {@code nowNanos}: the pool applies it at once. */
  void grant(long work, int requests, @Nullable ClassShares classes, long nowNanos) {
    granted = new PoolLimits.Share(work, requests, classes);
    listener.changed(nowNanos);
  }

  @Override
  public PoolLimits applyTo(PoolLimits limits) {
    PoolLimits.Share s = granted;
    return s == null ? limits : limits.withShare(s);
  }
}
