package io.sluice.core.queue;

import java.util.Objects;

/** Result of {@link TenantFairQueue#offer}: a value, never an exception. */
public sealed interface Offer {

  /** Why an offer was refused. */
  enum Reason {
    /** Item or work bound of the queue reached: answer 503 {@code queue_full}. */
    QUEUE_FULL,
    /**
     * The tenant would own more than its share of the waiting room: 429 {@code tenant_concurrency}.
     */
    TENANT_SHARE,
    /**
     * The item's expiry is not after {@code now}: it cannot start in time. Callers normally catch
     * this earlier with {@link WaitPredictor#feasible}; answer 503 {@code deadline_unreachable}.
     */
    EXPIRED
  }

  /**
   * The item waits.
   *
   * @param position estimated number of items served before it (0 = next)
   * @param queuedWorkAhead estimated work units served before it
   */
  record Accepted(int position, long queuedWorkAhead) implements Offer {}

  /** The item was not queued; the queue is unchanged. */
  record Rejected(Reason reason) implements Offer {
    public Rejected {
      Objects.requireNonNull(reason, "reason");
    }
  }
}
