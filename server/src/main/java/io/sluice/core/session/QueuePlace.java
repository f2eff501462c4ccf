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

  /** How long the front end holds the deciding message: the pool's hold, within [1, max] ms. */
  long holdMillis(long maxHoldNanos) {
    long maxHold = maxHoldNanos / 1_000_000L;
    return Math.max(1, Math.min(maxHold, (ticket.holdNanos() + 999_999L) / 1_000_000L));
  }

  /** Arms the expiry timer: the pool expires its due requests just after this one's hold. */
  void armExpiry(Sessions env) {
    long delay = ticket.expiresAtNanos() - env.ticker().nanos() + 1_000_000L;
    String pool = ticket.pool();
    expiry =
        env.timer().schedule(delay, () -> env.controller().expireDue(pool, env.ticker().nanos()));
  }

  /** The pool admitted or refused it after {@code waitedNanos}: the expiry timer is called off. */
  void left(long waitedNanos) {
    cancelTimer();
    waitNanos = waitedNanos;
  }

  /** The request ended while queued: it leaves the pool's queue ({@link SessionEvent.Dequeued}). */
  void leave(Sessions env, Subject subject) {
    long now = env.ticker().nanos();
    if (env.controller().cancel(ticket.pool(), ticket.ticket(), now)) {
      env.listener().on(new SessionEvent.Dequeued(subject, "cancelled", now - receivedNanos));
    }
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
