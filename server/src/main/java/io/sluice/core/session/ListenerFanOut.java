package io.sluice.core.session;

import java.util.ArrayList;
import java.util.List;

/**
 * The listeners of one runtime snapshot composed ({@link SessionListener#of}): each event goes to
 * the listeners that hear its type ({@link SessionListener#hears}), in registration order, from an
 * array made once per type here. A request's common events (admitted, released, a check's note)
 * reach only the few listeners that act on them, with no call into the others and nothing
 * allocated. One that throws does not keep the event from the others: the first failure is thrown
 * once all have run (a session emits after the step it reports, so a permit is released whatever a
 * listener does).
 */
final class ListenerFanOut implements SessionListener {
  // the event types, the hot ones first: an event's type is found by identity, in this order
  private static final Class<?>[] TYPES = types();

  private final SessionListener[] all;
  private final SessionListener[][] hearing; // indexed like TYPES

  ListenerFanOut(SessionListener... listeners) {
    this.all = List.of(listeners).toArray(new SessionListener[0]); // no null among them
    this.hearing = new SessionListener[TYPES.length][];
    for (int t = 0; t < TYPES.length; t++) {
      List<SessionListener> heard = new ArrayList<>(all.length);
      for (SessionListener l : all) {
        if (l.hears(TYPES[t].asSubclass(SessionEvent.class))) {
          heard.add(l);
        }
      }
      hearing[t] = heard.toArray(new SessionListener[0]);
    }
  }

  private static Class<?>[] types() {
    List<Class<?>> out = new ArrayList<>();
    out.add(SessionEvent.Admitted.class);
    out.add(SessionEvent.Released.class);
    out.add(SessionEvent.Noted.class);
    for (Class<?> c : SessionEvent.class.getPermittedSubclasses()) {
      if (!out.contains(c)) {
        out.add(c);
      }
    }
    return out.toArray(new Class<?>[0]);
  }

  @Override
  public void on(SessionEvent e) {
    Class<?> type = e.getClass();
    SessionListener[] to = all; // a type not permitted (none: the interface is sealed)
    for (int t = 0; t < TYPES.length; t++) {
      if (TYPES[t] == type) {
        to = hearing[t];
        break;
      }
    }
    RuntimeException failed = null;
    for (int i = 0; i < to.length; i++) {
      try {
        to[i].on(e);
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
  }

  @Override
  public boolean hears(Class<? extends SessionEvent> type) {
    for (SessionListener l : all) {
      if (l.hears(type)) {
        return true;
      }
    }
    return false;
  }
}
