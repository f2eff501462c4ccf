package io.sluice.extproc;

import io.sluice.observability.StreamTally;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The open ext_proc streams, for graceful shutdown (wait for them, then end the rest). Every stream
 * is added when it opens and removed when it closes, so this is on every stream's path: streams are
 * linked into one of several lists through their own fields (no node allocated, no shared size
 * counter), picked by the stream's random hash, each list behind its own lock; the two transport
 * threads rarely meet on one. It also counts the streams opened and closed (by how they ended),
 * under the same locks, for {@code sluice_extproc_streams_total}. The streams that have sent no
 * message yet are also in a second list per stripe, oldest last, so that at the limit the oldest of
 * them can make room ({@link #claimOldestIdle}).
 */
final class LiveStreams<T extends LiveStreams.Node> implements StreamTally {
  /** What a member carries: its links, guarded by its stripe's lock. */
  abstract static class Node {
    @Nullable Node livePrev;
    @Nullable Node liveNext;
    boolean linked;
    // while it has sent no message: linked into its stripe's idle list, newest first
    @Nullable Node idlePrev;
    @Nullable Node idleNext;
    boolean idle;
    long openedNanos; // set before it is added
    // picks the stripe: a random int is cheaper than the identity hash (equality stays identity)
    private final int hash = java.util.concurrent.ThreadLocalRandom.current().nextInt();

    @Override
    public int hashCode() {
      return hash;
    }

    @Override
    public boolean equals(Object o) {
      return this == o;
    }
  }

  private static final int STRIPES = 32; // a power of two

  /** One list; padded so that two stripes' heads do not share a cache line. */
  @SuppressWarnings("unused")
  private static final class Stripe {
    long p0, p1, p2, p3, p4, p5, p6;
    @Nullable Node head;
    @Nullable Node idleHead; // newest
    @Nullable Node idleTail; // oldest
    int size;
    long opened;
    final long[] closed = new long[StreamTally.Close.values().length];
    long q0, q1, q2, q3, q4, q5, q6;
  }

  private final Stripe[] stripes = new Stripe[STRIPES];
  // The one shared count: the total limit needs it on every open (one atomic add each way).
  private final java.util.concurrent.atomic.AtomicInteger total =
      new java.util.concurrent.atomic.AtomicInteger();

  LiveStreams() {
    for (int i = 0; i < STRIPES; i++) {
      stripes[i] = new Stripe();
    }
  }

  private Stripe stripe(Node s) {
    return stripes[s.hashCode() & (STRIPES - 1)];
  }

  /** Adds {@code s} unless {@code max} streams are open already (then: false, nothing added). */
  boolean tryAdd(T s, int max) {
    if (total.incrementAndGet() > max) {
      total.decrementAndGet();
      return false;
    }
    link(s);
    return true;
  }

  void add(T s) {
    total.incrementAndGet();
    link(s);
  }

  private void link(T s) {
    Stripe st = stripe(s);
    synchronized (st) {
      s.liveNext = st.head;
      s.livePrev = null;
      if (st.head != null) {
        st.head.livePrev = s;
      }
      st.head = s;
      s.linked = true;
      st.size++;
      st.opened++;
      s.idlePrev = null;
      s.idleNext = st.idleHead;
      if (st.idleHead != null) {
        st.idleHead.idlePrev = s;
      } else {
        st.idleTail = s;
      }
      st.idleHead = s;
      s.idle = true;
    }
  }

  /** {@code s} sent its first message: it is never taken by {@link #claimOldestIdle} again. */
  void seen(T s) {
    Stripe st = stripe(s);
    synchronized (st) {
      unlinkIdle(st, s);
    }
  }

  private static void unlinkIdle(Stripe st, Node s) {
    if (!s.idle) {
      return;
    }
    if (s.idlePrev != null) {
      s.idlePrev.idleNext = s.idleNext;
    } else {
      st.idleHead = s.idleNext;
    }
    if (s.idleNext != null) {
      s.idleNext.idlePrev = s.idlePrev;
    } else {
      st.idleTail = s.idlePrev;
    }
    s.idlePrev = null;
    s.idleNext = null;
    s.idle = false;
  }

  /**
   * The oldest stream that has sent no message, if it opened at or before {@code openedBy}: taken
   * out of the idle lists (no other caller gets it) for the caller to end; else null. Looks at the
   * oldest of each stripe only: O(stripes), called only when the limit is reached.
   */
  @SuppressWarnings("unchecked") // only T is ever added
  @org.jspecify.annotations.Nullable
  T claimOldestIdle(long openedBy) {
    while (true) {
      Stripe oldest = null;
      long at = openedBy;
      for (Stripe st : stripes) {
        synchronized (st) {
          Node t = st.idleTail;
          if (t != null && t.openedNanos - at <= 0) {
            oldest = st;
            at = t.openedNanos;
          }
        }
      }
      if (oldest == null) {
        return null;
      }
      synchronized (oldest) {
        Node t = oldest.idleTail;
        if (t != null && t.openedNanos - openedBy <= 0) { // else it sent a message meanwhile
          unlinkIdle(oldest, t);
          return (T) t;
        }
      }
    }
  }

  /**
   * Removes {@code s}, counted as closed {@code how}; a stream that is not (or no longer) in the
   * set is ignored.
   */
  void remove(T s, StreamTally.Close how) {
    Stripe st = stripe(s);
    synchronized (st) {
      if (!s.linked) {
        return;
      }
      if (s.livePrev != null) {
        s.livePrev.liveNext = s.liveNext;
      } else {
        st.head = s.liveNext;
      }
      if (s.liveNext != null) {
        s.liveNext.livePrev = s.livePrev;
      }
      s.livePrev = null;
      s.liveNext = null;
      s.linked = false;
      unlinkIdle(st, s);
      st.size--;
      st.closed[how.ordinal()]++;
    }
    total.decrementAndGet();
  }

  /** Streams added and not yet removed (one atomic read). */
  int count() {
    return total.get();
  }

  int size() {
    int n = 0;
    for (Stripe st : stripes) {
      synchronized (st) {
        n += st.size;
      }
    }
    return n;
  }

  @Override
  public int open() {
    return size();
  }

  @Override
  public long opened() {
    long n = 0;
    for (Stripe st : stripes) {
      synchronized (st) {
        n += st.opened;
      }
    }
    return n;
  }

  @Override
  public long closed(StreamTally.Close how) {
    long n = 0;
    for (Stripe st : stripes) {
      synchronized (st) {
        n += st.closed[how.ordinal()];
      }
    }
    return n;
  }

  @SuppressWarnings("unchecked") // only T is ever added
  List<T> snapshot() {
    List<T> out = new ArrayList<>();
    for (Stripe st : stripes) {
      synchronized (st) {
        for (Node s = st.head; s != null; s = s.liveNext) {
          out.add((T) s);
        }
      }
    }
    return out;
  }
}
