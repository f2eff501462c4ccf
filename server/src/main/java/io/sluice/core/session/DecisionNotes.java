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
  private long decidedNanos; // ticker time of the decision (admitted, let through or refused)
  private @Nullable QueuePlace queue; // its place in the pool's queue, once it waited
  private long refusalWaitNanos = -1; // the predicted wait behind a refusal's Retry-After
  private long deadlineLeftNanos; // time left before the deadline when admitted
  private AdaptiveLimit.@Nullable Snapshot limit;
  private RequestFacts.@Nullable Decided facts; // kept until a note changes

  DecisionNotes(long arrivalEpochMillis) {
    this.arrivalEpochMillis = arrivalEpochMillis;
  }

  long arrivalEpochMillis() {
    return arrivalEpochMillis;
  }

  /** Decided at the body ({@code true}) or at the headers. */
  void at(boolean body) {
    facts = null;
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
    facts = null;
    QueuePlace place = new QueuePlace(q, receivedNanos);
    queue = place;
    return place;
  }

  @Nullable QueuePlace queue() {
    return queue;
  }

  /** Out of the queue ({@code place}) after {@code waitedNanos}: its timer is called off. */
  void left(QueuePlace place, long waitedNanos) {
    facts = null;
    place.left(waitedNanos);
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
    facts = null;
    passed(nowNanos, receivedNanos);
    limit = snapshot;
  }

  /** Shadow mode let it through at {@code nowNanos}: the time spent deciding, as in decided. */
  void passed(long nowNanos, long receivedNanos) {
    facts = null;
    decidedNanos = nowNanos;
    latencyNanos = nowNanos - receivedNanos - queueWaitNanos();
  }

  /** The ticker time it was decided at (the last of {@link #decided} and {@link #passed}). */
  long decidedNanos() {
    return decidedNanos;
  }

  /** Admitted as a rung of the degrade ladder: true the first time (the reason is now degraded). */
  boolean degraded() {
    if (reason != Reason.ADMITTED) {
      return false;
    }
    facts = null;
    reason = Reason.DEGRADED;
    return true;
  }

  void refused(Reason why) {
    facts = null;
    reason = why;
  }

  /** {@link Reason#ADMITTED}, {@link Reason#DEGRADED}, or the reason of the refusal. */
  Reason reason() {
    return reason;
  }

  /** The predicted wait a capacity refusal's Retry-After was computed from, or -1 when none. */
  void refusalWait(long nanos) {
    facts = null;
    refusalWaitNanos = nanos;
  }

  long refusalWaitNanos() {
    return refusalWaitNanos;
  }

  /** Admitted with {@code nanos} left before its deadline (never below 0). */
  void deadlineLeft(long nanos) {
    facts = null;
    deadlineLeftNanos = Math.max(0, nanos);
  }

  /**
   * For the decision record; the same value until a note changes (one request's events share it).
   */
  RequestFacts.Decided facts() {
    RequestFacts.Decided f = facts;
    if (f != null) {
      return f;
    }
    QueuePlace place = queue;
    f =
        new RequestFacts.Decided(
            reason,
            latencyNanos,
            place == null ? 0 : place.position(),
            queueWaitNanos(),
            refusalWaitNanos,
            deadlineLeftNanos,
            limit);
    facts = f;
    return f;
  }
}
