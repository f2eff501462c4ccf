package io.sluice.core.queue;

/**
 * Bounds of one (pool, class) queue.
 *
 * @param maxQueuedWork total work units that may wait; an item that would exceed it is rejected
 *     with {@link Offer.Reason#QUEUE_FULL}
 * @param maxItems number of items that may wait ({@link Offer.Reason#QUEUE_FULL})
 * @param maxWaitNanos maximum age of an item; caps every item's expiry at {@code enqueuedAt +
 *     maxWait}
 * @param maxTenantShare fraction (0, 1] of {@code maxQueuedWork} one tenant may own; beyond it
 *     {@link Offer.Reason#TENANT_SHARE}
 */
public record QueueBounds(
    long maxQueuedWork, int maxItems, long maxWaitNanos, double maxTenantShare) {

  public QueueBounds {
    if (maxQueuedWork <= 0) {
      throw new IllegalArgumentException("maxQueuedWork: " + maxQueuedWork + " (expected: > 0)");
    }
    if (maxItems <= 0) {
      throw new IllegalArgumentException("maxItems: " + maxItems + " (expected: > 0)");
    }
    if (maxWaitNanos <= 0) {
      throw new IllegalArgumentException("maxWaitNanos: " + maxWaitNanos + " (expected: > 0)");
    }
    if (!(maxTenantShare > 0 && maxTenantShare <= 1)) {
      throw new IllegalArgumentException(
          "maxTenantShare: " + maxTenantShare + " (expected: > 0 and <= 1)");
    }
  }

  /** Work units one tenant may have queued: {@code floor(maxTenantShare * maxQueuedWork)}. */
  public long maxTenantWork() {
    return Math.max(1, (long) Math.floor(maxTenantShare * (double) maxQueuedWork));
  }
}
