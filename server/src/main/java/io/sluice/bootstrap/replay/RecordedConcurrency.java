package io.sluice.bootstrap.replay;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.PriorityQueue;

/**
 * The requests one pool's record shows in service when a request was admitted: what its recorded
 * service time was slowed down by ({@link Upstream#demand}). Fed in arrival order; a request counts
 * from its admission (its arrival plus its queue wait), not from its arrival: one that waited in
 * the queue was not yet in service. The record's times are whole milliseconds, each rounded down: a
 * request that ended up to {@link Recorded#ROUNDING_MS} after another's admission may have ended
 * before it, and is not counted (at a knee equal to the pool's maxRequests, counting it would slow
 * down a request the record shows was not). Memory: the requests in service or waiting at the
 * latest arrival.
 */
final class RecordedConcurrency {
  private final PriorityQueue<long[]> started = // {start, end}, by end
      new PriorityQueue<>((a, b) -> Long.compare(a[1], b[1]));
  private final List<long[]> waiting = new ArrayList<>(); // admitted after the latest arrival

  /**
   * Counts the recorded requests in service at {@code admittedAt} (this one included), then adds
   * this one, in service from {@code admittedAt} to {@code end} (epoch nanoseconds). {@code
   * arrival} never goes back. An end within {@code rounding} after an admission is not counted.
   */
  int admit(long arrival, long admittedAt, long end, long rounding) {
    for (Iterator<long[]> it = waiting.iterator(); it.hasNext(); ) {
      long[] w = it.next();
      if (w[0] <= arrival) {
        it.remove();
        started.add(w);
      }
    }
    while (!started.isEmpty() && started.peek()[1] <= arrival + rounding) {
      started.poll();
    }
    int n = 1;
    if (admittedAt <= arrival) {
      n += started.size();
    } else {
      for (long[] s : started) {
        if (s[1] > admittedAt + rounding) {
          n++;
        }
      }
      for (long[] w : waiting) {
        if (w[0] <= admittedAt && w[1] > admittedAt + rounding) {
          n++;
        }
      }
    }
    long[] me = {admittedAt, end};
    if (admittedAt <= arrival) {
      started.add(me);
    } else {
      waiting.add(me);
    }
    return n;
  }
}
