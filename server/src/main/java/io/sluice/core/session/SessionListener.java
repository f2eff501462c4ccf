package io.sluice.core.session;

import java.util.List;

/**
 * Receives every {@link SessionEvent} of every session, in step order per session. Called on the
 * thread that took the step (the front end's serial context; the quota store's thread for {@link
 * SessionEvent.Reconciled}), so implementations are thread-safe and never block. {@code
 * observability} implements it to keep the metrics and the decision record; {@link ReserveLearner}
 * and {@link AdaptiveSignals} learn from it.
 */
@FunctionalInterface
public interface SessionListener {
  void on(SessionEvent event);

  SessionListener NONE = e -> {};

  /**
   * All of {@code listeners}, each event to each in order. One that throws does not keep the event
   * from the others: the first failure is thrown once all have run (a session emits after the step
   * it reports, so a permit is released whatever a listener does).
   */
  static SessionListener of(SessionListener... listeners) {
    // an array, indexed: nothing allocated per event (a list's iterator escapes this lambda)
    SessionListener[] all = List.of(listeners).toArray(new SessionListener[0]);
    return e -> {
      RuntimeException failed = null;
      for (int i = 0; i < all.length; i++) {
        SessionListener l = all[i];
        try {
          l.on(e);
        } catch (RuntimeException x) {
          if (failed == null) {
            failed = x;
          } else if (x != failed) {
            failed.addSuppressed(x);
          }
        }
      }
      if (failed != null) {
        throw failed;
      }
    };
  }
}
