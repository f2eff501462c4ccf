package io.sluice.core.session;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The sessions whose permit is held now for a predicted tail ({@link RunningRequest#endUnseen},
 * {@link HeldTail}): their front end will not see the response's end, so the permit goes back on a
 * timer. One per process, shared by every runtime snapshot (a reload keeps the tails, as it keeps
 * every permit), so that shutdown can release them all ({@link #releaseAll}). Bounded by the
 * permits in flight: a session is in it only while it holds one. Thread-safe.
 */
public final class TailHolds {
  private final Set<HeldTail> held = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  /** Registers a held tail; false (nothing registered) once {@link #releaseAll} ran. */
  boolean add(HeldTail tail) {
    held.add(tail);
    if (closed) { // shutdown raced with this tail: it holds nothing
      held.remove(tail);
      return false;
    }
    return true;
  }

  void remove(HeldTail tail) {
    held.remove(tail);
  }

  /** Tails held now. */
  public int size() {
    return held.size();
  }

  /**
   * Server shutdown: every held tail is released now (outcome {@code completed}: the answer was
   * already on its way and Sluice's going away does not cut it), each in its session's serial
   * context, and any tail started later is released at once. Returns how many were held.
   */
  public int releaseAll() {
    closed = true;
    int n = 0;
    for (java.util.Iterator<HeldTail> it = held.iterator(); it.hasNext(); ) {
      HeldTail t = it.next();
      it.remove();
      t.endNow();
      n++;
    }
    return n;
  }
}
