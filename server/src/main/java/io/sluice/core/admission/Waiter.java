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

  /**
   * The request as it would start now, when the scheduler considers it ({@code queued}: as it was
   * queued). It may ask for less than it queued with (its output reserve re-estimated with what was
   * learned while it waited): the pool then fits and charges the smaller request, and the permit
   * carries its work and output tokens. Never more: a larger or different request is ignored.
   * Called under the pool's lock, possibly more than once per start: cheap, thread-safe, no call
   * back into the pool. The default: as queued.
   */
  default AdmissionRequest atStart(AdmissionRequest queued) {
    return queued;
  }
}
