package io.sluice.bootstrap.replay;

import com.google.protobuf.util.Timestamps;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.api.v1.Decision;
import io.sluice.api.v1.Outcome;

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
 */
record Recorded(
    long arrivalMillis,
    String source,
    String pool,
    String className,
    String tenant,
    String tier,
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

  static Recorded of(AdmissionRecord r, String source) {
    boolean ran =
        r.getDecision() == Decision.DECISION_ADMIT || r.getDecision() == Decision.DECISION_DEGRADE;
    long service = r.hasServiceMs() ? r.getServiceMs() : ran ? r.getHeldMs() : -1;
    long ended =
        r.getEndedAfterMs() > 0
            ? r.getEndedAfterMs()
            : r.getQueueWaitMs() + r.getDecisionLatencyUs() / 1000 + Math.max(0, service);
    long out =
        r.getActual().getReported()
            ? r.getActual().getOutputTokens()
            : r.hasActual() ? r.getActual().getMeteredOutputTokens() : -1;
    return new Recorded(
        Timestamps.toMillis(r.getArrivalTime()),
        source,
        r.getPool(),
        r.getClassName(),
        r.getTenant(),
        r.getTier(),
        r.getRoute(),
        r.getRequestFormat(),
        r.getDeadlineMs(),
        r.getEstimate().getInputTokens(),
        r.getActual().getReported() && r.getActual().getInputTokens() > 0
            ? r.getActual().getInputTokens()
            : r.getEstimate().getInputTokens(),
        r.getEstimate().getRequestedOutputTokens() > 0
            ? r.getEstimate().getRequestedOutputTokens()
            : r.getEstimate().getOutputReserveTokens(),
        ran ? service : -1,
        out,
        r.getOutcome(),
        r.getUpstreamStatus(),
        ended,
        Verdict.of(r),
        r.getQueueWaitMs(),
        decideAfter(r, ran, service));
  }

  /**
   * The body's wait: the end's offset less the queue wait and the service (or the decision time),
   * each recorded in whole milliseconds, so up to 2 ms of it is rounding, not a wait: read as 0.
   */
  private static long decideAfter(AdmissionRecord r, boolean ran, long service) {
    if (r.getEndedAfterMs() <= 0) {
      return 0;
    }
    long after =
        r.getEndedAfterMs()
            - r.getQueueWaitMs()
            - (ran ? Math.max(0, service) : r.getDecisionLatencyUs() / 1000);
    return after <= ROUNDING_MS ? 0 : after;
  }
}
