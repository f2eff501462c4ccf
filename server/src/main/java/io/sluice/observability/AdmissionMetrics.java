package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.TokenCountCache;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.quota.WorkflowBudget;
import java.time.Duration;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Micrometer meters for the admission path. Adapters call these after the core returns a decision;
 * the core itself never sees Micrometer. Meters are cached per tag set (all tags are bounded,
 * {@link MeterCache}), so the hot path is a map lookup and an increment; the gauges of the pools
 * are {@link PoolGauges}', those read from process-wide counts {@link ProcessGauges}', and the
 * meters of one (pool, class, tier) found once per stream {@link ClassMeters}.
 */
public final class AdmissionMetrics {
  private static final Logger LOG = LoggerFactory.getLogger(AdmissionMetrics.class);

  private final MeterRegistry registry;
  private final LongSupplier tickerNanos;
  private final MeterCache meters;
  private final PoolGauges pools;
  private final ConcurrentMap<ClassKey, ClassMeters> classMeters = new ConcurrentHashMap<>();
  private final ConcurrentMap<String, Timer> admitLatency = new ConcurrentHashMap<>();
  private final Timer admitAtHeaders; // the latency timer most admitted requests record into
  // pools that saw a response whose end Sluice does not see (WARN once each; /readyz); configured
  // names only, dropped with their pool on reload
  private final Set<String> endUnseenPools = ConcurrentHashMap.newKeySet();

  /** The ticker's time now (the time a record stamps an event with). */
  public long nanos() {
    return tickerNanos.getAsLong();
  }

  public AdmissionMetrics(MeterRegistry registry, LongSupplier tickerNanos) {
    this.registry = registry;
    this.tickerNanos = tickerNanos;
    this.meters = new MeterCache(registry);
    this.pools = new PoolGauges(registry, tickerNanos);
    this.admitAtHeaders =
        admitLatency.computeIfAbsent("headers", ph -> decisionLatency(ph, "admit"));
  }

  /**
   * Registers {@code sluice_extproc_streams_total{event}} and the open-streams gauge on the
   * adapter's own counts (read at scrape time).
   */
  public void bindStreams(StreamTally tally) {
    ProcessGauges.bindStreams(registry, tally);
  }

  /**
   * Registers {@code sluice_estimate_token_cache_lookups_total{result="hit"|"miss"}}, the weight
   * held ({@code sluice_estimate_token_cache_chars}) and its entries, read from the cache at scrape
   * time.
   */
  public void bindTokenCache(TokenCountCache cache) {
    ProcessGauges.bindTokenCache(registry, cache);
  }

  /**
   * Registers the learned output reserve's {@code sluice_reserve_learned_keys} gauge and {@code
   * sluice_reserve_learned_evictions_total}, read from the learner at scrape time.
   */
  public void bindReserves(OutputReserves reserves) {
    ProcessGauges.bindReserves(registry, reserves);
  }

  /**
   * {@code sluice_degraded_total{pool,class,rung,trigger}}: a request a rung of its class's degrade
   * ladder ran ({@code pool}: its own pool, where it could not run as asked).
   */
  public void degraded(String pool, String cls, String rung, String trigger) {
    counter(MetricNames.DEGRADED, "pool", pool, "class", cls, "rung", rung, "trigger", trigger)
        .increment();
  }

  /**
   * {@code sluice_degrade_skipped_total{pool,class,rung,cause}}: a rung that did not admit a
   * request the ladder was tried for ({@code rung} {@code all}, {@code cause} {@code forbidden}:
   * the request may not be degraded).
   */
  public void degradeSkipped(String pool, String cls, String rung, String cause) {
    counter(MetricNames.DEGRADE_SKIPPED, "pool", pool, "class", cls, "rung", rung, "cause", cause)
        .increment();
  }

  /** {@code sluice_reserve_decisions_total{pool,rule}}: the rule that gave a request's reserve. */
  public void reserveDecision(String pool, String rule) {
    reserveDecisionCounter(pool, rule).increment();
  }

  Counter reserveDecisionCounter(String pool, String rule) {
    return counter(MetricNames.RESERVE_DECISIONS, "pool", pool, "rule", rule);
  }

  public MeterRegistry registry() {
    return registry;
  }

  // the meters the feature modules bring, one per process each, made on first ask
  private final java.util.concurrent.ConcurrentMap<Class<?>, Object> parts =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * A feature's own meters ({@code type}, made once with this registry and ticker): one per
   * process, so a reload keeps what they count.
   */
  public <T> T part(
      Class<T> type, java.util.function.BiFunction<MeterRegistry, LongSupplier, T> make) {
    return type.cast(parts.computeIfAbsent(type, t -> make.apply(registry, tickerNanos)));
  }

  /**
   * Registers in-flight and capacity gauges for every pool and class of the controller. Called
   * again after a reload: the previous gauges are removed first (so none is re-registered onto a
   * stale pool object or class index, and Micrometer has nothing to warn about), and every meter of
   * a pool or class the new policy no longer has (decision counters, latency, tokens, ...) is
   * removed, so a renamed pool leaves no stale series behind.
   */
  public synchronized void bindPools(AdmissionController controller) {
    PoolGauges.Gone gone = pools.bind(controller);
    endUnseenPools.removeAll(gone.pools());
    if (!gone.isEmpty()) {
      meters.removeTagged(gone.pools(), gone.classes());
      classMeters
          .values()
          .removeIf(m -> gone.pools().contains(m.pool()) || gone.classes().contains(m.cls()));
      lastClass = null;
    }
  }

  /** The series the shipped alerts read, at zero for every pool ({@link AlertSeries}). */
  public synchronized void seedAlertSeries(AdmissionController controller, String tier) {
    AlertSeries.seed(this, controller, tier);
  }

  public void decision(
      String pool,
      String cls,
      String tier,
      String decision,
      String reason,
      String phase,
      long nanos) {
    decisionCounter(pool, cls, tier, decision, reason).increment();
    decisionLatency(phase, decision).record(nanos, TimeUnit.NANOSECONDS);
  }

  Counter decisionCounter(String pool, String cls, String tier, String decision, String reason) {
    return counter(
        MetricNames.DECISIONS,
        "pool",
        pool,
        "class",
        cls,
        "tier",
        tier,
        "decision",
        decision,
        "reason",
        reason);
  }

  private Timer decisionLatency(String phase, String decision) {
    return timer(MetricNames.DECISION_LATENCY, "phase", phase, "decision", decision);
  }

  /**
   * Shadow mode: a request enforcement would have refused ({@code would} = {@code reject}) or
   * queued ({@code queue}) with {@code reason} was admitted at once.
   */
  public void shadowed(String pool, String cls, String tier, String would, Reason reason) {
    counter(
            MetricNames.SHADOW_DECISIONS,
            "pool",
            pool,
            "class",
            cls,
            "tier",
            tier,
            "would",
            would,
            "reason",
            reason.code())
        .increment();
  }

  /** A request was queued (held with an override_message_timeout). */
  public void queued(
      String pool, String cls, String tier, String phase, long decisionNanos, long predictedNanos) {
    decision(pool, cls, tier, "queue", "queued", phase, decisionNanos);
    counter(MetricNames.OVERRIDES_SENT, "pool", pool).increment();
    timer(MetricNames.QUEUE_WAIT_PREDICTED, "pool", pool, "class", cls)
        .record(Math.max(0, predictedNanos), TimeUnit.NANOSECONDS);
  }

  /** A queued request left its queue: admitted, expired, refused (shutdown) or cancelled. */
  public void dequeued(String pool, String cls, String outcome, long waitedNanos) {
    timer(MetricNames.QUEUE_WAIT, "pool", pool, "class", cls, "outcome", outcome)
        .record(Math.max(0, waitedNanos), TimeUnit.NANOSECONDS);
  }

  /**
   * The process's workflow budget: {@code sluice_workflows_in_flight{pool}} reads it, and {@code
   * sluice_workflows_untracked_total} counts the requests it let through untracked (full).
   */
  public synchronized void bindWorkflows(WorkflowBudget budget) {
    pools.bindWorkflows(budget);
  }

  /**
   * Fan-out work units an admitted request added to its pool ({@code pools.<name>.fanout}), by
   * {@code source}: tools, tool_choice, parallel_tool_calls, declared.
   */
  public void fanOut(String pool, String source, long workUnits) {
    if (workUnits > 0) {
      counter(MetricNames.FANOUT_WORK, "pool", pool, "source", source).increment(workUnits);
    }
  }

  /**
   * A stream of {@code pool} whose response end Sluice will not see ({@code cause}, e.g. {@code
   * body_mode_none}): its permit is held for a predicted tail. The first one of each pool is logged
   * at WARN with the fix, and with whether the hold is learned or the pool's {@code
   * defaultServiceTime} ({@code guessed}: no response end seen on the pool yet).
   */
  public void responseEndUnseen(String pool, String cause) {
    responseEndUnseen(pool, cause, false, null);
  }

  /** As {@link #responseEndUnseen(String, String)}, for a pool of this policy. */
  public void responseEndUnseen(PoolPolicy pool, String cause, boolean guessed) {
    responseEndUnseen(pool.name(), cause, guessed, pool.defaultServiceTime());
  }

  private void responseEndUnseen(
      String pool, String cause, boolean guessed, @Nullable Duration guess) {
    counter(MetricNames.RESPONSE_END_UNSEEN, "pool", pool, "cause", cause).increment();
    if (endUnseenPools.add(pool)) {
      LOG.warn(
          "pool {}: a response whose end Sluice cannot see ({}): Envoy sends no response body and"
              + " may close the ext_proc stream at the response headers (the first token), so the"
              + " permit is held for the pool's predicted service time instead of to the answer's"
              + " end{}. Set the ext_proc filter's processing_mode.response_body_mode: STREAMED for"
              + " exact accounting (sluice_response_end_unseen_total, docs/envoy.md). Logged once"
              + " per pool.",
          pool,
          cause,
          guessed && guess != null
              ? " — and on a guess: no response end has been seen on this pool yet, so that is"
                  + " its defaultServiceTime ("
                  + guess.toMillis()
                  + " ms); a route of the pool with STREAMED would teach it"
                  + " (sluice_pool_service_time_source)"
              : " (learned from the pool's answers seen to end)");
    }
  }

  /** Pools that saw a response whose end Sluice cannot see, in no order (for /readyz). */
  public Set<String> responseEndUnseenPools() {
    return Set.copyOf(endUnseenPools);
  }

  /**
   * A capped tenant's slot across replicas was asked of the store: {@code granted}, {@code denied}
   * (the tenant's cap is reached across replicas) or {@code store_failed}.
   */
  public void tenantSlot(String pool, String result) {
    counter(MetricNames.TENANT_SLOTS, "pool", pool, "result", result).increment();
  }

  /** The tenant quota store did not answer; {@code mode} is what was done (open/closed). */
  public void quotaStoreFailure(String mode) {
    counter(MetricNames.QUOTA_STORE_FAILURES, "mode", mode).increment();
  }

  /** Tokens given back to or charged to tenant buckets when actual usage was known. */
  public void reconciled(long refunded, long overcharged) {
    if (refunded > 0) {
      counter(MetricNames.QUOTA_RECONCILED, "direction", "refunded").increment(refunded);
    }
    if (overcharged > 0) {
      counter(MetricNames.QUOTA_RECONCILED, "direction", "overcharged").increment(overcharged);
    }
  }

  public void retryAfter(String reason, long seconds) {
    summary(MetricNames.RETRY_AFTER, "reason", reason).record(seconds);
  }

  public void estimated(String pool, String cls, long input, long output) {
    estimatedSummary(pool, cls, "input").record(input);
    estimatedSummary(pool, cls, "output").record(output);
  }

  /**
   * Actual ÷ estimated tokens of a complete answer, by pool and request format: a histogram per
   * direction (1.0 = the estimate was right; output above 1 means the reserve was too small).
   */
  public void actualToEstimate(
      String pool, String format, long input, long output, long estInput, long estOutput) {
    if (estInput > 0) {
      ratio(pool, format, "input").record((double) input / estInput);
    }
    if (estOutput > 0) {
      ratio(pool, format, "output").record((double) output / estOutput);
    }
  }

  private static final double[] RATIO_BUCKETS = {
    0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2, 4, 8
  };

  DistributionSummary ratio(String pool, String format, String direction) {
    return meters.histogram(
        MetricNames.TOKENS_ACTUAL_TO_ESTIMATE,
        RATIO_BUCKETS,
        "actual ÷ estimated tokens of a complete answer",
        "pool",
        pool,
        "format",
        format,
        "direction",
        direction);
  }

  /** Tokens charged to the tenant when a request that ran ended, by the rule that set them. */
  public void charged(String pool, String rule, long input, long output) {
    if (input > 0) {
      chargedCounter(pool, rule, "input").increment(input);
    }
    if (output > 0) {
      chargedCounter(pool, rule, "output").increment(output);
    }
  }

  Counter chargedCounter(String pool, String rule, String direction) {
    return counter(MetricNames.TOKENS_CHARGED, "pool", pool, "rule", rule, "direction", direction);
  }

  /**
   * An answer streamed past its output reserve: its work in flight grew by {@code addedWork};
   * {@code first} for the first growth of that request.
   */
  public void outputOverran(String pool, long addedWork, boolean first) {
    if (first) {
      counter(MetricNames.OUTPUT_OVERRUNS, "pool", pool).increment();
    }
    if (addedWork > 0) {
      counter(MetricNames.OUTPUT_OVERRUN_WORK, "pool", pool).increment(addedWork);
    }
  }

  public void estimateFallback(String cause) {
    counter(MetricNames.ESTIMATE_FALLBACKS, "cause", cause).increment();
  }

  /**
   * The meters of one (pool, class, tier), found once per stream: the admit, estimate and release
   * of an admitted request then update their meters without building a tag key per call.
   */
  public ClassMeters forClass(String pool, String cls, String tier) {
    // The names come from the policy objects: the same instances request after request, so the
    // last answer is found by reference first (a miss takes the map, which compares by value).
    ClassMeters last = lastClass;
    if (last != null && last.isFor(pool, cls, tier)) {
      return last;
    }
    ClassKey key = new ClassKey(pool, cls, tier);
    ClassMeters m = classMeters.get(key);
    if (m == null) {
      m = classMeters.computeIfAbsent(key, k -> new ClassMeters(this, pool, cls, tier));
    }
    lastClass = m;
    return m;
  }

  private volatile @Nullable ClassMeters lastClass;

  private record ClassKey(String pool, String cls, String tier) {}

  /**
   * The admit latency timer of {@code phase} ({@link ClassMeters#admitted}): the two phases a
   * decision is made in are held (the body's registered on first use, as before), no map lookup.
   */
  Timer admitLatency(String phase) {
    if ("headers".equals(phase)) {
      return admitAtHeaders;
    }
    if ("body".equals(phase)) {
      Timer t = admitAtBody;
      if (t == null) { // a benign race: both threads get the one registered timer
        admitAtBody = t = admitLatency.computeIfAbsent(phase, ph -> decisionLatency(ph, "admit"));
      }
      return t;
    }
    return admitLatency.computeIfAbsent(phase, ph -> decisionLatency(ph, "admit"));
  }

  private volatile @Nullable Timer admitAtBody;

  DistributionSummary actualSummary(String pool, String cls, String direction) {
    return meters.summary(
        MetricNames.TOKENS_ACTUAL, "pool", pool, "class", cls, "direction", direction);
  }

  Timer permitHold(String pool, String cls) {
    return meters.timer(MetricNames.PERMIT_HOLD, "pool", pool, "class", cls);
  }

  DistributionSummary estimatedSummary(String pool, String cls, String direction) {
    return meters.summary(
        MetricNames.TOKENS_ESTIMATED, "pool", pool, "class", cls, "direction", direction);
  }

  Counter releasedCounter(String pool, String cls, Outcome outcome) {
    String o = outcome.name().toLowerCase(Locale.ROOT);
    return counter(MetricNames.PERMITS_RELEASED, "pool", pool, "class", cls, "outcome", o);
  }

  public void released(String pool, String cls, Outcome outcome, long heldNanos) {
    releasedCounter(pool, cls, outcome).increment();
    permitHold(pool, cls).record(Math.max(0, heldNanos), TimeUnit.NANOSECONDS);
  }

  public void upstreamResponse(String pool, int status) {
    upstreamCounter(pool, status).increment();
  }

  Counter upstreamCounter(String pool, int status) {
    String statusClass =
        status == 429 || status == 503 ? String.valueOf(status) : (status / 100) + "xx";
    return counter(MetricNames.UPSTREAM_RESPONSES, "pool", pool, "status", statusClass);
  }

  public void streamError(String cause) {
    counter(MetricNames.STREAM_ERRORS, "cause", cause).increment();
  }

  /** An ext_proc stream refused when it opened ({@code reason}: max_streams, draining). */
  public void streamRefused(String reason) {
    counter(MetricNames.STREAMS_REFUSED, "reason", reason).increment();
  }

  /**
   * An ext_proc stream that ended before its request was decided ({@code phase}: first_message,
   * request_headers, request_body, queued; {@code end}: cancelled, completed, failed).
   */
  public void streamUndecided(String phase, String end) {
    counter(MetricNames.STREAMS_UNDECIDED, "phase", phase, "end", end).increment();
  }

  /**
   * A stream whose first message was {@code response_headers}: a local reply of a filter before
   * ext_proc (jwt_authn's 401, the rate-limit filter's 429), passed through with CONTINUE; {@code
   * status} is its status class ({@code 2xx} … {@code 5xx}, {@code other}).
   */
  public void localReplyPassed(String status) {
    counter(MetricNames.LOCAL_REPLIES, "status", status).increment();
  }

  private Counter counter(String name, String... tags) {
    return meters.counter(name, tags);
  }

  private DistributionSummary summary(String name, String... tags) {
    return meters.summary(name, tags);
  }

  private Timer timer(String name, String... tags) {
    return meters.timer(name, tags);
  }

  /** The decision-latency histogram buckets (a copy), shared with the rate limit service. */
  public static Duration[] decisionBuckets() {
    return MeterCache.DECISION_BUCKETS.clone();
  }
}
