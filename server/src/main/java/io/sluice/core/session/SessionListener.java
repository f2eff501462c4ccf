package io.sluice.core.session;

/**
 * Receives every {@link SessionEvent} of every session, in step order per session. Called on the
 * thread that took the step (the front end's serial context; the quota store's thread for {@link
 * SessionEvent.Reconciled}), so implementations are thread-safe and never block. {@code
 * observability} implements it to keep the metrics and the decision record.
 */
@FunctionalInterface
public interface SessionListener {
  void on(SessionEvent event);

  SessionListener NONE = e -> {};
}
