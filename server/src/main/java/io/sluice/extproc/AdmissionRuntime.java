package io.sluice.extproc;

import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.estimate.TokenEstimator;
import io.sluice.core.session.Sessions;
import io.sluice.core.time.Ticker;
import io.sluice.observability.AdmissionMetrics;
import io.sluice.observability.DecisionLog;
import io.sluice.observability.SessionRecorder;
import io.sluice.routing.RequestResolver;

/**
 * Everything one ext_proc stream needs, as one immutable snapshot. A stream reads the snapshot once
 * at its first message, so a reload never changes a request half-way. The snapshot also holds the
 * adapter's per-config lookup tables ({@link ExtProcTables}) and the admission sessions' factory
 * ({@link Sessions}): they live and die with it.
 */
public record AdmissionRuntime(
    SluiceConfig config,
    RequestResolver resolver,
    AdmissionController controller,
    TokenEstimator estimator,
    AdmissionMetrics metrics,
    DecisionLog decisionLog,
    Ticker ticker,
    java.time.Clock clock,
    QueueTimer timer,
    io.sluice.core.quota.TenantQuotas quotas,
    ExtProcTables tables,
    Sessions sessions) {

  /** This snapshot with retry control (issue 19). */
  public AdmissionRuntime withRetries(io.sluice.core.retry.RetryControl retries) {
    return new AdmissionRuntime(
        config,
        resolver,
        controller,
        estimator,
        metrics,
        decisionLog,
        ticker,
        clock,
        timer,
        quotas,
        tables,
        sessions.withRetries(retries));
  }

  /**
   * A snapshot with the lookup tables of {@code resolver}'s config, whose admission sessions report
   * to {@code metrics} and {@code decisionLog}; the tenants' {@code maxInFlight} is held across
   * replicas by {@code caps} (one per process: it outlives the snapshot; {@code TenantCaps.none()}
   * with a store in this process).
   */
  public AdmissionRuntime(
      SluiceConfig config,
      RequestResolver resolver,
      AdmissionController controller,
      TokenEstimator estimator,
      AdmissionMetrics metrics,
      DecisionLog decisionLog,
      Ticker ticker,
      java.time.Clock clock,
      QueueTimer timer,
      io.sluice.core.quota.TenantQuotas quotas,
      io.sluice.core.quota.TenantCaps caps) {
    this(
        config,
        resolver,
        controller,
        estimator,
        metrics,
        decisionLog,
        ticker,
        clock,
        timer,
        quotas,
        caps,
        io.sluice.core.estimate.OutputReserves.off(),
        new io.sluice.core.quota.WorkflowBudget(
            io.sluice.core.quota.WorkflowBudget.DEFAULT_MAX_WORKFLOWS),
        new io.sluice.core.session.TailHolds());
  }

  /**
   * As above, with the process's state that outlives every snapshot: the learned output reserve
   * ({@code reserves}: a reload keeps what it learned), the workflows' places in their pools'
   * budgets, and the permits held for a predicted tail (released all at shutdown).
   */
  public AdmissionRuntime(
      SluiceConfig config,
      RequestResolver resolver,
      AdmissionController controller,
      TokenEstimator estimator,
      AdmissionMetrics metrics,
      DecisionLog decisionLog,
      Ticker ticker,
      java.time.Clock clock,
      QueueTimer timer,
      io.sluice.core.quota.TenantQuotas quotas,
      io.sluice.core.quota.TenantCaps caps,
      io.sluice.core.estimate.OutputReserves reserves,
      io.sluice.core.quota.WorkflowBudget workflows,
      io.sluice.core.session.TailHolds tails) {
    this(
        config,
        resolver,
        controller,
        estimator,
        metrics,
        decisionLog,
        ticker,
        clock,
        timer,
        quotas,
        new ExtProcTables(resolver),
        new Sessions(
            controller,
            quotas,
            estimator,
            config.estimation().defaultInputTokens(),
            ticker,
            clock,
            timer,
            new SessionRecorder(metrics, decisionLog),
            caps,
            reserves,
            workflows,
            tails));
  }
}
