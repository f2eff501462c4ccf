package io.sluice.observability;

/**
 * Every metric name Sluice publishes (Micrometer dotted names; Prometheus renders dots as
 * underscores and adds {@code _total}/{@code _seconds} suffixes). Documented in docs/metrics.md.
 * Tags are bounded: pool, class, tier, decision, reason, outcome, phase, cause, direction. Tenant
 * ids are never tags.
 */
public final class MetricNames {
  private MetricNames() {}

  public static final String SHARE_WORK = "sluice.replica.share.work_units";
  public static final String SHARE_REQUESTS = "sluice.replica.share.requests";
  public static final String SHARE_DEMAND_WORK = "sluice.replica.share.demand.work_units";
  public static final String SHARE_DEMAND_REQUESTS = "sluice.replica.share.demand.requests";
  public static final String SHARE_AGE = "sluice.replica.share.seconds_since_grant";
  public static final String SHARE_PEERS = "sluice.replica.share.peers";
  public static final String SHARE_MODE = "sluice.replica.share.mode";
  public static final String SHARE_RENEWALS = "sluice.replica.share.renewals";

  /** Exchanges of a learner's state with the store the replicas share: learner, result. */
  public static final String LEARNED_SHARE_EXCHANGES = "sluice.learned.share.exchanges";

  /** Keys of a learner adopted from the store the replicas share: learner. */
  public static final String LEARNED_SHARE_ADOPTED = "sluice.learned.share.keys.adopted";

  public static final String SHARE_REBALANCES = "sluice.replica.share.rebalances";
  public static final String SHARE_GATHERED = "sluice.replica.share.gathered";
  public static final String SHARE_SUPERSEDED = "sluice.replica.share.superseded";
  public static final String SHARE_IDLE_WORK = "sluice.replica.share.idle.work.units";
  public static final String TENANT_SLOTS = "sluice.tenant.slots";
  public static final String TENANT_SLOTS_HELD = "sluice.tenant.slots.held";
  public static final String FANOUT_WORK = "sluice.fanout.work_units";
  public static final String WORKFLOWS_IN_FLIGHT = "sluice.workflows.in_flight";
  public static final String WORKFLOWS_UNTRACKED = "sluice.workflows.untracked";
  public static final String DECISIONS = "sluice.decisions";

  /** Shadow mode: requests admitted that enforcement would have refused or queued. */
  public static final String SHADOW_DECISIONS = "sluice.shadow.decisions";

  public static final String DECISION_LATENCY = "sluice.decision.latency";
  public static final String WORK_IN_FLIGHT = "sluice.pool.work.in_flight";
  public static final String REQUESTS_IN_FLIGHT = "sluice.pool.requests.in_flight";
  public static final String POOL_CAPACITY = "sluice.pool.capacity";
  public static final String POOL_CAPACITY_EFFECTIVE = "sluice.pool.capacity.effective";
  public static final String POOL_CAPACITY_CHANGES = "sluice.pool.capacity.changes";
  public static final String POOL_UPSTREAM_PAUSE = "sluice.pool.upstream.pause.seconds";
  public static final String POOL_ADAPTIVE_ANSWERS = "sluice.pool.adaptive.answers";
  public static final String POOL_LATENCY_RATIO = "sluice.pool.latency.ratio";
  public static final String POOL_LATENCY_BASELINE = "sluice.pool.latency.baseline.seconds";
  public static final String POOL_COMPLETION_RATE = "sluice.pool.completion.rate";
  public static final String PERMITS_RELEASED = "sluice.permits.released";
  public static final String PERMIT_HOLD = "sluice.permit.hold";
  public static final String RESPONSE_END_UNSEEN = "sluice.response.end.unseen";
  public static final String PERMITS_TAIL_HELD = "sluice.permits.tail.held";
  public static final String POOL_SERVICE_TIME_SOURCE = "sluice.pool.service.time.source";
  public static final String TOKENS_ESTIMATED = "sluice.tokens.estimated";
  public static final String TOKENS_ACTUAL = "sluice.tokens.actual";
  public static final String TOKENS_ACTUAL_TO_ESTIMATE = "sluice.tokens.actual_to_estimate";
  public static final String TOKENS_CHARGED = "sluice.tokens.charged";
  public static final String OUTPUT_OVERRUNS = "sluice.output.overruns";
  public static final String OUTPUT_OVERRUN_WORK = "sluice.output.overrun.work.units";
  public static final String POOL_WORK_OVERRUN = "sluice.pool.work.overrun";
  public static final String ESTIMATE_FALLBACKS = "sluice.estimate.fallbacks";
  public static final String TOKEN_CACHE_LOOKUPS = "sluice.estimate.token_cache.lookups";
  public static final String TOKEN_CACHE_CHARS = "sluice.estimate.token_cache.chars";
  public static final String TOKEN_CACHE_ENTRIES = "sluice.estimate.token_cache.entries";
  // The learned output reserve (docs/estimation.md).
  public static final String RESERVE_DECISIONS = "sluice.reserve.decisions";
  public static final String RESERVE_LEARNED_KEYS = "sluice.reserve.learned.keys";
  public static final String RESERVE_LEARNED_EVICTIONS = "sluice.reserve.learned.evictions";
  public static final String RETRY_AFTER = "sluice.retry_after";
  public static final String UPSTREAM_RESPONSES = "sluice.upstream.responses";
  public static final String STREAMS_OPEN = "sluice.extproc.streams.open";
  public static final String STREAMS = "sluice.extproc.streams";
  public static final String STREAM_ERRORS = "sluice.extproc.stream.errors";
  public static final String STREAMS_UNDECIDED = "sluice.extproc.streams.undecided";
  public static final String STREAMS_REFUSED = "sluice.extproc.streams.refused";
  public static final String LOCAL_REPLIES = "sluice.extproc.local.replies";
  public static final String GRPC_TRANSPORT_REFUSALS = "sluice.grpc.transport.refusals";
  public static final String CONFIG_RELOADS = "sluice.config.reloads";
  // Readiness and process health (bootstrap).
  public static final String READY = "sluice.ready";

  /** 1, tagged with the version and git commit of the running build. */
  public static final String BUILD_INFO = "sluice.build.info";

  /** Decision records over the per-second bound, by kind (admitted, refused). */
  public static final String DECISION_LOG_DROPPED = "sluice.decision_log.dropped";

  public static final String DECISION_LOG_FILE_FAILED = "sluice.decision_log.file_failures";

  /** Decision records not exported as OTLP logs, by cause (queue_full, export_failed). */
  public static final String DECISION_LOG_OTLP_DROPPED = "sluice.decision_log.otlp_dropped";

  public static final String WARMUP_CALLS = "sluice.warmup.calls";
  public static final String WARMUP_DURATION = "sluice.warmup.duration";
  public static final String HEAP_AFTER_GC_RATIO = "sluice.health.heap_after_gc_ratio";
  public static final String HEAP_EXHAUSTED = "sluice.health.heap_exhausted";
  public static final String QUEUE_DEPTH = "sluice.queue.depth";
  public static final String QUEUE_WORK = "sluice.queue.work";
  public static final String QUEUE_OLDEST_AGE = "sluice.queue.oldest.age";
  public static final String DEGRADED = "sluice.degraded";
  public static final String DEGRADE_SKIPPED = "sluice.degrade.skipped";
  public static final String QUEUE_WAIT = "sluice.queue.wait";
  public static final String QUEUE_WAIT_PREDICTED = "sluice.queue.wait.predicted";
  public static final String OVERRIDES_SENT = "sluice.extproc.overrides";
  public static final String QUOTA_STORE_FAILURES = "sluice.quota.store.failures";
  public static final String QUOTA_RECONCILED = "sluice.quota.reconciled.tokens";

  /**
   * Writes to the shared store (Redis) that landed after their call had timed out and were taken
   * back (an in-flight claim, a tenant slot), by store ({@code attempts}, {@code tenant_slots}).
   */
  public static final String STORE_LATE_WRITES_UNDONE = "sluice.store.late_writes_undone";

  /** Workflows' places this replica holds in the shared store (pools' workflow budgets). */
  public static final String WORKFLOW_PLACES_HELD = "sluice.workflow.places.held";

  /** Workflow places the shared store did not answer for (quotas.failureMode decided). */
  public static final String WORKFLOW_PLACES_STORE_FAILED = "sluice.workflow.places.store_failed";
}
