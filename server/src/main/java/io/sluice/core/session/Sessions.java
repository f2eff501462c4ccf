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
 * and listener. Immutable; one per config snapshot, so a reload never changes a session half-way.
 *
 * @param defaultInputTokens the cost of a body of unknown size ({@code
 *     estimation.defaultInputTokens})
 * @param caps the tenants' {@code maxInFlight} across replicas ({@link TenantCaps#none()} when the
 *     store is in this process)
 * @param clock wall-clock time for the tenant buckets and the decision record (never read for queue
 *     age or deadlines: those use {@code ticker})
 * @param reserves the learned output reserve: one per process, passed into every snapshot, so a
 *     reload keeps what it learned ({@link OutputReserves#off()}: the old rule)
 * @param workflows the workflows' places in their pools' budgets ({@code pools.<name>.workflow};
 *     one per process: it outlives the snapshot)
 * @param tails the permits held for a predicted tail (one per process, released all at shutdown)
 * @param retries retry control of this snapshot ({@link RetryControl#off()}: none)
 */
public record Sessions(
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
  public Sessions {
    Objects.requireNonNull(controller, "controller");
    Objects.requireNonNull(quotas, "quotas");
    Objects.requireNonNull(estimator, "estimator");
    Objects.requireNonNull(ticker, "ticker");
    Objects.requireNonNull(clock, "clock");
    Objects.requireNonNull(timer, "timer");
    Objects.requireNonNull(listener, "listener");
    Objects.requireNonNull(caps, "caps");
    Objects.requireNonNull(reserves, "reserves");
    Objects.requireNonNull(workflows, "workflows");
    Objects.requireNonNull(tails, "tails");
    Objects.requireNonNull(retries, "retries");
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
