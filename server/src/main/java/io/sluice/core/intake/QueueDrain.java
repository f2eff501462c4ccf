package io.sluice.core.intake;

import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How fast a pool's job queue really drains, measured from what the store answered: each enqueue
 * and each backlog read tells the work that has left the pool's queue so far (claimed, expired or
 * cancelled, by any replica: the store is shared), and whether jobs were waiting. The measured rate
 * is the work that left the queue per second since the oldest sample of the last {@link
 * #LOOKBACK_MILLIS} at which jobs waited; 0 (no drain shown yet) until those samples span {@link
 * #MIN_SPAN_MILLIS}; no evidence at all ({@code NaN}) when no sample saw jobs waiting. Bounded:
 * {@link #MAX_QUEUES} queues (the oldest dropped), {@link #MAX_SAMPLES} samples each, at most one
 * per {@link #EVERY_MILLIS}. Thread-safe (one lock).
 */
public final class QueueDrain {
  /** How far back the rate looks. */
  public static final long LOOKBACK_MILLIS = 30_000;

  /** The least span of samples the rate is measured over (else: no evidence). */
  public static final long MIN_SPAN_MILLIS = 2_000;

  static final long EVERY_MILLIS = 250;
  static final int MAX_SAMPLES = (int) (LOOKBACK_MILLIS / EVERY_MILLIS) + 2;
  static final int MAX_QUEUES = 64;

  private record Sample(long millis, long drainedWork, boolean waiting) {}

  private final Map<String, ArrayDeque<Sample>> queues =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, ArrayDeque<Sample>> e) {
          return size() > MAX_QUEUES;
        }
      };

  /**
   * The store's answer at {@code nowMillis} for the queue {@code key} (its key prefix and pool):
   * {@code drainedWork} units have left it so far; {@code waiting}: jobs were waiting in it.
   */
  public synchronized void record(String key, long nowMillis, long drainedWork, boolean waiting) {
    ArrayDeque<Sample> q = queues.computeIfAbsent(key, k -> new ArrayDeque<>());
    Sample last = q.peekLast();
    if (last != null && nowMillis - last.millis() < EVERY_MILLIS) {
      if (waiting && !last.waiting()) { // keep the first sample that saw jobs waiting
        q.pollLast();
        q.addLast(new Sample(last.millis(), drainedWork, true));
      }
      return;
    }
    q.addLast(new Sample(nowMillis, drainedWork, waiting));
    while (q.size() > MAX_SAMPLES) {
      q.pollFirst();
    }
  }

  /**
   * The work units per second that left the queue {@code key} over the last {@link
   * #LOOKBACK_MILLIS} while jobs waited in it (0 when nothing left it, or when the samples since
   * jobs waited span less than {@link #MIN_SPAN_MILLIS}), or {@code NaN} when no sample in it saw
   * jobs waiting.
   */
  public synchronized double workPerSecond(String key, long nowMillis) {
    ArrayDeque<Sample> q = queues.get(key);
    if (q == null || q.isEmpty()) {
      return Double.NaN;
    }
    Sample first = null;
    for (Iterator<Sample> it = q.iterator(); it.hasNext(); ) {
      Sample s = it.next();
      if (s.waiting() && nowMillis - s.millis() <= LOOKBACK_MILLIS) {
        first = s;
        break;
      }
    }
    Sample last = q.peekLast();
    if (first == null) {
      return Double.NaN;
    }
    if (last.millis() - first.millis() < MIN_SPAN_MILLIS) {
      return 0; // jobs wait, and no drain is shown yet
    }
    return Math.max(0, last.drainedWork() - first.drainedWork())
        * 1000.0
        / (last.millis() - first.millis());
  }
}
