package io.sluice.extproc;

import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.estimate.TokenEstimator;
import io.sluice.core.session.Sessions;
import io.sluice.core.time.Ticker;
import io.sluice.observability.AdmissionMetrics;
import io.sluice.observability.DecisionLog;
import io.sluice.routing.RequestResolver;

/**
 * Everything one ext_proc stream needs, as one immutable snapshot. A stream reads the snapshot once
 * at its first message, so a reload never changes a request half-way. The snapshot also holds the
 * adapter's per-config lookup tables ({@link ExtProcTables}) and the admission sessions' factory
 * ({@link Sessions}): they live and die with it. The bootstrap's runtime factory builds one per
 * config snapshot; the parts that outlive a snapshot (the learned reserve, the workflows' places,
 * the held tails, the tenants' caps) come in through its sessions.
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
    Sessions sessions) {}
