package io.sluice.core.session;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.TokenEstimator;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.quota.WorkflowBudget;
import io.sluice.core.retry.RetryControl;
import io.sluice.core.time.Ticker;
import java.time.Clock;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * Opens {@link AdmissionSession}s on one runtime snapshot: its controller, tenant quotas, estimator
 * and listener, and its pre-decision checks ({@link CheckChain}, built once here). Immutable; one
 * per config snapshot, so a reload never changes a session half-way.
 *
 * <p>The snapshot's parts:
 *
 * <ul>
 *   <li>defaultInputTokens the cost of a body of unknown size ({@code
 *       estimation.defaultInputTokens})
 *   <li>caps the tenants' {@code maxInFlight} across replicas ({@link TenantCaps#none()} when the
 *       store is in this process)
 *   <li>clock wall-clock time for the tenant buckets and the decision record (never read for queue
 *       age or deadlines: those use {@code ticker})
 *   <li>reserves the learned output reserve: one per process, passed into every snapshot, so a
 *       reload keeps what it learned ({@link OutputReserves#off()}: the old rule)
 *   <li>workflows the workflows' places in their pools' budgets ({@code pools.<name>.workflow}; one
 *       per process: it outlives the snapshot)
 *   <li>tails the permits held for a predicted tail (one per process, released all at shutdown)
 *   <li>retries retry control of this snapshot ({@link RetryControl#off()}: none)
 * </ul>
 */
public final class Sessions {
  private final AdmissionController controller;
  private final TenantQuotas quotas;
  private final TokenEstimator estimator;
  private final long defaultInputTokens;
  private final Ticker ticker;
  private final Clock clock;
  private final HoldTimer timer;
  private final SessionListener listener;
  private final TenantCaps caps;
  private final OutputReserves reserves;
  private final WorkflowBudget workflows;
  private final TailHolds tails;
  private final RetryControl retries;
  private final CheckChain checks; // built once here, from the above

  public Sessions(
      AdmissionController controller,
      TenantQuotas quotas,
      TokenEstimator estimator,
      long defaultInputTokens,
      Ticker ticker,
      Clock clock,
      HoldTimer timer,
      SessionListener listener,
      TenantCaps caps,
      OutputReserves reserves,
      WorkflowBudget workflows,
      TailHolds tails,
      RetryControl retries) {
    this.controller = Objects.requireNonNull(controller, "controller");
    this.quotas = Objects.requireNonNull(quotas, "quotas");
    this.estimator = Objects.requireNonNull(estimator, "estimator");
    this.defaultInputTokens = defaultInputTokens;
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.timer = Objects.requireNonNull(timer, "timer");
    this.listener = Objects.requireNonNull(listener, "listener");
    this.caps = Objects.requireNonNull(caps, "caps");
    this.reserves = Objects.requireNonNull(reserves, "reserves");
    this.workflows = Objects.requireNonNull(workflows, "workflows");
    this.tails = Objects.requireNonNull(tails, "tails");
    this.retries = Objects.requireNonNull(retries, "retries");
    this.checks = CheckChain.of(quotas, clock, listener, controller, caps, workflows, retries);
  }

  /** Without retry control. */
  public Sessions(
      AdmissionController controller,
      TenantQuotas quotas,
      TokenEstimator estimator,
      long defaultInputTokens,
      Ticker ticker,
      Clock clock,
      HoldTimer timer,
      SessionListener listener,
      TenantCaps caps,
      OutputReserves reserves,
      WorkflowBudget workflows,
      TailHolds tails) {
    this(
        controller,
        quotas,
        estimator,
        defaultInputTokens,
        ticker,
        clock,
        timer,
        listener,
        caps,
        reserves,
        workflows,
        tails,
        RetryControl.off());
  }

  /** These sessions with retry control. */
  public Sessions withRetries(RetryControl r) {
    return new Sessions(
        controller,
        quotas,
        estimator,
        defaultInputTokens,
        ticker,
        clock,
        timer,
        listener,
        caps,
        reserves,
        workflows,
        tails,
        r);
  }

  /**
   * Sessions without a learned output reserve, with a workflow budget and held tails of their own
   * (tests, tools; a server passes its process's: {@link #withReserves}, {@link #withWorkflows},
   * {@link #withTails}).
   */
  public Sessions(
      AdmissionController controller,
      TenantQuotas quotas,
      TokenEstimator estimator,
      long defaultInputTokens,
      Ticker ticker,
      Clock clock,
      HoldTimer timer,
      SessionListener listener,
      TenantCaps caps) {
    this(
        controller,
        quotas,
        estimator,
        defaultInputTokens,
        ticker,
        clock,
        timer,
        listener,
        caps,
        OutputReserves.off(),
        new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS),
        new TailHolds());
  }

  /** These sessions with the process's learned output reserve. */
  public Sessions withReserves(OutputReserves r) {
    return with(r, workflows, tails);
  }

  /** These sessions with the process's workflow budgets. */
  public Sessions withWorkflows(WorkflowBudget w) {
    return with(reserves, w, tails);
  }

  /** These sessions with the process's held tails. */
  public Sessions withTails(TailHolds t) {
    return with(reserves, workflows, t);
  }

  private Sessions with(OutputReserves r, WorkflowBudget w, TailHolds t) {
    return new Sessions(
        controller,
        quotas,
        estimator,
        defaultInputTokens,
        ticker,
        clock,
        timer,
        listener,
        caps,
        r,
        w,
        t,
        retries);
  }

  /** Sessions whose tenants' {@code maxInFlight} is this replica's own (no shared store). */
  public Sessions(
      AdmissionController controller,
      TenantQuotas quotas,
      TokenEstimator estimator,
      long defaultInputTokens,
      Ticker ticker,
      Clock clock,
      HoldTimer timer,
      SessionListener listener) {
    this(
        controller,
        quotas,
        estimator,
        defaultInputTokens,
        ticker,
        clock,
        timer,
        listener,
        TenantCaps.none());
  }

  public AdmissionController controller() {
    return controller;
  }

  public TenantQuotas quotas() {
    return quotas;
  }

  public TokenEstimator estimator() {
    return estimator;
  }

  public long defaultInputTokens() {
    return defaultInputTokens;
  }

  public Ticker ticker() {
    return ticker;
  }

  public Clock clock() {
    return clock;
  }

  public HoldTimer timer() {
    return timer;
  }

  public SessionListener listener() {
    return listener;
  }

  public TenantCaps caps() {
    return caps;
  }

  public OutputReserves reserves() {
    return reserves;
  }

  public WorkflowBudget workflows() {
    return workflows;
  }

  public TailHolds tails() {
    return tails;
  }

  public RetryControl retries() {
    return retries;
  }

  /** The snapshot's pre-decision checks, in order. */
  public CheckChain checks() {
    return checks;
  }

  /**
   * A session for one request.
   *
   * @param serial the front end's serial context: every continuation (quota store answers, waiter
   *     callbacks from other threads) runs there, one at a time, as the front end's own calls do
   */
  public AdmissionSession open(
      Subject subject, SessionFront front, Executor serial, SessionSteps steps) {
    return new AdmissionSession(this, subject, front, serial, steps);
  }
}
