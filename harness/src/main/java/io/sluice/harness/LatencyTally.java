package io.sluice.harness;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.HdrHistogram.Histogram;

/**
 * A run's time to first token: by class from the attempt's start and from the first arrival, and
 * per second of the run. Not thread-safe: changed and read under its {@link RunTally}'s lock.
 */
final class LatencyTally {
  private static final long MAX_MICROS = 3_600_000_000L;

  private final Map<String, Histogram> byClass = new LinkedHashMap<>();
  private final Map<String, Histogram> fromArrivalByClass = new LinkedHashMap<>();
  private final Histogram[] perSecond;

  LatencyTally(Iterable<Workload.RequestClass> classes, int seconds) {
    for (Workload.RequestClass c : classes) {
      byClass.put(c.name(), new Histogram(MAX_MICROS, 3));
      fromArrivalByClass.put(c.name(), new Histogram(MAX_MICROS, 3));
    }
    perSecond = new Histogram[seconds];
  }

  /** A first token of class {@code cls} in second {@code s}. */
  void record(String cls, int s, long ttftNanos, long fromArrivalNanos) {
    long micros = Math.max(1, ttftNanos / 1000);
    Objects.requireNonNull(byClass.get(cls)).recordValue(Math.min(micros, MAX_MICROS));
    Objects.requireNonNull(fromArrivalByClass.get(cls))
        .recordValue(Math.min(Math.max(1, fromArrivalNanos / 1000), MAX_MICROS));
    Histogram h = perSecond[s];
    if (h == null) {
      h = new Histogram(MAX_MICROS, 2);
      perSecond[s] = h;
    }
    h.recordValue(Math.min(micros, MAX_MICROS));
  }

  /** The {@code percentile} of second {@code s}'s first tokens in ms, NaN if none came then. */
  double secondMillis(int s, double percentile) {
    Histogram h = perSecond[s];
    return h == null ? Double.NaN : h.getValueAtPercentile(percentile) / 1000.0;
  }

  RunReport.Ttft report() {
    return new RunReport.Ttft(Map.copyOf(byClass), Map.copyOf(fromArrivalByClass));
  }
}
