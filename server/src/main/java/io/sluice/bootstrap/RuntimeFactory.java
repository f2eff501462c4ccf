package io.sluice.bootstrap;

import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.estimate.EstimatorSettings;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.TokenCountCache;
import io.sluice.core.estimate.TokenEstimator;
import io.sluice.core.quota.SharedWorkflowBudget;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.session.AdaptiveSignals;
import io.sluice.core.session.ReserveLearner;
import io.sluice.core.session.SessionListener;
import io.sluice.core.session.Sessions;
import io.sluice.core.session.TailHolds;
import io.sluice.core.time.Ticker;
import io.sluice.extproc.AdmissionRuntime;
import io.sluice.extproc.ExtProcTables;
import io.sluice.extproc.QueueTimer;
import io.sluice.feature.Contributions;
import io.sluice.feature.FeatureSnapshot;
import io.sluice.observability.AdmissionMetrics;
import io.sluice.observability.DecisionLog;
import io.sluice.observability.DecisionRecordPart;
import io.sluice.observability.ReplayTimingPart;
import io.sluice.observability.SessionRecorder;
import io.sluice.observability.SloMetrics;
import io.sluice.observability.SloRecorder;
import io.sluice.routing.RequestResolver;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The one place a config snapshot becomes an {@link AdmissionRuntime}: the live server builds one
 * at start and one per reload, the warm-up builds its isolated one here too, from parts of its own.
 * The parts are what outlives a snapshot (the controller, metrics, stores, the learned reserve, the
 * workflows' places, the held tails); everything else is made from the snapshot's config, the
 * registered features' parts too ({@link Features}: their checks, listeners, record fields).
 *
 * @param decisionLogs the decision log of a snapshot (the live server's is bounded by the process's
 *     budget, writes {@code decisionLog.file} and, with {@code decisionLog.otlp}, OTLP log records;
 *     the warm-up's discards its lines)
 * @param stores the tenant buckets and the features' ports (the warm-up's is a private in-memory
 *     one)
 * @param caps the tenants' {@code maxInFlight} across replicas ({@link TenantCaps#none()}: this
 *     replica's own)
 * @param reserves the learned output reserve ({@link OutputReserves#off()}: the old rule)
 * @param env the process environment the features read secrets from (the warm-up's: none)
 */
record RuntimeFactory(
    AdmissionController controller,
    AdmissionMetrics metrics,
    TokenCountCache tokenCounts,
    Function<SluiceConfig, DecisionLog> decisionLogs,
    Ticker ticker,
    Clock clock,
    QueueTimer timer,
    Stores stores,
    TenantCaps caps,
    OutputReserves reserves,
    SharedWorkflowBudget workflows,
    TailHolds tails,
    Map<String, String> env) {

  /** The service-level meters, their series made for the policy's pools, classes and tiers. */
  private SloMetrics slo(SluiceConfig config) {
    SloMetrics slo = metrics.part(SloMetrics.class, SloMetrics::new);
    Map<String, java.time.Duration> limits = new java.util.LinkedHashMap<>();
    config.classes().forEach((name, c) -> limits.put(name, c.maxQueueWait()));
    slo.bind(config.pools().keySet(), limits, config.tiers().keySet());
    return slo;
  }

  /** The runtime of {@code config}: new streams see it; streams already open keep theirs. */
  AdmissionRuntime build(SluiceConfig config) {
    return build(config, timer);
  }

  /**
   * As {@link #build(SluiceConfig)}, the sessions' held requests expiring on {@code holdTimer} (a
   * replay's virtual clock) rather than the factory's timer wheel.
   */
  AdmissionRuntime build(SluiceConfig config, io.sluice.core.session.HoldTimer holdTimer) {
    RequestResolver resolver = new RequestResolver(config);
    DecisionLog decisionLog = decisionLogs.apply(config);
    TenantQuotas quotas =
        new TenantQuotas(stores.shared(), config.quotas().keyPrefix(), failureMode(config));
    stores.configure(config); // the features' ports follow the snapshot's policy
    Contributions features = new Contributions();
    FeatureSnapshot snapshot = new FeatureSnapshot(config, stores, metrics, ticker, clock, env);
    Features.ALL.forEach(f -> f.contribute(snapshot, features));
    TokenEstimator estimator =
        new TokenEstimator(estimatorSettings(config), tokenCounts, features.bytesPerToken());
    List<SessionListener> listeners = new ArrayList<>();
    // the learners first, as the session learned before it recorded; the features' last
    listeners.add(new ReserveLearner(reserves));
    listeners.add(new AdaptiveSignals(controller));
    List<DecisionRecordPart> parts = new ArrayList<>();
    parts.add(new ReplayTimingPart(ticker)); // what a replay orders its events by
    parts.addAll(features.recordParts());
    listeners.add(new SessionRecorder(metrics, decisionLog, parts));
    listeners.add(new SloRecorder(slo(config)));
    listeners.addAll(features.listeners());
    Sessions.Builder sessions =
        Sessions.builder(
                controller,
                quotas,
                estimator,
                ticker,
                clock,
                holdTimer,
                SessionListener.of(listeners.toArray(new SessionListener[0])))
            .defaultInputTokens(config.estimation().defaultInputTokens())
            .caps(caps)
            .reserves(reserves)
            .sharedWorkflows(workflows)
            .tails(tails)
            .bodyRouter(features.bodyRouter());
    features.checks().forEach(sessions::check);
    features.planners().forEach(sessions::planner);
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
        new ExtProcTables(resolver),
        sessions.build());
  }

  private static TenantQuotas.FailureMode failureMode(SluiceConfig config) {
    return config.quotas().failureMode() == SluiceConfig.Quotas.FailureMode.CLOSED
        ? TenantQuotas.FailureMode.CLOSED
        : TenantQuotas.FailureMode.OPEN;
  }

  static EstimatorSettings estimatorSettings(SluiceConfig config) {
    SluiceConfig.Estimation e = config.estimation();
    return EstimatorSettings.builder()
        .bytesPerToken(e.bytesPerToken())
        .imageTokens(e.imageTokens())
        .attachmentTokens(e.attachmentTokens())
        .toolDefinitionOverheadTokens(e.toolDefinitionOverheadTokens())
        .perMessageOverheadTokens(e.perMessageOverheadTokens())
        .replyPrimingTokens(e.replyPrimingTokens())
        .maxJsonDepth(e.maxJsonDepth())
        .maxTokenizeChars(e.maxTokenizeChars())
        .build();
  }
}
