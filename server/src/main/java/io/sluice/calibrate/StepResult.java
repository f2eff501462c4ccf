package io.sluice.calibrate;

import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * What one step of the ramp measured: {@code concurrency} closed-loop workers, each sending its
 * next request as soon as its previous one ended.
 *
 * @param concurrency workers (requests in flight while the step was issuing)
 * @param sent requests sent (at most the step's request budget)
 * @param ok requests answered 2xx whose stream ended normally
 * @param errors failed requests by kind: the HTTP status ({@code "429"}, {@code "503"}, ...),
 *     {@code "timeout"}, {@code "io"} (connection failed or reset), {@code "stream"} (an error
 *     event inside a 200 stream)
 * @param unfinished requests still in flight when the step's or the run's time was up (cancelled;
 *     neither ok nor an error)
 * @param requestsPerSecond ok requests per second while all workers were busy (see {@link
 *     StepRunner})
 * @param outputTokensPerSecond output tokens of those requests per second
 * @param ttftP50Millis time to the first content chunk, median of the ok requests (NaN: none)
 * @param ttftP95Millis the same, 95th percentile (nearest rank)
 * @param meanLatencyMillis mean time to the end of the stream of the ok requests (NaN: none)
 * @param meanPromptTokens mean prompt tokens the endpoint reported in {@code usage} (NaN: it did
 *     not report usage)
 * @param meanOutputTokens mean output tokens per ok request ({@code usage}, else content chunks)
 * @param durationMillis wall time of the step
 */
public record StepResult(
    int concurrency,
    int sent,
    int ok,
    SortedMap<String, Integer> errors,
    int unfinished,
    double requestsPerSecond,
    double outputTokensPerSecond,
    double ttftP50Millis,
    double ttftP95Millis,
    double meanLatencyMillis,
    double meanPromptTokens,
    double meanOutputTokens,
    long durationMillis) {

  public StepResult {
    errors = java.util.Collections.unmodifiableSortedMap(new TreeMap<>(errors));
  }

  /** A step from its headline numbers only (tests, and what-if analyses). */
  public static StepResult of(
      int concurrency,
      double requestsPerSecond,
      double ttftP95Millis,
      Map<String, Integer> errors) {
    int failed = errors.values().stream().mapToInt(Integer::intValue).sum();
    int ok = 100;
    return new StepResult(
        concurrency,
        ok + failed,
        ok,
        new TreeMap<>(errors),
        0,
        requestsPerSecond,
        requestsPerSecond * 100,
        ttftP95Millis / 2,
        ttftP95Millis,
        ttftP95Millis * 4,
        Double.NaN,
        100,
        1000);
  }

  /** Failed requests, every kind. */
  public int errorCount() {
    int n = 0;
    for (int v : errors.values()) {
      n += v;
    }
    return n;
  }

  /** Failed requests over requests that ended (ok or failed); 0 when none ended. */
  public double errorRate() {
    int ended = ok + errorCount();
    return ended == 0 ? 0 : (double) errorCount() / ended;
  }

  /** Requests answered 429 or 503: the endpoint refused them for load. */
  public int throttled() {
    return errors.getOrDefault("429", 0) + errors.getOrDefault("503", 0);
  }

  /** {@code 429:12 503:1}, or {@code -}. */
  public String errorsText() {
    if (errors.isEmpty()) {
      return "-";
    }
    StringBuilder b = new StringBuilder();
    errors.forEach((k, v) -> b.append(b.length() == 0 ? "" : " ").append(k).append(':').append(v));
    return b.toString();
  }
}
