package io.sluice.observability;

import com.google.protobuf.util.Timestamps;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.estimate.Usage;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.session.Charge;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;
import io.sluice.core.session.Subject;

/**
 * Turns the admission sessions' events into the admission metrics (docs/metrics.md) and the
 * decision record ({@code sluice.v1.AdmissionRecord}: refusals when refused, admitted requests when
 * their permit is released). One per runtime snapshot: the metrics are the process's, the decision
 * log is the snapshot's config. Thread-safe, as its metrics and log are.
 */
public final class SessionRecorder implements SessionListener {
  /**
   * The record schema's version ({@code schema_version}): 2 added the fields a replay reads
   * (service and first-chunk times, the end's offset). Bump it when a field's meaning changes.
   */
  public static final int RECORD_SCHEMA_VERSION = 2;

  private final AdmissionMetrics metrics;
  private final DecisionLog decisionLog;
  private final DecisionRecordPart[] parts;

  /** With the fields the features' parts add to every record ({@link DecisionRecordPart}). */
  public SessionRecorder(
      AdmissionMetrics metrics,
      DecisionLog decisionLog,
      java.util.List<? extends DecisionRecordPart> parts) {
    this.metrics = metrics;
    this.decisionLog = decisionLog;
    this.parts = parts.toArray(new DecisionRecordPart[0]);
  }

  /** Every event but a check's note (a feature's listener reads those). */
  @Override
  public boolean hears(Class<? extends SessionEvent> type) {
    return type != SessionEvent.Noted.class;
  }

  @Override
  public void on(SessionEvent event) {
    // Java 17: no pattern switch; the hot events come first
    if (event instanceof SessionEvent.Admitted e) {
      admitted(e.facts());
    } else if (event instanceof SessionEvent.Released e) {
      released(e);
    } else if (event instanceof SessionEvent.UpstreamResponded e) {
      meters(e.subject()).upstreamResponse(e.status());
    } else if (event instanceof SessionEvent.Refused e) {
      refused(e);
    } else if (event instanceof SessionEvent.Answered e) {
      answered(e);
    } else if (event instanceof SessionEvent.Queued e) {
      queued(e);
    } else if (event instanceof SessionEvent.Dequeued e) {
      Subject s = e.subject();
      metrics.dequeued(s.pool().name(), s.requestClass().name(), e.outcome(), e.waitedNanos());
    } else if (event instanceof SessionEvent.TenantSlot e) {
      metrics.tenantSlot(e.pool(), e.result());
    } else if (event instanceof SessionEvent.Reconciled e) {
      metrics.reconciled(e.refunded(), e.overcharged());
    } else if (event instanceof SessionEvent.QuotaStoreFailed e) {
      metrics.quotaStoreFailure(e.allowed() ? "open" : "closed");
    } else if (event instanceof SessionEvent.EstimateFellBack e) {
      metrics.estimateFallback(e.cause());
    } else if (event instanceof SessionEvent.OutputOverran e) {
      metrics.outputOverran(e.subject().pool().name(), e.addedWork(), e.first());
    } else if (event instanceof SessionEvent.ResponseEndUnseen e) {
      metrics.responseEndUnseen(e.subject().pool(), e.cause(), e.guessed());
    } else if (event instanceof SessionEvent.Degraded e) {
      Subject s = e.subject();
      metrics.degraded(s.pool().name(), s.requestClass().name(), e.rung(), e.trigger());
    } else if (event instanceof SessionEvent.DegradeSkipped e) {
      Subject s = e.subject();
      metrics.degradeSkipped(s.pool().name(), s.requestClass().name(), e.rung(), e.cause());
    } else if (event instanceof SessionEvent.Shadowed e) {
      Subject s = e.subject();
      metrics.shadowed(
          s.pool().name(),
          s.requestClass().name(),
          s.tenant().tier().name(),
          e.would(),
          e.reason());
    }
  }

  private ClassMeters meters(Subject s) {
    return metrics.forClass(s.pool().name(), s.requestClass().name(), s.tenant().tier().name());
  }

  private void admitted(RequestFacts f) {
    Subject s = f.subject();
    ClassMeters m = meters(s);
    if (f.run().degradedRung() != null) {
      metrics.decision(
          s.pool().name(),
          s.requestClass().name(),
          s.tenant().tier().name(),
          "degrade",
          Reason.DEGRADED.code(),
          f.phase(),
          f.decision().latencyNanos());
    } else {
      m.admitted(f.phase(), f.decision().latencyNanos());
    }
    RequestFacts.Estimate est = f.estimate();
    if (est != null) { // a shadow pass before the estimate (tenant_rate, unknown_tenant) has none
      m.estimated(est.tokens().inputTokens(), est.tokens().outputReserveTokens());
      m.reserveDecision(est.reserveRule());
      if (est.fanOutWork() > 0) {
        fanOut(s, est.tokens().fanOut());
      }
    }
  }

  /** {@code sluice_fanout_work_units_total{pool,source}} of an admitted request. */
  private void fanOut(Subject s, io.sluice.core.estimate.FanOut f) {
    io.sluice.core.policy.FanOutPolicy p = s.pool().fanout();
    String pool = s.pool().name();
    metrics.fanOut(pool, "tools", p.tools(f));
    metrics.fanOut(pool, "tool_choice", p.toolChoice(f));
    metrics.fanOut(pool, "parallel_tool_calls", p.parallel(f));
    metrics.fanOut(pool, "declared", p.declared(s.fanout()));
  }

  private void queued(SessionEvent.Queued e) {
    Subject s = e.facts().subject();
    metrics.queued(
        s.pool().name(),
        s.requestClass().name(),
        s.tenant().tier().name(),
        e.facts().phase(),
        e.decisionNanos(),
        e.predictedWaitNanos());
  }

  private void refused(SessionEvent.Refused e) {
    RequestFacts f = e.facts();
    Subject s = f.subject();
    RequestFacts.Estimate est = f.estimate();
    if (est != null) {
      metrics.reserveDecision(s.pool().name(), est.reserveRule());
    }
    metrics.decision(
        s.pool().name(),
        s.requestClass().name(),
        s.tenant().tier().name(),
        "reject",
        e.reason().code(),
        f.phase(),
        f.decision().latencyNanos());
    if (e.retryAfterSeconds() > 0) {
      metrics.retryAfter(e.reason().code(), e.retryAfterSeconds());
    }
    if (decisionLog.wants(true)) {
      decisionLog.write(
          record(
                  f,
                  io.sluice.api.v1.Decision.DECISION_REJECT,
                  e.reason(),
                  e.status(),
                  e.retryAfterSeconds())
              .setOutcome(io.sluice.api.v1.Outcome.OUTCOME_REJECTED)
              // refused now: its body's wait, queue wait and decision all count
              .setEndedAfterMs(Math.max(0, metrics.nanos() - s.arrivalNanos()) / 1_000_000L)
              .setMessage(e.message())
              .setPredictedWaitMs(Math.max(0, f.decision().refusalWaitNanos() / 1_000_000L))
              .build());
    }
  }

  /** A check answered it itself: decision {@code answer}, logged as a refusal is (rate-wise). */
  private void answered(SessionEvent.Answered e) {
    RequestFacts f = e.facts();
    Subject s = f.subject();
    metrics.decision(
        s.pool().name(),
        s.requestClass().name(),
        s.tenant().tier().name(),
        "answer",
        e.reason().code(),
        f.phase(),
        f.decision().latencyNanos());
    if (decisionLog.wants(true)) {
      decisionLog.write(
          record(f, io.sluice.api.v1.Decision.DECISION_ANSWER, e.reason(), e.status(), 0)
              .setOutcome(io.sluice.api.v1.Outcome.OUTCOME_REJECTED)
              .build());
    }
  }

  private void released(SessionEvent.Released e) {
    RequestFacts f = e.facts();
    Subject s = f.subject();
    ClassMeters own = meters(s); // found once for the release, the actual and charged tokens
    if (f.run().permit()) { // a shadow pass held none; a rerouted one was in its target pool
      PoolPolicy ran = f.run().pool();
      ClassMeters held =
          ran == s.pool() // not rerouted: its own pool's meters, no second lookup
              ? own
              : metrics.forClass(ran.name(), s.requestClass().name(), s.tenant().tier().name());
      held.released(e.outcome(), e.heldNanos());
    }
    Usage u = e.usage();
    RequestFacts.Estimate est = f.estimate();
    Charge charge = f.end().charge();
    if (charge.rule().equals(Charge.REPORTED) && est != null) {
      own.actual(
          s.format().configName(),
          u.inputTokens(),
          u.outputTokens(),
          est.tokens().inputTokens(),
          est.tokens().outputReserveTokens());
    }
    RequestFacts.Would would = f.would();
    boolean wouldReject = would != null && SessionEvent.Shadowed.REJECT.equals(would.what());
    if (!wouldReject) { // enforcement charges no refusal
      own.charged(charge.rule(), charge.inputTokens(), charge.outputTokens());
    }
    // a would-be refusal is logged as a refusal is (alwaysLogRejects, maxRefusedPerSecond)
    // with a permit, the release's own read (its grant plus the time held): the budget reads none
    RequestFacts.Run run = f.run();
    if (run.permit()
        ? decisionLog.wants(wouldReject, run.admittedAtNanos() + e.heldNanos())
        : decisionLog.wants(wouldReject)) {
      decisionLog.write(
          shadow(f, admitRecord(f))
              .setActual(
                  io.sluice.api.v1.Usage.newBuilder()
                      .setInputTokens(u.inputTokens())
                      .setOutputTokens(u.outputTokens())
                      .setReported(u.reported())
                      .setMeteredOutputTokens(charge.meteredOutputTokens())
                      .setChargedInputTokens(charge.inputTokens())
                      .setChargedOutputTokens(charge.outputTokens())
                      .setChargeRule(charge.rule())
                      .setOverran(f.end().overran()))
              .setOutcome(outcome(e.outcome()))
              .setUpstreamStatus(f.end().upstreamStatus())
              .setResponseEnd(f.end().responseEnd())
              .setHeldMs(e.heldNanos() / 1_000_000L)
              .mergeFrom(replayFields(f, e.heldNanos()))
              .build());
    }
  }

  /**
   * What a replay reads of an admitted request's end (docs/replay.md): its service time, time to
   * first chunk, and when it ended after its arrival.
   */
  private static AdmissionRecord replayFields(RequestFacts f, long heldNanos) {
    long admittedAfter =
        f.run().admittedAtNanos() != 0
            ? Math.max(0, f.run().admittedAtNanos() - f.subject().arrivalNanos())
            : decidedAfterNanos(f);
    AdmissionRecord.Builder b =
        AdmissionRecord.newBuilder()
            .setServiceMs(heldNanos / 1_000_000L)
            .setEndedAfterMs((admittedAfter + heldNanos) / 1_000_000L);
    long first = f.end().firstChunkNanos();
    if (first >= 0) {
      b.setTtftMs(first / 1_000_000L);
    }
    return b.build();
  }

  /** Time from arrival to the decision: its queue wait and the time spent deciding. */
  private static long decidedAfterNanos(RequestFacts f) {
    return Math.max(0, f.decision().queueWaitNanos()) + Math.max(0, f.decision().latencyNanos());
  }

  /** The record of an admitted (or degraded) request, before its end's fields. */
  private AdmissionRecord.Builder admitRecord(RequestFacts f) {
    RequestFacts.Run run = f.run();
    String rung = run.degradedRung();
    AdmissionRecord.Builder b =
        record(
                f,
                rung != null
                    ? io.sluice.api.v1.Decision.DECISION_DEGRADE
                    : io.sluice.api.v1.Decision.DECISION_ADMIT,
                f.decision().reason(),
                200,
                0)
            .setDeadlineRemainingMs(f.decision().deadlineLeftNanos() / 1_000_000L);
    if (rung != null) {
      RequestFacts.Estimate e = f.estimate();
      b.setDegrade(
          io.sluice.api.v1.Degrade.newBuilder()
              .setRung(rung)
              .setTrigger(String.valueOf(run.degradeTrigger()))
              .setPool(run.pool().name())
              .setRequestedOutputTokens(e == null ? 0 : e.requestedOutputTokens())
              .setOutputReserveTokens(e == null ? 0 : e.tokens().outputReserveTokens()));
    }
    String priority = run.enginePriority();
    if (priority != null) {
      b.setEnginePriority(priority);
    }
    return b;
  }

  /** The shadow fields of a request enforcement would have refused or queued. */
  private static AdmissionRecord.Builder shadow(RequestFacts f, AdmissionRecord.Builder b) {
    RequestFacts.Would would = f.would();
    if (would == null) {
      return b;
    }
    return b.setMode("shadow")
        .setWould(would.what())
        .setWouldReason(would.reason().code())
        .setWouldStatus(would.status())
        .setWouldMessage(would.message());
  }

  private static io.sluice.api.v1.Outcome outcome(Outcome o) {
    return switch (o) {
      case COMPLETED -> io.sluice.api.v1.Outcome.OUTCOME_COMPLETED;
      case CANCELLED -> io.sluice.api.v1.Outcome.OUTCOME_CANCELLED;
      case ERROR -> io.sluice.api.v1.Outcome.OUTCOME_ERROR;
      case SHUTDOWN -> io.sluice.api.v1.Outcome.OUTCOME_SHUTDOWN;
    };
  }

  /**
   * The fields every record carries: arrival, decision, the request's place, the estimate; then
   * what the features' parts add (retry control: the attempt).
   */
  private AdmissionRecord.Builder record(
      RequestFacts f,
      io.sluice.api.v1.Decision decision,
      Reason reason,
      int status,
      long retryAfter) {
    Subject s = f.subject();
    RequestFacts.Decided d = f.decision();
    AdmissionRecord.Builder b =
        AdmissionRecord.newBuilder()
            .setSchemaVersion(RECORD_SCHEMA_VERSION)
            .setEndedAfterMs(decidedAfterNanos(f) / 1_000_000L)
            .setArrivalTime(Timestamps.fromMillis(f.arrivalEpochMillis()))
            .setDecision(decision)
            .setReason(reason == Reason.ADMITTED ? "" : reason.code())
            .setHttpStatus(status)
            .setRetryAfterSeconds(retryAfter)
            .setDecisionLatencyUs(d.latencyNanos() / 1000)
            .setQueuePosition(d.queuePosition())
            .setQueueWaitMs(d.queueWaitNanos() / 1_000_000L)
            .setTenant(s.tenant().id())
            .setTier(s.tenant().tier().name())
            .setClassName(s.requestClass().name())
            .setPool(s.pool().name())
            .setRoute(s.route())
            .setRequestFormat(s.format().configName())
            .setDeadlineMs((s.deadlineNanos() - s.arrivalNanos()) / 1_000_000L)
            .setMaxQueueAgeMs(s.requestClass().maxQueueWait().toMillis());
    if (s.operationId() != null) {
      b.setOperationId(s.operationId());
    }
    if (s.workflow() != null) {
      b.setWorkflowId(s.workflow());
    }
    io.sluice.core.adapt.AdaptiveLimit.Snapshot limit = d.limit();
    if (limit != null) {
      b.setCapacity(
          io.sluice.api.v1.Capacity.newBuilder()
              .setWorkUnits(limit.work())
              .setRequests(limit.requests())
              .setCause(limit.cause().label())
              .setPausedMs(limit.pauseRemainingNanos() / 1_000_000L));
    }
    RequestFacts.Estimate est = f.estimate();
    if (est != null) {
      TokenEstimate estimate = est.tokens();
      io.sluice.api.v1.Estimate.Builder e =
          io.sluice.api.v1.Estimate.newBuilder()
              .setInputTokens(estimate.inputTokens())
              .setOutputReserveTokens(estimate.outputReserveTokens())
              .setWorkUnits(est.workUnits())
              .setMethod(estimate.method())
              .setReserveRule(est.reserveRule())
              .setRequestedOutputTokens(est.requestedOutputTokens())
              .setFanoutWorkUnits(est.fanOutWork());
      String model = estimate.model();
      if (model != null) {
        e.setModel(model.length() <= 128 ? model : model.substring(0, 128));
      }
      if (estimate.fallbackCause() != null) {
        b.setEstimate(e.setFallbackCause(estimate.fallbackCause()));
      } else {
        b.setEstimate(e);
      }
    }
    for (DecisionRecordPart p : parts) {
      p.write(f, b);
    }
    return b;
  }
}
