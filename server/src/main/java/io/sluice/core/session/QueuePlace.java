package io.sluice.core.session;

import io.sluice.core.admission.Decision;
import org.jspecify.annotations.Nullable;

/**
 * A request's place in its pool's queue ({@link AdmissionSession.Phase#QUEUED}): the pool's ticket,
 * when the deciding message arrived, the expiry timer (called off once the request leaves the
 * queue, however it leaves), and how long it waited.
 */
final class QueuePlace {
  final Decision.Queued ticket;
  final long receivedNanos; // when the message that queued it arrived
  private HoldTimer.@Nullable Handle expiry;
  private long waitNanos;

  QueuePlace(Decision.Queued ticket, long receivedNanos) {
    this.ticket = ticket;
    this.receivedNanos = receivedNanos;
  }

  /** Its position in the queue when it entered, from 1. */
  int position() {
    return ticket.position() + 1;
  }

  void expiry(HoldTimer.Handle h) {
    expiry = h;
  }

  /** The pool admitted or refused it after {@code waitedNanos}: the expiry timer is called off. */
  void left(long waitedNanos) {
    cancelTimer();
    waitNanos = waitedNanos;
  }

  void cancelTimer() {
    HoldTimer.Handle h = expiry;
    if (h != null) {
      expiry = null;
      h.cancel();
    }
  }

  /** How long it waited (0 until it left the queue, or when it left it by its end). */
  long waitNanos() {
    return waitNanos;
  }
}
