package io.sluice.harness;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A run's counts per second: arrivals, admitted, refused and completed attempts (counted without a
 * lock), and the queue and upstream activity sampled at each second's end (under its {@link
 * RunTally}'s lock); the rows of {@link RunReport#timeline()}.
 */
final class SecondsTally {
  private final int seconds;
  private final AtomicLongArray offered;
  private final AtomicLongArray admitted;
  private final AtomicLongArray rejected;
  private final AtomicLongArray completed;
  private final long[] queued;
  private final int[] active;

  SecondsTally(int seconds) {
    this.seconds = seconds;
    offered = new AtomicLongArray(seconds);
    admitted = new AtomicLongArray(seconds);
    rejected = new AtomicLongArray(seconds);
    completed = new AtomicLongArray(seconds);
    queued = new long[seconds];
    active = new int[seconds];
  }

  void offered(int s) {
    offered.incrementAndGet(s);
  }

  void admitted(int s) {
    admitted.incrementAndGet(s);
  }

  void rejected(int s) {
    rejected.incrementAndGet(s);
  }

  void completed(int s) {
    completed.incrementAndGet(s);
  }

  /** Second {@code s}'s queue and upstream activity. */
  void sample(int s, long queuedNow, int activeNow) {
    queued[s] = queuedNow;
    active[s] = activeNow;
  }

  /** The mean of the upstream's active generations over the arrival seconds after the first. */
  double meanActive(int arrivalSeconds) {
    long sum = 0;
    int samples = 0;
    for (int s = 0; s < Math.min(arrivalSeconds, seconds); s++) {
      if (s >= 1) {
        sum += active[s];
        samples++;
      }
    }
    return samples == 0 ? 0 : (double) sum / samples;
  }

  /** One row a second, up to the last second in which anything happened. */
  List<RunReport.Second> timeline(LatencyTally latency) {
    int last = 0;
    for (int s = 0; s < seconds; s++) {
      if (offered.get(s) + admitted.get(s) + completed.get(s) > 0 || queued[s] > 0) {
        last = s;
      }
    }
    List<RunReport.Second> timeline = new ArrayList<>();
    for (int s = 0; s <= last; s++) {
      timeline.add(
          new RunReport.Second(
              s,
              offered.get(s),
              admitted.get(s),
              rejected.get(s),
              completed.get(s),
              queued[s],
              active[s],
              latency.secondMillis(s, 50),
              latency.secondMillis(s, 95)));
    }
    return timeline;
  }
}
