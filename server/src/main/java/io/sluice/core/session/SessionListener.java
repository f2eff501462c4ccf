package io.sluice.core.session;

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

  /**
   * Whether this listener acts on events of {@code type} at all: the listeners composed by {@link
   * #of} are given only the events whose type they hear. Every type unless a listener says
   * otherwise; one that answers false for a type must ignore its events.
   */
  default boolean hears(Class<? extends SessionEvent> type) {
    return true;
  }

  /**
   * Whether this listener acts on a {@link SessionEvent.Noted} whose note is of class {@code
   * noteType} (a listener that hears notes at all): the listeners composed by {@link #of} are given
   * only the notes they hear. Every class unless a listener says otherwise; one that answers false
   * for a class must ignore its notes.
   */
  default boolean hearsNote(Class<?> noteType) {
    return true;
  }

  SessionListener NONE = e -> {};

  /**
   * All of {@code listeners}, each event to each that hears its type ({@link #hears}), in order.
   * One that throws does not keep the event from the others: the first failure is thrown once all
   * have run (a session emits after the step it reports, so a permit is released whatever a
   * listener does).
   */
  static SessionListener of(SessionListener... listeners) {
    return new ListenerFanOut(listeners);
  }
}
