package io.sluice.core.session;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The listeners of one runtime snapshot composed ({@link SessionListener#of}): each event goes to
 * the listeners that hear its type ({@link SessionListener#hears}), in registration order, from an
 * array made once per type here. A request's common events (admitted, released, a check's note)
 * reach only the few listeners that act on them, with no call into the others and nothing
 * allocated; a check's note only to those that hear its note's class ({@link
 * SessionListener#hearsNote}). One that throws does not keep the event from the others: the first
 * failure is thrown once all have run (a session emits after the step it reports, so a permit is
 * released whatever a listener does).
 */
final class ListenerFanOut implements SessionListener {
  // the event types, the hot ones first: an event's type is found by identity, in this order
  private static final Class<?>[] TYPES = types();

  private final SessionListener[] all;
  private final SessionListener[][] hearing; // indexed like TYPES
  // a note's listeners by its class, found as notes come (copy on write; classes are the code's)
  private volatile NoteRoute[] notes = new NoteRoute[0];
  private static final int MAX_NOTE_TYPES = 64;

  /** The listeners that hear notes of one class. */
  private static final class NoteRoute {
    final Class<?> type;
    final SessionListener[] to;

    NoteRoute(Class<?> type, SessionListener[] to) {
      this.type = type;
      this.to = to;
    }
  }

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
    // the first one other() finds: every answer's response headers send it (it was the tenth)
    out.add(SessionEvent.UpstreamResponded.class);
    for (Class<?> c : SessionEvent.class.getPermittedSubclasses()) {
      if (!out.contains(c)) {
        out.add(c);
      }
    }
    return out.toArray(new Class<?>[0]);
  }

  @Override
  public void on(SessionEvent e) {
    // The hot types each take their own loop: a call site per type, so the JIT sees there only the
    // listeners of that type (the admitted event's one recorder: a direct call, not an itable stub)
    Class<?> type = e.getClass();
    if (type == SessionEvent.Admitted.class) {
      admitted(e);
    } else if (type == SessionEvent.Released.class) {
      released(e);
    } else if (type == SessionEvent.Noted.class) {
      noted(e);
    } else {
      other(type, e);
    }
  }

  private void admitted(SessionEvent e) {
    SessionListener[] to = hearing[0];
    RuntimeException failed = null;
    for (SessionListener l : to) {
      try {
        l.on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    rethrow(failed);
  }

  /**
   * The released event's listeners (up to ten in a full config: the recorders, the learners, the
   * budget's settler), each of the first {@link #RELEASED_PLACES} called from a call site of its
   * own place: a runtime puts the same listener at a place on every request, so the JIT calls each
   * directly (one class seen there), where one site for all of them is megamorphic and dispatches
   * through an itable stub. Those past the places go round a loop. In order, each whatever the
   * others throw, as the loop did.
   *
   * <p>Its bytecode is over the JIT's size for inlining a hot callee (325 bytes): it is compiled as
   * its own method, with its listeners, and {@link #on} stays small enough to inline where an event
   * is made (a check's note is then not allocated). Fewer places, or a shorter body, would let
   * {@link #on} grow into a method too big to inline.
   */
  private void released(SessionEvent e) {
    SessionListener[] to = hearing[1];
    int n = to.length;
    RuntimeException failed = null;
    if (n > 0) {
      try {
        to[0].on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    if (n > 1) {
      try {
        to[1].on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    if (n > 2) {
      try {
        to[2].on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    if (n > 3) {
      try {
        to[3].on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    if (n > 4) {
      try {
        to[4].on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    if (n > 5) {
      try {
        to[5].on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    if (n > 6) {
      try {
        to[6].on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    if (n > 7) {
      try {
        to[7].on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    if (n > 8) {
      try {
        to[8].on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    if (n > 9) {
      try {
        to[9].on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    for (int i = RELEASED_PLACES; i < n; i++) {
      try {
        to[i].on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    rethrow(failed);
  }

  /** The released event's listeners called each from a call site of its place. */
  static final int RELEASED_PLACES = 10;

  private void noted(SessionEvent e) {
    SessionListener[] to = forNote(((SessionEvent.Noted) e).note());
    RuntimeException failed = null;
    for (SessionListener l : to) {
      try {
        l.on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    rethrow(failed);
  }

  /** The listeners of a note of this class: those hearing notes that hear its class. */
  private SessionListener[] forNote(@Nullable Object note) {
    if (note == null) {
      return hearing[2];
    }
    Class<?> type = note.getClass();
    NoteRoute[] seen = notes;
    for (NoteRoute r : seen) {
      if (r.type == type) {
        return r.to;
      }
    }
    List<SessionListener> heard = new ArrayList<>(hearing[2].length);
    for (SessionListener l : hearing[2]) {
      if (l.hearsNote(type)) {
        heard.add(l);
      }
    }
    SessionListener[] to = heard.toArray(new SessionListener[0]);
    if (seen.length < MAX_NOTE_TYPES) { // the code's note types: a few; a lost race costs a scan
      NoteRoute[] more = Arrays.copyOf(seen, seen.length + 1);
      more[seen.length] = new NoteRoute(type, to);
      notes = more;
    }
    return to;
  }

  private void other(Class<?> type, SessionEvent e) {
    SessionListener[] to = all; // a type not permitted (none: the interface is sealed)
    for (int t = 3; t < TYPES.length; t++) {
      if (TYPES[t] == type) {
        to = hearing[t];
        break;
      }
    }
    RuntimeException failed = null;
    for (SessionListener l : to) {
      try {
        l.on(e);
      } catch (RuntimeException x) {
        failed = first(failed, x);
      }
    }
    rethrow(failed);
  }

  /** The failure to throw once all have run: the first, the others suppressed in it. */
  private static RuntimeException first(@Nullable RuntimeException failed, RuntimeException x) {
    if (failed == null) {
      return x;
    }
    if (x != failed) {
      failed.addSuppressed(x);
    }
    return failed;
  }

  private static void rethrow(@Nullable RuntimeException failed) {
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

  @Override
  public boolean hearsNote(Class<?> noteType) {
    for (SessionListener l : hearing[2]) {
      if (l.hearsNote(noteType)) {
        return true;
      }
    }
    return false;
  }
}
