package io.sluice.core.session;

import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.Usage;

/**
 * One step of an {@link AdmissionSession}, as an immutable value. Never the live session: an event
 * carries the request's {@link Subject} (who, which pool and class) and, for the steps that decide
 * or end it, the {@link RequestFacts} known when it fired.
 */
public sealed interface SessionEvent
    permits SessionEvent.Admitted,
        SessionEvent.Degraded,
        SessionEvent.DegradeSkipped,
        SessionEvent.Queued,
        SessionEvent.Dequeued,
        SessionEvent.Refused,
        SessionEvent.Answered,
        SessionEvent.Released,
        SessionEvent.Reconciled,
        SessionEvent.QuotaStoreFailed,
        SessionEvent.TenantSlot,
        SessionEvent.EstimateFellBack,
        SessionEvent.UpstreamResponded,
        SessionEvent.Shadowed,
        SessionEvent.OutputOverran,
        SessionEvent.ResponseEndUnseen,
        SessionEvent.Noted {

  /**
   * A check noted something of the request, its own value (retry control: the attempt as it
   * classified it), before any refusal it asks. The listener registered beside the check reads it
   * ({@code note instanceof} its type); others ignore it.
   */
  record Noted(Subject subject, Object note) implements SessionEvent {}

  /**
   * The front end will not see the response's end ({@code cause}: {@code body_mode_none}): the
   * permit is held for the predicted rest of the answer ({@link RunningRequest#endUnseen}); {@code
   * guessed} when its pool has seen no response end yet, so that rest is the pool's {@code
   * defaultServiceTime}, a guess.
   */
  record ResponseEndUnseen(Subject subject, String cause, boolean guessed)
      implements SessionEvent {}

  /** The request runs now (at once, or when its waiter was called). */
  record Admitted(RequestFacts facts) implements SessionEvent {}

  /**
   * A rung of the class's degrade ladder admitted the request ({@code rung}: {@code concise} or
   * {@code reroute}; {@code trigger}: {@code wait} or {@code headroom}); {@link Admitted} follows.
   */
  record Degraded(Subject subject, String rung, String trigger) implements SessionEvent {}

  /**
   * A rung of the ladder did not admit the request ({@code cause}: one of {@code
   * DegradeLadder.SKIP_CAUSES}), or the request may not be degraded ({@code rung} {@code all},
   * {@code cause} {@code forbidden}).
   */
  record DegradeSkipped(Subject subject, String rung, String cause) implements SessionEvent {}

  /** The request waits in its class queue; the front end holds it. */
  record Queued(RequestFacts facts, long decisionNanos, long predictedWaitNanos)
      implements SessionEvent {}

  /**
   * The request left its queue.
   *
   * @param outcome {@code admitted}, {@code expired}, {@code refused} (shutdown) or {@code
   *     cancelled}
   */
  record Dequeued(Subject subject, String outcome, long waitedNanos) implements SessionEvent {}

  /**
   * The request is refused (by the front end's checks, a tenant budget, or the pool); {@code
   * message} is the one the client gets.
   */
  record Refused(
      RequestFacts facts, Reason reason, int status, long retryAfterSeconds, String message)
      implements SessionEvent {}

  /**
   * A check answered the request itself ({@code AdmissionCheck.Answered}: a job accepted for later,
   * an operation's status): nothing ran upstream.
   */
  record Answered(RequestFacts facts, Reason reason, int status) implements SessionEvent {}

  /** The permit was released (exactly once), with the usage the response reported. */
  record Released(RequestFacts facts, Outcome outcome, long heldNanos, Usage usage)
      implements SessionEvent {}

  /**
   * The answer streamed past the output the pool counted for it: its work in flight grew by {@code
   * addedWork} units ({@code producedTokens} output tokens so far); {@code first} for the first
   * growth of this request.
   */
  record OutputOverran(Subject subject, long addedWork, long producedTokens, boolean first)
      implements SessionEvent {}

  /** The tenant's token reservation was reconciled with actual usage. */
  record Reconciled(long refunded, long overcharged) implements SessionEvent {}

  /** The tenant quota store did not answer; {@code allowed}: what its failure mode did. */
  record QuotaStoreFailed(boolean allowed) implements SessionEvent {
    public static final QuotaStoreFailed OPEN = new QuotaStoreFailed(true);
    public static final QuotaStoreFailed CLOSED = new QuotaStoreFailed(false);
  }

  /**
   * A capped tenant's slot across replicas was asked of the store.
   *
   * @param result {@code granted}, {@code denied} or {@code store_failed}
   */
  record TenantSlot(String pool, String result) implements SessionEvent {
    public static final String GRANTED = "granted";
    public static final String DENIED = "denied";
    public static final String STORE_FAILED = "store_failed";
  }

  /** The estimate fell back to a default ({@code cause}: a stable code). */
  record EstimateFellBack(String cause) implements SessionEvent {}

  /** The upstream answered with {@code status} (response headers). */
  record UpstreamResponded(Subject subject, int status) implements SessionEvent {}

  /**
   * Shadow mode: enforcement would have refused ({@link #REJECT}) or queued ({@link #QUEUE}) the
   * request; it is let through at once all the same ({@link Admitted} follows, without a permit).
   * For {@code queue}, {@code reason} is the capacity reason that made it wait; {@code status},
   * {@code retryAfterSeconds} and {@code message} are the refusal's (for {@code queue}: the
   * capacity refusal's status, 0 and a message naming the predicted wait).
   */
  record Shadowed(
      Subject subject,
      String would,
      Reason reason,
      int status,
      long retryAfterSeconds,
      String message)
      implements SessionEvent {
    public static final String REJECT = "reject";
    public static final String QUEUE = "queue";
  }
}
