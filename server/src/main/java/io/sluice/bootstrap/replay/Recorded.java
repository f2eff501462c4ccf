package io.sluice.bootstrap.replay;

import io.sluice.api.v1.Outcome;
import org.jspecify.annotations.Nullable;

/**
 * One decision record as a replay reads it: what arrived (when, whose, what it would cost), what
 * the upstream did with it (service time, usage, outcome) and what the recorded policy decided.
 * Small and flat: a replay holds one per request in its reorder window and in flight.
 *
 * @param arrivalMillis epoch milliseconds the request arrived
 * @param source where it was read ({@code file:line}), for messages
 * @param deadlineMs the request's deadline after its arrival (0: the class's)
 * @param inputTokens the estimate's input tokens
 * @param actualInputTokens the input tokens the upstream reported (the estimate's when none)
 * @param requestedOutputTokens the output cap the client asked for (or the class default)
 * @param serviceMs the upstream's service time (-1: not known, e.g. a refused request)
 * @param outputTokens the answer's output tokens (reported, else metered; -1 not known)
 * @param endedAfterMs when the request ended after arrival (a cancel: when the client left)
 * @param decided the recorded decision, as {@link Verdict#of} names it
 * @param queueWaitMs the recorded time in the queue
 * @param decideAfterMs time from arrival to the message it was decided at (its body), before any
 *     queue wait: the end's offset less the service, queue wait and decision time (0 when the
 *     record cannot tell)
 * @param timing the record's times on the server's monotonic clock (null in older records)
 */
record Recorded(
    long arrivalMillis,
    String source,
    String pool,
    String className,
    String tenant,
    @Nullable Timing timing,
    String route,
    String format,
    long deadlineMs,
    long inputTokens,
    long actualInputTokens,
    long requestedOutputTokens,
    long serviceMs,
    long outputTokens,
    Outcome outcome,
    int upstreamStatus,
    long endedAfterMs,
    String decided,
    long queueWaitMs,
    long decideAfterMs) {

  /** Whether the recorded request ran upstream (admitted or degraded, with a known time). */
  boolean ran() {
    return serviceMs >= 0;
  }

  /** Whether the client left before its answer's end (its patience is known). */
  boolean cancelled() {
    return outcome == Outcome.OUTCOME_CANCELLED;
  }

  /** Whether the recorded run delivered its answer within its deadline. */
  boolean goodput() {
    return outcome == Outcome.OUTCOME_COMPLETED
        && upstreamStatus < 400
        && (deadlineMs <= 0 || endedAfterMs <= deadlineMs);
  }

  /** What three whole-millisecond fields can add up to by rounding alone. */
  static final long ROUNDING_MS = 2;

  /**
   * A record's times on the monotonic clock of the process that wrote it, in nanoseconds ({@code
   * timing}): exact where the millisecond fields round.
   *
   * @param tickNs the clock's reading at arrival
   * @param decidedAfterNs arrival to its decision (its body; a queued request: entering the queue)
   * @param admittedAfterNs arrival to its admission (-1: no permit: refused, or a shadow pass)
   * @param endedAfterNs arrival to its end or refusal
   * @param deadlineAfterNs arrival to its deadline (0: not recorded)
   * @param arrivalNanos its arrival in epoch nanoseconds, the tick anchored to the wall clock by
   *     {@link RecordReader} (0 before)
   */
  record Timing(
      long tickNs,
      long decidedAfterNs,
      long admittedAfterNs,
      long endedAfterNs,
      long deadlineAfterNs,
      long arrivalNanos) {
    Timing anchored(long epochNanos) {
      return new Timing(
          tickNs, decidedAfterNs, admittedAfterNs, endedAfterNs, deadlineAfterNs, epochNanos);
    }
  }

  /** This record, its timing anchored at {@code epochNanos}. */
  Recorded anchored(long epochNanos) {
    return timed(arrivalMillis, java.util.Objects.requireNonNull(timing).anchored(epochNanos));
  }

  /**
   * This attempt sent again at {@code epochNanos} (a retry the replay moves): the same client
   * deadline, body wait, usage and outcome; a cancel at the same instant as recorded. Timed only.
   */
  Recorded sentAt(long epochNanos) {
    Timing t = java.util.Objects.requireNonNull(timing);
    long shift = epochNanos - arrivalNanos();
    return timed(
        Math.floorDiv(epochNanos, 1_000_000L),
        new Timing(
            t.tickNs() + shift,
            t.decidedAfterNs(),
            t.admittedAfterNs(),
            t.endedAfterNs() - (cancelled() ? shift : 0),
            deadlineNanos() - shift,
            epochNanos));
  }

  private Recorded timed(long arrivalMillis, Timing t) {
    return new Recorded(
        arrivalMillis,
        source,
        pool,
        className,
        tenant,
        t,
        route,
        format,
        deadlineMs,
        inputTokens,
        actualInputTokens,
        requestedOutputTokens,
        serviceMs,
        outputTokens,
        outcome,
        upstreamStatus,
        endedAfterMs,
        decided,
        queueWaitMs,
        decideAfterMs);
  }

  /** Whether its client left (its recorded cancel) by {@code epochNanos}. */
  boolean leftBy(long epochNanos) {
    return cancelled() && arrivalNanos() + endedAfterNanos() <= epochNanos;
  }

  /** Its arrival in epoch nanoseconds: exact with a timing, else its whole millisecond. */
  long arrivalNanos() {
    Timing t = timing;
    return t != null && t.arrivalNanos() != 0 ? t.arrivalNanos() : arrivalMillis * 1_000_000L;
  }

  /** The exact times, when they apply (an admitted request without a permit, a shadow pass: no). */
  private @Nullable Timing exact() {
    Timing t = timing;
    return t != null && t.arrivalNanos() != 0 && (!ran() || t.admittedAfterNs() >= 0) ? t : null;
  }

  /** Arrival to its decision (its body), before any queue wait. */
  long decideAfterNanos() {
    Timing t = exact();
    return t != null ? t.decidedAfterNs() : decideAfterMs * 1_000_000L;
  }

  /** Arrival to its deadline (0: the class's). */
  long deadlineNanos() {
    Timing t = timing;
    return t != null && t.deadlineAfterNs() > 0 ? t.deadlineAfterNs() : deadlineMs * 1_000_000L;
  }

  /** Arrival to its end (a cancel: when the client left; a refusal: when refused). */
  long endedAfterNanos() {
    Timing t = exact();
    return t != null ? t.endedAfterNs() : endedAfterMs * 1_000_000L;
  }

  /** Arrival to its admission (its decision plus its queue wait); a refused one: its decision. */
  long admittedAfterNanos() {
    Timing t = exact();
    if (t != null) {
      return ran() ? t.admittedAfterNs() : t.decidedAfterNs();
    }
    return (decideAfterMs + queueWaitMs) * 1_000_000L;
  }

  /** The upstream's service time (-1: not known). */
  long serviceNanos() {
    if (!ran()) {
      return -1;
    }
    Timing t = exact();
    return t != null ? Math.max(0, t.endedAfterNs() - t.admittedAfterNs()) : serviceMs * 1_000_000L;
  }

  /** Whether its times are exact (a timed record of a request with a permit, or a refusal). */
  boolean timed() {
    return exact() != null;
  }
}
