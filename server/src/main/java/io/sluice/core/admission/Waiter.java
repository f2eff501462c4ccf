package io.sluice.core.admission;

/**
 * The callback of a queued request. Called exactly once, from whichever thread frees capacity or
 * fires the expiry timer, never with a pool lock held. Implementations must be thread-safe and must
 * release the permit at once if their stream is already gone.
 */
public interface Waiter {
  /** The request may start now; the permit is held for it. */
  void admitted(Permit permit, long waitedNanos);

  /** The request waited in vain (queue timeout, shutdown); answer it with this rejection. */
  void refused(Decision.Reject rejection, long waitedNanos);
}
