package io.sluice.core.session;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Reason;
import org.jspecify.annotations.Nullable;

/**
 * What the decision record says of one request's decision: when it arrived, whether it was decided
 * at its headers or its body, the reason, the time spent deciding, its place in the queue, the wait
 * behind a refusal's Retry-After, the deadline left when admitted, and an adaptive pool's limit
 * then. It builds {@link RequestFacts.Decided}. One per session, touched in its serial context.
 */
final class DecisionNotes {
  private final long arrivalEpochMillis;
  private boolean atBody;
  private Reason reason = Reason.ADMITTED;
  private long latencyNanos;
  private @Nullable QueuePlace queue; // its place in the pool's queue, once it waited
  private long refusalWaitNanos = -1; // the predicted wait behind a refusal's Retry-After
  private long deadlineLeftNanos; // time left before the deadline when admitted
  private AdaptiveLimit.@Nullable Snapshot limit;

  DecisionNotes(long arrivalEpochMillis) {
    this.arrivalEpochMillis = arrivalEpochMillis;
  }

  long arrivalEpochMillis() {
    return arrivalEpochMillis;
  }

  /** Decided at the body ({@code true}) or at the headers. */
  void at(boolean body) {
    atBody = body;
  }

  boolean atBody() {
    return atBody;
  }

  /** {@code body} or {@code headers}: where it was decided. */
  String phase() {
    return atBody ? "body" : "headers";
  }

  /** Queued: its place in the pool's queue. */
  QueuePlace queued(Decision.Queued q, long receivedNanos) {
    QueuePlace place = new QueuePlace(q, receivedNanos);
    queue = place;
    return place;
  }

  @Nullable QueuePlace queue() {
    return queue;
  }

  long queueWaitNanos() {
    QueuePlace place = queue;
    return place == null ? 0 : place.waitNanos();
  }

  /**
   * Decided at {@code nowNanos}: the time spent deciding counts from {@code receivedNanos}, the
   * queue excluded; {@code snapshot}: an adaptive pool's limit then (null for a fixed pool).
   */
  void decided(long nowNanos, long receivedNanos, AdaptiveLimit.@Nullable Snapshot snapshot) {
    passed(nowNanos, receivedNanos);
    limit = snapshot;
  }

  /** Shadow mode let it through at {@code nowNanos}: the time spent deciding, as in decided. */
  void passed(long nowNanos, long receivedNanos) {
    latencyNanos = nowNanos - receivedNanos - queueWaitNanos();
  }

  /** Admitted as a rung of the degrade ladder: true the first time (the reason is now degraded). */
  boolean degraded() {
    if (reason != Reason.ADMITTED) {
      return false;
    }
    reason = Reason.DEGRADED;
    return true;
  }

  void refused(Reason why) {
    reason = why;
  }

  /** {@link Reason#ADMITTED}, {@link Reason#DEGRADED}, or the reason of the refusal. */
  Reason reason() {
    return reason;
  }

  /** The predicted wait a capacity refusal's Retry-After was computed from, or -1 when none. */
  void refusalWait(long nanos) {
    refusalWaitNanos = nanos;
  }

  long refusalWaitNanos() {
    return refusalWaitNanos;
  }

  /** Admitted with {@code nanos} left before its deadline (never below 0). */
  void deadlineLeft(long nanos) {
    deadlineLeftNanos = Math.max(0, nanos);
  }

  RequestFacts.Decided facts() {
    QueuePlace place = queue;
    return new RequestFacts.Decided(
        reason,
        latencyNanos,
        place == null ? 0 : place.position(),
        queueWaitNanos(),
        refusalWaitNanos,
        deadlineLeftNanos,
        limit);
  }
}
