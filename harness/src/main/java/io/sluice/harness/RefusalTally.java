package io.sluice.harness;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.HdrHistogram.Histogram;

/**
 * A run's refused attempts (429/503) by reason, how long each took, and whether it said when to
 * retry: the counts behind {@link RunReport.Refusals}. Not thread-safe: changed and read under its
 * {@link RunTally}'s lock.
 */
final class RefusalTally {
  private final Map<String, Long> byReason = new TreeMap<>();
  private final Map<String, Histogram> microsByReason = new LinkedHashMap<>();
  private long withRetryAfter;
  private long withoutRetryAfter;

  /** A refused attempt; returns the nanoseconds its {@code retry-after} asks to wait, or -1. */
  long refused(String reason, Duration total, Optional<String> retryAfter) {
    byReason.merge(reason, 1L, Long::sum);
    microsByReason
        .computeIfAbsent(reason, k -> new Histogram(3_600_000_000L, 2))
        .recordValue(Math.max(0, Math.min(3_600_000_000L, total.toNanos() / 1000)));
    if (retryAfter.isEmpty()) {
      withoutRetryAfter++;
      return -1;
    }
    withRetryAfter++;
    try {
      return Long.parseLong(retryAfter.get().trim()) * 1_000_000_000L;
    } catch (NumberFormatException ignored) {
      return -1;
    }
  }

  /** Refused attempts so far, every reason. */
  long total() {
    long n = 0;
    for (long v : byReason.values()) {
      n += v;
    }
    return n;
  }

  RunReport.Refusals report() {
    return new RunReport.Refusals(
        Map.copyOf(byReason), withRetryAfter, withoutRetryAfter, Map.copyOf(microsByReason));
  }
}
