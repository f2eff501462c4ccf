package io.sluice.core.queue;

import java.util.Objects;

/**
 * One waiting request: a small immutable record plus the caller's callback handle. It holds no body
 * and no thread.
 *
 * <p>All times are {@link io.sluice.core.time.Ticker} nanos and are compared by subtraction. {@code
 * expiresAtNanos} is the latest instant at which the item may still be started; compute it with
 * {@link #expiryNanos(long, long, long, long)}. The queue also caps it at {@code enqueuedAtNanos +
 * QueueBounds.maxWaitNanos}. An item is expired once {@code now - expiresAtNanos >= 0}.
 *
 * @param id caller-unique id (for {@link TenantFairQueue#remove(long)})
 * @param tenant tenant key
 * @param weight tenant fair-share weight, finite and {@code > 0}
 * @param workUnits estimated work, {@code > 0}
 * @param enqueuedAtNanos arrival time; never refreshed
 * @param expiresAtNanos latest start time (min of max wait and deadline minus expected service)
 * @param deadlineNanos the request's deadline, used for earliest-deadline-first within a tenant
 * @param payload the caller's handle (for example the stream's callback); may be null
 */
public record QueuedItem<T>(
    long id,
    String tenant,
    double weight,
    long workUnits,
    long enqueuedAtNanos,
    long expiresAtNanos,
    long deadlineNanos,
    T payload) {

  public QueuedItem {
    Objects.requireNonNull(tenant, "tenant");
    if (!(weight > 0) || Double.isInfinite(weight)) {
      throw new IllegalArgumentException("weight: " + weight + " (expected: finite and > 0)");
    }
    if (workUnits <= 0) {
      throw new IllegalArgumentException("workUnits: " + workUnits + " (expected: > 0)");
    }
  }

  /**
   * The latest start time of a request: {@code enqueuedAt + min(maxWait, deadline - enqueuedAt -
   * expectedService)}. May lie before {@code enqueuedAtNanos} when the deadline is already
   * unreachable; such an item is rejected by {@link TenantFairQueue#offer}.
   */
  public static long expiryNanos(
      long enqueuedAtNanos, long maxWaitNanos, long deadlineNanos, long expectedServiceNanos) {
    long startBudget =
        Saturating.sub(Saturating.sub(deadlineNanos, enqueuedAtNanos), expectedServiceNanos);
    return enqueuedAtNanos + Math.min(Math.max(0, maxWaitNanos), startBudget);
  }
}
