package io.sluice.core.session;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.policy.PoolPolicy;
import org.jspecify.annotations.Nullable;

/**
 * What is known of one request when a {@link SessionEvent} fires, as an immutable value: listeners
 * (metrics, the decision record, learners) read this, never the live session. The session builds it
 * in one place, at the moment it emits the event.
 *
 * @param subject the request as the front end resolved it
 * @param arrivalEpochMillis wall-clock time the session opened (the decision record's arrival)
 * @param phase the phase that decided (or refused): {@code headers} or {@code body}
 * @param estimate the estimate and what it costs, or null before one was made
 * @param decision the decision's reason, timing and queue place
 * @param run where and how the request runs
 * @param would shadow mode: what enforcement would have done, or null when it would have admitted
 *     the request too (or it is enforced)
 * @param notes what the request's checks noted of it (a check's own value, e.g. retry control's
 *     attempt; {@link CheckNotes#NONE} when none): read with {@link #note}
 * @param end the upstream's answer and the charge
 */
public record RequestFacts(
    Subject subject,
    long arrivalEpochMillis,
    String phase,
    @Nullable Estimate estimate,
    Decided decision,
    Run run,
    @Nullable Would would,
    CheckNotes notes,
    End end) {

  /** The note of {@code type} a check left on the request, or null. */
  public <T> @Nullable T note(Class<T> type) {
    return notes.get(type);
  }

  /**
   * The estimate the pool counted, with the learned reserve applied.
   *
   * @param tokens the token estimate (its output reserve the learned one)
   * @param workUnits what the request costs the pool
   * @param fanOutWork the part of {@code workUnits} the request's tools and declared calls add
   * @param requestedOutputTokens the output reserve the old rule (cap or class default, times
   *     answers) gave
   * @param reserveRule the learned-reserve rule that gave the output reserve ({@code prior}, {@code
   *     bound}, {@code learned}, {@code cap} or {@code off})
   * @param answers how many answers the body asks for ({@code n}, {@code best_of}; {@code >= 1})
   * @param scope the learned reserve's scope of the request: its route, or {@code class:<name>}
   */
  public record Estimate(
      TokenEstimate tokens,
      long workUnits,
      long fanOutWork,
      long requestedOutputTokens,
      String reserveRule,
      int answers,
      String scope) {}

  /**
   * The decision.
   *
   * @param reason {@link Reason#ADMITTED}, {@link Reason#DEGRADED}, or the refusal's reason
   * @param latencyNanos time spent deciding, queue wait excluded
   * @param queuePosition requests ahead at arrival plus one, when it was queued; else 0
   * @param queueWaitNanos time spent in the queue
   * @param refusalWaitNanos the predicted wait a capacity refusal's Retry-After came from, or -1
   * @param deadlineLeftNanos time left before the deadline when admitted (0 before)
   * @param limit an adaptive pool's limit when the request was decided, null for a fixed pool
   */
  public record Decided(
      Reason reason,
      long latencyNanos,
      int queuePosition,
      long queueWaitNanos,
      long refusalWaitNanos,
      long deadlineLeftNanos,
      AdaptiveLimit.@Nullable Snapshot limit) {}

  /**
   * Where and how the request runs.
   *
   * @param pool the pool it runs in: its own, or the reroute rung's
   * @param permit whether a permit was granted (a shadow pass holds none)
   * @param degradedRung the rung that degraded it ({@code concise}, {@code reroute}), or null
   * @param degradeTrigger what fired the ladder ({@code wait}, {@code headroom}), or null
   * @param enginePriority the engine priority written for the upstream, or null
   * @param admittedAtNanos ticker time the permit was granted (0 without one)
   */
  public record Run(
      PoolPolicy pool,
      boolean permit,
      @Nullable String degradedRung,
      @Nullable String degradeTrigger,
      @Nullable String enginePriority,
      long admittedAtNanos) {}

  /**
   * Shadow mode: what enforcement would have done ({@link SessionEvent.Shadowed}).
   *
   * @param what {@code reject} or {@code queue}
   * @param reason the would-be refusal's reason, or the capacity reason to queue
   * @param status the would-be refusal's status
   * @param message the would-be refusal's message (what the client would have read)
   */
  public record Would(String what, Reason reason, int status, String message) {}

  /**
   * The answer's end.
   *
   * @param upstreamStatus the upstream's status (0 before its response headers)
   * @param responseEnd {@code seen}, or why the response's end was not seen
   * @param overran whether the answer streamed past its output reserve
   * @param charge what the tenant was charged ({@link Charge#NONE} until the request ended)
   * @param complete whether the answer's own end was seen and its output is known (a complete
   *     answer with its reported usage, or a complete stream metered); false until it ended
   * @param firstChunkNanos time from the permit's grant to the answer's first body chunk (one
   *     before its last), or -1 when none came (or no permit)
   */
  public record End(
      int upstreamStatus,
      String responseEnd,
      boolean overran,
      Charge charge,
      boolean complete,
      long firstChunkNanos) {}
}
