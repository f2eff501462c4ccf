package io.sluice.core.session;

import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Decision;
import io.sluice.core.estimate.TokenEstimate;
import org.jspecify.annotations.Nullable;

/**
 * What a session does when its pool cannot start the request now (STYLE.md, "Seams"): the planner
 * asks the pool through the session ({@link Pool}) and answers the pool's decision; the session
 * then reads what it planned ({@link #runsAs}, {@link #plan}) and applies it (cuts the tenant's
 * reservation to the cheaper version, counts it, holds the plan), and never lets the planner touch
 * its state. Nothing is allocated for a request run as asked. The degrade ladder ({@link
 * DegradeLadder}) is the first. One per session, called in its serial context. Adding one:
 * CONTRIBUTING.md, "Adding a planner".
 */
interface Planner {
  /**
   * The front end's trusted signal (the route's {@code degrade: false}, the {@code noDegrade}
   * signal): the request runs as asked; called before it is decided.
   */
  void forbid();

  /**
   * The request body at its decision, by reference and never modified: kept until the request is
   * decided when the planner may rewrite it.
   */
  void offer(byte[] body, int offset, int length);

  /**
   * Decides {@code request} (costing {@code asked}, read only; decided at the body when {@code
   * atBody}): asks {@code pool}, and plans another way when the pool cannot start it now. The
   * decision may be a rung's admit (its permit is then the request's).
   */
  Decision decide(AdmissionRequest request, RequestCost asked, boolean atBody, Pool pool);

  /** The cheaper version the last decided request runs (or waits) as, or null: as asked. */
  @Nullable Cost runsAs();

  /** What the upstream gets for the last decided request, {@code request}. */
  UpstreamPlan plan(AdmissionRequest request);

  /**
   * The request is admitted under {@code plan}: what the upstream gets (the engine priority of the
   * pool it runs in, added); the body is let go.
   */
  UpstreamPlan admitted(UpstreamPlan plan, boolean atBody);

  /** The request is refused: the body is let go. */
  void refused();

  /**
   * The planner of a request whose class has no degrade ladder and whose pool has no engine
   * priority: the pool decides it as asked, nothing is kept or rewritten. Stateless, shared.
   */
  enum AsAsked implements Planner {
    INSTANCE;

    @Override
    public void forbid() {}

    @Override
    public void offer(byte[] body, int offset, int length) {}

    @Override
    public Decision decide(AdmissionRequest request, RequestCost asked, boolean atBody, Pool pool) {
      return pool.decide(request, 0);
    }

    @Override
    public @Nullable Cost runsAs() {
      return null;
    }

    @Override
    public UpstreamPlan plan(AdmissionRequest request) {
      return UpstreamPlan.asAsked(request.pool());
    }

    @Override
    public UpstreamPlan admitted(UpstreamPlan plan, boolean atBody) {
      return plan; // no engine priority, no rung: what the upstream gets is the plan
    }

    @Override
    public void refused() {}
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
   * A ladder's answer ({@link DegradeLadder}): the pool's decision, the cheaper version the request
   * runs (or waits) as (null: as asked), and what the upstream gets.
   */
  record Planned(Decision decision, @Nullable Cost runsAs, UpstreamPlan plan) {}
}
