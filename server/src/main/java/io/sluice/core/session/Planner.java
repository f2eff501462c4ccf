package io.sluice.core.session;

import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Decision;
import io.sluice.core.estimate.TokenEstimate;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * What a session does when its pool cannot start the request now (STYLE.md, "Seams"): the planner
 * asks the pool through the session ({@link Pool}) and answers the pool's decision; the session
 * then reads what it planned ({@link #runsAs}, {@link #plan}) and applies it (cuts the checks'
 * holds to the cheaper version, {@code AdmissionCheck.Held#runsAs}; counts it, holds the plan), and
 * never lets the planner touch its state. Nothing is allocated for a request run as asked. The
 * degrade ladder ({@link DegradeLadder}) is the first. One per session, called in its serial
 * context. Adding one: CONTRIBUTING.md, "Adding a planner".
 *
 * <p>A planner may also answer a request its pool refused another way, later ({@link #instead}:
 * background intake accepts it into the durable queue once the store acknowledged it); a feature
 * contributes such a planner ({@link Factory}, {@code Sessions.Builder#planner}): the session's own
 * planner (the ladder) decides, a contributed one plans what happens to its refusal ({@link
 * Planners}). Every method but {@link #decide} has the as-asked default.
 */
public interface Planner {
  /**
   * The front end's trusted signal (the route's {@code degrade: false}, the {@code noDegrade}
   * signal): the request runs as asked; called before it is decided.
   */
  default void forbid() {}

  /**
   * The request body at its decision, by reference and never modified: kept until the request is
   * decided when the planner may rewrite it.
   */
  default void offer(byte[] body, int offset, int length) {}

  /**
   * Decides {@code request} (costing {@code asked}, read only; decided at the body when {@code
   * atBody}): asks {@code pool}, and plans another way when the pool cannot start it now. The
   * decision may be a rung's admit (its permit is then the request's).
   */
  default Decision decide(AdmissionRequest request, RequestCost asked, boolean atBody, Pool pool) {
    return pool.decide(request, 0);
  }

  /** The cheaper version the last decided request runs (or waits) as, or null: as asked. */
  default @Nullable Cost runsAs() {
    return null;
  }

  /** What the upstream gets for the last decided request, {@code request}. */
  default UpstreamPlan plan(AdmissionRequest request) {
    return UpstreamPlan.asAsked(request.pool());
  }

  /**
   * The request is admitted under {@code plan}: what the upstream gets (the engine priority of the
   * pool it runs in, added); the body is let go.
   */
  default UpstreamPlan admitted(UpstreamPlan plan, boolean atBody) {
    return plan; // no engine priority, no rung: what the upstream gets is the plan
  }

  /** The request is refused (or answered another way): the body is let go. */
  default void refused() {}

  /**
   * The pool refused the request ({@code refusal}: at once, or out of its queue when its wait ran
   * out; enforced, never in shadow mode): the planner may answer it another way, later. Null (the
   * default): the refusal stands, nothing allocated. Else the session waits for the stage (the
   * front end keeps holding the request, as while a check's store answers) and applies its {@link
   * Instead} in its serial context: an answer ends the request as a check's own answer does (its
   * holds given back once, {@link SessionEvent.Answered}, the front end sends it); no answer, or a
   * stage that fails, lets the refusal stand (with the note, if any). {@code request}: the request
   * as the checks see it (its body is the planner's to keep, {@link #offer}).
   */
  default @Nullable CompletionStage<Instead> instead(
      Decision.Reject refusal, AdmissionCheck.Request request) {
    return null;
  }

  /**
   * The stage of {@link #instead} completed after the front end went away (the session ended):
   * nobody receives {@code answer}; undo what it promised (say, cancel the job it accepted), once.
   * Answers what it notes of the undone answer, or null (nothing to note): with a note, the session
   * ends the request as the pool refused it (its listeners and decision record get the refusal with
   * the note; the front end is gone, so nobody is answered).
   */
  default @Nullable Object unanswered(Instead answer) {
    return null;
  }

  /**
   * The planner of a request whose class has no degrade ladder and whose pool has no engine
   * priority: the pool decides it as asked, nothing is kept or rewritten. Stateless, shared.
   */
  enum AsAsked implements Planner {
    INSTANCE
  }

  /**
   * A planner's answer to a refused request ({@link #instead}).
   *
   * @param answer the request's answer instead of the refusal, or null: the refusal stands
   * @param note what the planner notes of the request for the listeners and the decision record (as
   *     a check's {@link AdmissionCheck.Held#note()}), or null
   */
  record Instead(AdmissionCheck.@Nullable Answered answer, @Nullable Object note) {
    /** The refusal stands, nothing noted. */
    public static final Instead REFUSAL = new Instead(null, null);
  }

  /**
   * A planner a feature contributes ({@code Sessions.Builder#planner}): built once per snapshot, it
   * makes the planner of each request it plans for.
   */
  @FunctionalInterface
  interface Factory {
    /** The snapshot's maker of planners, or null when the snapshot turns it off. */
    @Nullable Source create(AdmissionCheck.Context snapshot);
  }

  /** Makes a request's contributed planner ({@link Factory}). */
  @FunctionalInterface
  interface Source {
    /** The planner of {@code subject}'s request, or null: none (nothing allocated). */
    @Nullable Planner of(Subject subject);
  }

  /** The session's own ask of its pool: its waiter and hold, a wait ladder above a wait. */
  @FunctionalInterface
  interface Pool {
    /**
     * The pool's decision of {@code request}; {@code degradeAboveNanos}: a predicted wait above it
     * answers {@link Decision.Degradable} (0: never).
     */
    Decision decide(AdmissionRequest request, long degradeAboveNanos);
  }

  /**
   * What the request costs as it runs: its estimate, its work units, and the part of them its tools
   * and declared calls add.
   */
  record Cost(TokenEstimate estimate, long workUnits, long fanOutWork) {}

  /**
   * A check's note ({@link AdmissionCheck.Held#note()}) that asks the request's degrade ladder to
   * run it a cheaper way before its pool decides: say, a budget near its end. The ladder then tries
   * its rungs at once (only the one named, if any); one that starts the request admits it, with
   * this trigger's name; none: the pool decides it as asked (the ladder's own triggers still
   * apply). A request whose class has no ladder, or may not be degraded, runs as asked.
   */
  interface Trigger {
    /** The trigger's name (the metrics' {@code trigger} label, the record's), or null: not now. */
    @Nullable String degradeTrigger();

    /** The rung to try (a rung's name in the class's ladder), or null: each rung, in order. */
    default @Nullable String degradeRung() {
      return null;
    }
  }

  /**
   * A ladder's answer ({@link DegradeLadder}): the pool's decision, the cheaper version the request
   * runs (or waits) as (null: as asked), and what the upstream gets.
   */
  record Planned(Decision decision, @Nullable Cost runsAs, UpstreamPlan plan) {}
}
