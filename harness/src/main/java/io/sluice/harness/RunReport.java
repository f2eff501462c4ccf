package io.sluice.harness;

import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.jspecify.annotations.Nullable;

/**
 * What one {@link LoadGenerator} run measured against one {@link Rig}, in parts that each hold one
 * concern: how the logical requests ended ({@link Outcomes}), the refused attempts ({@link
 * Refusals}), time to first token ({@link Ttft}), the tokens spent and wasted ({@link Tokens}) and
 * the upstream's own figures ({@link Upstream}), beside the breakdowns by class, tenant, phase and
 * second. Counts are of logical requests (one arrival, possibly several attempts when the client
 * retries) unless the name says attempts.
 *
 * @param system the rig's name
 * @param arrivalSeconds length of the arrival window
 * @param outcomes how the logical requests ended, and the attempts sent for them
 * @param refusals every refused attempt (429/503)
 * @param ttft time to first token of completed requests, by class
 * @param byClass offered/completed per class
 * @param byTenant offered/completed per tenant
 * @param byPhase per arrival phase: offered = arrivals in the phase, completed = completions
 *     (before deadline) that happened during the phase window, so goodput per phase is a throughput
 * @param timeline one row per second of the run
 * @param tokens the tokens the upstream spent, useful and wasted
 * @param upstream the upstream's activity and size
 */
public record RunReport(
    String system,
    double arrivalSeconds,
    Outcomes outcomes,
    Refusals refusals,
    Ttft ttft,
    Map<String, Split> byClass,
    Map<String, Split> byTenant,
    List<PhaseRow> byPhase,
    List<Second> timeline,
    Tokens tokens,
    Upstream upstream) {

  /**
   * How the logical requests ended, and the attempts sent for them.
   *
   * @param offered logical requests that arrived
   * @param attempts HTTP requests sent (arrivals plus retries)
   * @param completed goodput: answers delivered completely before the client's deadline
   * @param completedAfterRetry of {@code completed}, those that needed at least one retry
   * @param deadlineMissed the client's deadline passed first (it disconnected)
   * @param deadlineMissedAfterFirstToken of those, streams that had started answering
   * @param cancelled the client disconnected on its own (scenario cancellations)
   * @param cancelledMidStream of those, after the first token
   * @param rejectedFinal logical requests whose last attempt was refused, by reason
   * @param retries retries sent after a Retry-After
   * @param unsent logical requests whose deadline or hang-up time had passed before the generator
   *     sent their first attempt (a generator running late; counted as deadline missed or
   *     cancelled), so {@code attempts + unsent == offered + retries}
   * @param errors other outcomes (e.g. {@code 504 ext_proc_error_per-message_timeout_exceeded}), by
   *     status and details
   * @param unfinished still in flight when the drain time ran out
   */
  public record Outcomes(
      long offered,
      long attempts,
      long completed,
      long completedAfterRetry,
      long deadlineMissed,
      long deadlineMissedAfterFirstToken,
      long cancelled,
      long cancelledMidStream,
      Map<String, Long> rejectedFinal,
      long retries,
      long unsent,
      Map<String, Long> errors,
      long unfinished) {

    public long rejectedFinalTotal() {
      return rejectedFinal.values().stream().mapToLong(Long::longValue).sum();
    }

    /** Σ of completed, deadline missed, cancelled, refused, errors, unfinished = offered. */
    public long accountedFor() {
      return completed
          + deadlineMissed
          + cancelled
          + rejectedFinalTotal()
          + errors.values().stream().mapToLong(Long::longValue).sum()
          + unfinished;
    }
  }

  /**
   * Every refused attempt (429/503).
   *
   * @param byReason refused attempts by reason ({@code x-sluice-reason}, or {@code upstream_429}/
   *     {@code upstream_503} for the provider's own throttling)
   * @param withRetryAfter refused attempts that carried {@code retry-after}
   * @param withoutRetryAfter refused attempts without it
   * @param microsByReason time from an attempt's start to its refusal, µs, by reason: a refusal at
   *     once answers in milliseconds, one after a hold in about the hold
   */
  public record Refusals(
      Map<String, Long> byReason,
      long withRetryAfter,
      long withoutRetryAfter,
      Map<String, Histogram> microsByReason) {}

  /**
   * Time to first token of completed requests, µs, by class.
   *
   * @param microsByClass measured from the start of the attempt that succeeded (what the serving
   *     path delivered)
   * @param fromArrivalMicrosByClass the same from the logical request's first arrival, so retry
   *     waits count (what the end user saw)
   */
  public record Ttft(
      Map<String, Histogram> microsByClass, Map<String, Histogram> fromArrivalMicrosByClass) {

    /** TTFT percentile of one class in milliseconds (NaN when the class completed nothing). */
    public double millis(String requestClass, double percentile) {
      return percentileMillis(microsByClass.get(requestClass), percentile);
    }

    /** TTFT (from first arrival) percentile of one class in ms (NaN when nothing completed). */
    public double fromArrivalMillis(String requestClass, double percentile) {
      return percentileMillis(fromArrivalMicrosByClass.get(requestClass), percentile);
    }

    private static double percentileMillis(@Nullable Histogram h, double percentile) {
      return h == null || h.getTotalCount() == 0
          ? Double.NaN
          : h.getValueAtPercentile(percentile) / 1000.0;
    }
  }

  /**
   * The tokens the upstream spent, and where the wasted ones went.
   *
   * @param promptSpent prompt tokens the upstream processed
   * @param completionSpent completion tokens the upstream generated
   * @param useful prompt + completion tokens of completed requests
   * @param unfinished tokens spent so far on requests still in flight when the run ended (neither
   *     useful nor wasted yet)
   * @param onMissedDeadlines wasted: tokens spent on attempts whose deadline passed first, until
   *     the client left
   * @param onHangUps wasted, the workload's own: tokens spent on attempts whose client disconnected
   *     on its own, until it left, where the client would have left before its answer ended even if
   *     served on arrival at full speed (the hang-ups no admission can avoid)
   * @param onHangUpsAfterWaiting wasted, caused by the serving path: tokens spent on attempts whose
   *     client disconnected on its own mid-answer although, served on arrival at full speed, its
   *     answer would have ended before it left (the wait or a slowed upstream made it leave)
   * @param afterClientLeft wasted: tokens the upstream spent on an attempt after its client had
   *     gone (generation not stopped when the client left)
   */
  public record Tokens(
      long promptSpent,
      long completionSpent,
      long useful,
      long unfinished,
      long onMissedDeadlines,
      long onHangUps,
      long onHangUpsAfterWaiting,
      long afterClientLeft) {

    public long spent() {
      return promptSpent + completionSpent;
    }

    /** Tokens the upstream spent on requests that missed their deadline or were cancelled. */
    public long wasted() {
      return Math.max(0, spent() - useful - unfinished);
    }

    /** Wasted tokens as a fraction of the tokens spent on requests that ended. */
    public double wastedFraction() {
      return endedFraction(wasted());
    }

    /**
     * Wasted tokens not on a missed deadline, a hang-up or after the client left: attempts that
     * ended in an error or a refusal after the upstream had started.
     */
    public long otherWasted() {
      return Math.max(
          0, wasted() - onMissedDeadlines - onHangUps - onHangUpsAfterWaiting - afterClientLeft);
    }

    /**
     * Waste caused by admission (the wasted-tokens target, docs/decisions/0007): tokens on missed
     * deadlines, after the client left, on hang-ups mid-answer that the wait caused (the client
     * would have had its whole answer had it been served on arrival) and other failures. Not the
     * workload's own hang-ups ({@link #onHangUps()}), whose floor is what the same arrivals cost
     * when served on arrival ({@link LoadGenerator#wasteIfServedOnArrival}).
     */
    public long wastedByAdmission() {
      return Math.max(0, wasted() - onHangUps);
    }

    /** {@link #wastedByAdmission()} as a fraction of the tokens spent on requests that ended. */
    public double wastedByAdmissionFraction() {
      return endedFraction(wastedByAdmission());
    }

    /** {@code tokens} as a fraction of the tokens spent on requests that ended. */
    public double endedFraction(long tokens) {
      long ended = spent() - unfinished;
      return ended <= 0 ? 0 : (double) tokens / ended;
    }
  }

  /**
   * The upstream's activity and size.
   *
   * @param meanActive mean number of generations running in the upstream, sampled per second during
   *     the arrival window
   * @param batchSlots the upstream's K
   */
  public record Upstream(double meanActive, int batchSlots) {}

  /** Offered and completed (goodput) logical requests of one group. */
  public record Split(long offered, long completed) {}

  /** One arrival phase: rates are per second of the phase. */
  public record PhaseRow(
      String label, double seconds, double ratePerSecond, long offered, long completed) {
    public double goodputPerSecond() {
      return seconds <= 0 ? 0 : completed / seconds;
    }

    public double offeredPerSecond() {
      return seconds <= 0 ? 0 : offered / seconds;
    }
  }

  /**
   * One second of the run: arrivals, attempts that reached the upstream, refused attempts,
   * completions, requests waiting at the end of the second (sent, not yet at the upstream), and
   * TTFT percentiles (ms) of the requests that got their first token in that second (NaN if none).
   */
  public record Second(
      int second,
      long offered,
      long admitted,
      long rejected,
      long completed,
      long queued,
      int upstreamActive,
      double ttftP50Millis,
      double ttftP95Millis) {}

  public double goodputPerSecond() {
    return arrivalSeconds <= 0 ? 0 : outcomes.completed() / arrivalSeconds;
  }
}
