package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.queue.QueueBounds;
import org.jspecify.annotations.Nullable;

/**
 * How large a class's waiting room is: the class's queue settings over the pool, or over this
 * replica's share of it (a replica holding a third of the pool has a third of each class's waiting
 * room, so across the replicas the rooms, and each tenant's part of them, add up to the pool's).
 * Pure functions of the policy.
 */
final class WaitingRooms {
  private WaitingRooms() {}

  /** The waiting room of class {@code c} in pool {@code p} (the whole pool's). */
  static QueueBounds bounds(ClassPolicy c, PoolPolicy p) {
    return bounds(c, p, p.capacityWorkUnits());
  }

  /**
   * The waiting room of class {@code c} in pool {@code p} on a replica holding {@code share} of its
   * work units: {@code queue.workShare × share} work units and {@code maxItems × share / capacity}
   * items (rounded up, at least 1); the whole room when {@code share} is the pool.
   */
  static QueueBounds bounds(ClassPolicy c, PoolPolicy p, long share) {
    long pool = Math.max(1, p.capacityWorkUnits());
    long room = Math.max(0, Math.min(share, pool));
    long maxWork = Math.max(1, (long) Math.floor(c.queueWorkShare() * (double) room));
    int maxItems =
        room >= pool
            ? c.maxQueueItems()
            : (int) Math.max(1, Math.ceil(c.maxQueueItems() * (double) room / pool));
    long maxWait = Math.max(1, c.maxQueueWait().toNanos());
    return new QueueBounds(maxWork, maxItems, maxWait, c.tenantQueueShare());
  }

  /**
   * The waiting room of class {@code c} while a source holds the pool below what it will give back
   * by itself ({@code resume}: an announced outage probing at the floor; null: nothing pending):
   * its work room sized on the larger of the limit now ({@code share}) and the one given back, so
   * requests that the limit coming back serves within their deadline are not refused {@code
   * queue_full} for the floor's room (their wait is predicted on that limit too, {@link
   * PoolLimits.Resume#waitNanos}). Items and the tenant's part as {@link #bounds(ClassPolicy,
   * PoolPolicy, long)}.
   */
  static QueueBounds bounds(
      ClassPolicy c, PoolPolicy p, long share, PoolLimits.@Nullable Resume resume) {
    QueueBounds now = bounds(c, p, share);
    if (resume == null || resume.work() <= Math.min(share, p.capacityWorkUnits())) {
      return now;
    }
    long back = (long) Math.floor(c.queueWorkShare() * (double) resume.work());
    return back <= now.maxQueuedWork()
        ? now
        : new QueueBounds(back, now.maxItems(), now.maxWaitNanos(), now.maxTenantShare());
  }

  /**
   * The requests that may wait for pool {@code p}, all its classes together, on a replica holding
   * {@code share} of its work units: {@code queueDepth × share / capacity} (rounded up, at least
   * 1); 0 when the pool sets no depth (the classes' rooms alone bound it).
   */
  static int poolDepth(PoolPolicy p, long share) {
    if (p.queueDepth() <= 0) {
      return 0;
    }
    long pool = Math.max(1, p.capacityWorkUnits());
    long room = Math.max(0, Math.min(share, pool));
    return room >= pool
        ? p.queueDepth()
        : (int) Math.max(1, Math.ceil(p.queueDepth() * (double) room / pool));
  }
}
