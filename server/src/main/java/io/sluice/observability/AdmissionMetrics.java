package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.PoolState;
import io.sluice.core.estimate.TokenCountCache;
import io.sluice.core.policy.ClassPolicy;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.LongSupplier;

/**
 * Micrometer meters for the admission path. Adapters call these after the core returns a decision;
 * the core itself never sees Micrometer. Meters are cached per tag set (all tags are bounded), so
 * the hot path is a map lookup and an increment.
 */
public final class AdmissionMetrics {
  private final MeterRegistry registry;
  private final LongSupplier tickerNanos;
  private final ConcurrentMap<MeterKey, Counter> counters = new ConcurrentHashMap<>();
  private final ConcurrentMap<MeterKey, DistributionSummary> summaries = new ConcurrentHashMap<>();
  private final ConcurrentMap<MeterKey, Timer> timers = new ConcurrentHashMap<>();
  private final ConcurrentMap<MeterKey, ClassMeters> classMeters = new ConcurrentHashMap<>();
  private final ConcurrentMap<String, Timer> admitLatency = new ConcurrentHashMap<>();
  private final Timer admitAtHeaders; // the latency timer most admitted requests record into
  // pools that saw a response whose end Sluice does not see (WARN once each; /readyz); configured
  // names only, dropped with their pool on reload
  private final java.util.Set<String> endUnseenPools = ConcurrentHashMap.newKeySet();
  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(AdmissionMetrics.class);

  public AdmissionMetrics(MeterRegistry registry, LongSupplier tickerNanos) {
    this.registry = registry;
    this.tickerNanos = tickerNanos;
    this.admitAtHeaders =
        admitLatency.computeIfAbsent("headers", ph -> decisionLatency(ph, "admit"));
  }

  /**
   * Registers {@code sluice_extproc_streams_total{event}} and the open-streams gauge on the
   * adapter's own counts (read at scrape time).
   */
  public void bindStreams(StreamTally tally) {
    FunctionCounter.builder(MetricNames.STREAMS, tally, StreamTally::opened)
        .tag("event", "opened")
        .description("ext_proc streams opened, and closed by how they ended")
        .register(registry);
    for (StreamTally.Close how : StreamTally.Close.values()) {
      FunctionCounter.builder(MetricNames.STREAMS, tally, t -> t.closed(how))
          .tag("event", how.tag())
          .description("ext_proc streams opened, and closed by how they ended")
          .register(registry);
    }
    Gauge.builder(MetricNames.STREAMS_OPEN, tally, StreamTally::open)
        .description("ext_proc streams currently open")
        .register(registry);
  }

  /**
   * Registers {@code sluice_estimate_token_cache_lookups_total{result="hit"|"miss"}}, the weight
   * held ({@code sluice_estimate_token_cache_chars}) and its entries, read from the cache at scrape
   * time.
   */
  public void bindTokenCache(TokenCountCache cache) {
    FunctionCounter.builder(MetricNames.TOKEN_CACHE_LOOKUPS, cache, TokenCountCache::hits)
        .tag("result", "hit")
        .description("BPE token-count cache lookups of prompt pieces, by result")
        .register(registry);
    FunctionCounter.builder(MetricNames.TOKEN_CACHE_LOOKUPS, cache, TokenCountCache::misses)
        .tag("result", "miss")
        .description("BPE token-count cache lookups of prompt pieces, by result")
        .register(registry);
    Gauge.builder(MetricNames.TOKEN_CACHE_CHARS, cache, TokenCountCache::weightedChars)
        .description("characters held by the token-count cache, with per-entry overhead")
        .register(registry);
    Gauge.builder(MetricNames.TOKEN_CACHE_ENTRIES, cache, TokenCountCache::entries)
        .description("prompt pieces held by the token-count cache")
        .register(registry);
  }

  /**
   * Registers the learned output reserve's {@code sluice_reserve_learned_keys} gauge and {@code
   * sluice_reserve_learned_evictions_total}, read from the learner at scrape time.
   */
  public void bindReserves(io.sluice.core.estimate.OutputReserves reserves) {
    Gauge.builder(
            MetricNames.RESERVE_LEARNED_KEYS,
            reserves,
            io.sluice.core.estimate.OutputReserves::keyCount)
        .description("keys the learned output reserve holds (coarse and per tenant)")
        .register(registry);
    FunctionCounter.builder(
            MetricNames.RESERVE_LEARNED_EVICTIONS,
            reserves,
            io.sluice.core.estimate.OutputReserves::evictions)
        .description("learned output reserve keys evicted to stay within maxKeys")
        .register(registry);
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
    counter(MetricNames.RESERVE_DECISIONS, "pool", pool, "rule", rule).increment();
  }

  public MeterRegistry registry() {
    return registry;
  }

  // retries: the process's retry meters, made on first use
  private volatile @org.jspecify.annotations.Nullable RetryMetrics retries;

  /** Retry control's meters. */
  public RetryMetrics retries() {
    RetryMetrics r = retries;
    if (r == null) {
      synchronized (this) {
        r = retries;
        if (r == null) {
          r = new RetryMetrics(registry, tickerNanos);
          retries = r;
        }
      }
    }
    return r;
  }

  /** The per-pool and per-class gauges {@link #bindPools} registered last, and their names. */
  private final List<io.micrometer.core.instrument.Meter> poolGauges = new java.util.ArrayList<>();

  private java.util.Set<String> boundPools = java.util.Set.of();
  private java.util.Set<String> boundClasses = java.util.Set.of();

  /**
   * Registers in-flight and capacity gauges for every pool and class of the controller. Called
   * again after a reload: the previous gauges are removed first (so none is re-registered onto a
   * stale pool object or class index, and Micrometer has nothing to warn about), and every meter of
   * a pool or class the new policy no longer has (decision counters, latency, tokens, ...) is
   * removed, so a renamed pool leaves no stale series behind.
   */
  public synchronized void bindPools(AdmissionController controller) {
    for (io.micrometer.core.instrument.Meter m : poolGauges) {
      registry.remove(m);
    }
    poolGauges.clear();
    java.util.Set<String> pools = new java.util.LinkedHashSet<>();
    java.util.Set<String> classNames = new java.util.LinkedHashSet<>();
    for (PoolState pool : controller.pools()) {
      String p = pool.policy().name();
      pools.add(p);
      poolGauges.add(
          Gauge.builder(
                  MetricNames.POOL_CAPACITY, pool, s -> s.configuredPolicy().capacityWorkUnits())
              .tag("pool", p)
              .description("pool capacity in work units as configured (an adaptive pool's ceiling)")
              .register(registry));
      bindCapacity(pool, p);
      poolGauges.add(
          Gauge.builder(MetricNames.WORKFLOWS_IN_FLIGHT, this, m -> m.workflowsInFlight(p))
              .tag("pool", p)
              .description("workflows holding requests in flight or queued (pools.*.workflow)")
              .register(registry));
      poolGauges.add(
          Gauge.builder(MetricNames.PERMITS_TAIL_HELD, pool, PoolState::tailsHeld)
              .tag("pool", p)
              .description(
                  "permits held now for a predicted tail: their response end is not seen"
                      + " (response_body_mode NONE)")
              .register(registry));
      for (boolean guess : new boolean[] {true, false}) {
        poolGauges.add(
            Gauge.builder(
                    MetricNames.POOL_SERVICE_TIME_SOURCE,
                    pool,
                    s -> s.serviceTimeGuessed() == guess ? 1 : 0)
                .tag("pool", p)
                .tag("source", guess ? "guess" : "learned")
                .description(
                    "1 for where the pool's service time comes from now: guess (its"
                        + " defaultServiceTime: no response end seen yet) or learned")
                .register(registry));
      }
      poolGauges.add(
          Gauge.builder(
                  MetricNames.POOL_COMPLETION_RATE,
                  pool,
                  s -> s.snapshot(tickerNanos.getAsLong()).completedWorkPerSecond())
              .tag("pool", p)
              .description("recent completed work units per second (decaying average)")
              .register(registry));
      List<ClassPolicy> classes = pool.classes();
      for (int i = 0; i < classes.size(); i++) {
        final int k = i;
        String c = classes.get(i).name();
        classNames.add(c);
        poolGauges.add(
            Gauge.builder(MetricNames.QUEUE_DEPTH, pool, s -> s.queueDepth(c))
                .tags("pool", p, "class", c)
                .description("requests waiting in the class queue")
                .register(registry));
        poolGauges.add(
            Gauge.builder(MetricNames.QUEUE_WORK, pool, s -> s.queuedWork(c))
                .tags("pool", p, "class", c)
                .description("work units waiting in the class queue")
                .register(registry));
        poolGauges.add(
            Gauge.builder(
                    MetricNames.QUEUE_OLDEST_AGE,
                    pool,
                    s -> s.oldestQueuedAgeNanos(c, tickerNanos.getAsLong()) / 1e9)
                .tags("pool", p, "class", c)
                .baseUnit("seconds")
                .description("age of the oldest request waiting in the class queue (0: none)")
                .register(registry));
        poolGauges.add(
            Gauge.builder(
                    MetricNames.WORK_IN_FLIGHT,
                    pool,
                    s -> s.snapshot(tickerNanos.getAsLong()).classWork()[k])
                .tags("pool", p, "class", c)
                .description("token-weighted work units in flight")
                .register(registry));
        poolGauges.add(
            Gauge.builder(
                    MetricNames.REQUESTS_IN_FLIGHT,
                    pool,
                    s -> s.snapshot(tickerNanos.getAsLong()).classRequests()[k])
                .tags("pool", p, "class", c)
                .description("requests holding a permit")
                .register(registry));
      }
    }
    java.util.Set<String> gonePools = new java.util.HashSet<>(boundPools);
    gonePools.removeAll(pools);
    java.util.Set<String> goneClasses = new java.util.HashSet<>(boundClasses);
    goneClasses.removeAll(classNames);
    endUnseenPools.removeAll(gonePools);
    if (!gonePools.isEmpty() || !goneClasses.isEmpty()) {
      removeMetersOf(gonePools, goneClasses);
    }
    boundPools = java.util.Set.copyOf(pools);
    boundClasses = java.util.Set.copyOf(classNames);
  }

  /**
   * The effective capacity of every pool (an adaptive pool's learned limit; a fixed pool's own
   * numbers), and for an adaptive pool why and how its limit moves.
   */
  private void bindCapacity(PoolState pool, String p) {
    poolGauges.add(
        Gauge.builder(MetricNames.POOL_WORK_OVERRUN, pool, PoolState::overrunWork)
            .tags("pool", p)
            .description(
                "work units in flight beyond the admitted estimates (answers past their reserve)")
            .register(registry));
    poolGauges.add(
        Gauge.builder(
                MetricNames.POOL_CAPACITY_EFFECTIVE, pool, s -> s.policy().capacityWorkUnits())
            .tags("pool", p, "dimension", "work_units")
            .description("work units the pool admits now (an adaptive pool's learned limit)")
            .register(registry));
    if (pool.configuredPolicy().maxRequests() > 0) {
      poolGauges.add(
          Gauge.builder(MetricNames.POOL_CAPACITY_EFFECTIVE, pool, s -> s.policy().maxRequests())
              .tags("pool", p, "dimension", "requests")
              .description("request slots the pool admits now (an adaptive pool's learned limit)")
              .register(registry));
    }
    if (!pool.configuredPolicy().adaptive().enabled()) {
      return;
    }
    for (AdaptiveLimit.Cause c : AdaptiveLimit.Cause.values()) {
      if (c == AdaptiveLimit.Cause.START) {
        continue;
      }
      poolGauges.add(
          io.micrometer.core.instrument.FunctionCounter.builder(
                  MetricNames.POOL_CAPACITY_CHANGES,
                  pool,
                  s -> {
                    AdaptiveLimit a = s.adaptive();
                    return a == null ? 0 : a.changes(c);
                  })
              .tags("pool", p, "cause", c.label())
              .description("changes of the adaptive limit by this replica, by cause")
              .register(registry));
    }
    for (io.sluice.core.adapt.AnswerSource src : io.sluice.core.adapt.AnswerSource.values()) {
      poolGauges.add(
          io.micrometer.core.instrument.FunctionCounter.builder(
                  MetricNames.POOL_ADAPTIVE_ANSWERS, pool, s -> s.answers(src))
              .tags("pool", p, "source", src.label())
              .description(
                  "answers to an adaptive pool's requests by who produced them; only the"
                      + " upstream's move the limit")
              .register(registry));
    }
    poolGauges.add(
        Gauge.builder(
                MetricNames.POOL_UPSTREAM_PAUSE,
                pool,
                s -> {
                  AdaptiveLimit a = s.adaptive();
                  return a == null ? 0 : a.pauseRemainingNanos(tickerNanos.getAsLong()) / 1e9;
                })
            .tag("pool", p)
            .description("seconds new admission stays paused on the upstream's Retry-After")
            .register(registry));
    poolGauges.add(
        Gauge.builder(
                MetricNames.POOL_LATENCY_RATIO,
                pool,
                s -> {
                  AdaptiveLimit a = s.adaptive();
                  return a == null ? Double.NaN : a.snapshot(tickerNanos.getAsLong()).lastRatio();
                })
            .tag("pool", p)
            .description("recent latency over its no-load baseline at the last latency verdict")
            .register(registry));
    for (AdaptiveLimit.Signal sig : AdaptiveLimit.Signal.values()) {
      poolGauges.add(
          Gauge.builder(
                  MetricNames.POOL_LATENCY_BASELINE,
                  pool,
                  s -> {
                    AdaptiveLimit a = s.adaptive();
                    return a == null ? Double.NaN : a.baseline(sig, tickerNanos.getAsLong()) / 1e9;
                  })
              .tags("pool", p, "signal", sig.label())
              .description("the no-load latency baseline of the signal (seconds)")
              .register(registry));
    }
  }

  /** Removes every Sluice meter tagged with one of these pools or classes, and its cache entry. */
  private void removeMetersOf(java.util.Set<String> gonePools, java.util.Set<String> goneClasses) {
    java.util.Set<io.micrometer.core.instrument.Meter.Id> removed = new java.util.HashSet<>();
    for (io.micrometer.core.instrument.Meter m : List.copyOf(registry.getMeters())) {
      io.micrometer.core.instrument.Meter.Id id = m.getId();
      if (!id.getName().startsWith("sluice.")) {
        continue;
      }
      String p = id.getTag("pool");
      String c = id.getTag("class");
      if ((p != null && gonePools.contains(p)) || (c != null && goneClasses.contains(c))) {
        registry.remove(m);
        removed.add(id);
      }
    }
    counters.values().removeIf(m -> removed.contains(m.getId()));
    summaries.values().removeIf(m -> removed.contains(m.getId()));
    timers.values().removeIf(m -> removed.contains(m.getId()));
    classMeters.values().removeIf(m -> gonePools.contains(m.pool) || goneClasses.contains(m.cls));
    lastClass = null;
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
    decisionLatency(phase, decision).record(nanos, java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  private Counter decisionCounter(
      String pool, String cls, String tier, String decision, String reason) {
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
  public void shadowed(
      String pool, String cls, String tier, String would, io.sluice.core.admission.Reason reason) {
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
        .record(Math.max(0, predictedNanos), java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  /** A queued request left its queue: admitted, expired, refused (shutdown) or cancelled. */
  public void dequeued(String pool, String cls, String outcome, long waitedNanos) {
    timer(MetricNames.QUEUE_WAIT, "pool", pool, "class", cls, "outcome", outcome)
        .record(Math.max(0, waitedNanos), java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  // the process's workflow budget (bindWorkflows), read by the per-pool gauge
  private volatile io.sluice.core.quota.@org.jspecify.annotations.Nullable WorkflowBudget workflows;

  /**
   * The process's workflow budget: {@code sluice_workflows_in_flight{pool}} reads it, and {@code
   * sluice_workflows_untracked_total} counts the requests it let through untracked (full).
   */
  public synchronized void bindWorkflows(io.sluice.core.quota.WorkflowBudget budget) {
    if (workflows == null) {
      io.micrometer.core.instrument.FunctionCounter.builder(
              MetricNames.WORKFLOWS_UNTRACKED,
              budget,
              io.sluice.core.quota.WorkflowBudget::untracked)
          .description("requests run without a workflow budget: too many workflows tracked")
          .register(registry);
    }
    workflows = budget;
  }

  private double workflowsInFlight(String pool) {
    io.sluice.core.quota.WorkflowBudget b = workflows;
    return b == null ? 0 : b.workflows(pool);
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
   * A capped tenant's slot across replicas was asked of the store: {@code granted}, {@code denied}
   * (the tenant's cap is reached across replicas) or {@code store_failed}.
   */
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
  public void responseEndUnseen(
      io.sluice.core.policy.PoolPolicy pool, String cause, boolean guessed) {
    responseEndUnseen(pool.name(), cause, guessed, pool.defaultServiceTime());
  }

  private void responseEndUnseen(
      String pool,
      String cause,
      boolean guessed,
      @org.jspecify.annotations.Nullable Duration guess) {
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
  public java.util.Set<String> responseEndUnseenPools() {
    return java.util.Set.copyOf(endUnseenPools);
  }

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

  private DistributionSummary ratio(String pool, String format, String direction) {
    String[] tags = {"pool", pool, "format", format, "direction", direction};
    MeterKey key = new MeterKey(MetricNames.TOKENS_ACTUAL_TO_ESTIMATE, tags);
    DistributionSummary d = summaries.get(key);
    return d != null
        ? d
        : summaries.computeIfAbsent(
            key,
            k ->
                DistributionSummary.builder(MetricNames.TOKENS_ACTUAL_TO_ESTIMATE)
                    .tags(tags)
                    .serviceLevelObjectives(RATIO_BUCKETS)
                    .description("actual ÷ estimated tokens of a complete answer")
                    .register(registry));
  }

  /** Tokens charged to the tenant when a request that ran ended, by the rule that set them. */
  public void charged(String pool, String rule, long input, long output) {
    if (input > 0) {
      counter(MetricNames.TOKENS_CHARGED, "pool", pool, "rule", rule, "direction", "input")
          .increment(input);
    }
    if (output > 0) {
      counter(MetricNames.TOKENS_CHARGED, "pool", pool, "rule", rule, "direction", "output")
          .increment(output);
    }
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
    if (last != null && last.pool == pool && last.cls == cls && last.tier == tier) {
      return last;
    }
    MeterKey key = new MeterKey("", new String[] {pool, cls, tier});
    ClassMeters m = classMeters.get(key);
    if (m == null) {
      m = classMeters.computeIfAbsent(key, k -> new ClassMeters(pool, cls, tier));
    }
    lastClass = m;
    return m;
  }

  private volatile ClassMeters lastClass;

  /** See {@link #forClass}. Meters are registered on first use, as with the other methods. */
  public final class ClassMeters {
    private final String pool;
    private final String cls;
    private final String tier;
    private volatile Counter admitted;
    private volatile DistributionSummary estimatedInput;
    private volatile DistributionSummary estimatedOutput;
    private volatile Timer permitHold;
    private final java.util.concurrent.atomic.AtomicReferenceArray<Counter> released =
        new java.util.concurrent.atomic.AtomicReferenceArray<>(Outcome.values().length);
    // actual/input, actual/output
    private final java.util.concurrent.atomic.AtomicReferenceArray<DistributionSummary> actual =
        new java.util.concurrent.atomic.AtomicReferenceArray<>(2);
    // by status class: 1 1xx .. 5 5xx, 6 429, 7 503
    private final java.util.concurrent.atomic.AtomicReferenceArray<Counter> upstream =
        new java.util.concurrent.atomic.AtomicReferenceArray<>(8);

    private ClassMeters(String pool, String cls, String tier) {
      this.pool = pool;
      this.cls = cls;
      this.tier = tier;
    }

    /** Same meters as {@code decision(pool, cls, tier, "admit", "admitted", phase, nanos)}. */
    public void admitted(String phase, long nanos) {
      Counter c = admitted;
      if (c == null) {
        admitted = c = decisionCounter(pool, cls, tier, "admit", "admitted");
      }
      c.increment();
      Timer t =
          "headers".equals(phase)
              ? admitAtHeaders
              : admitLatency.computeIfAbsent(phase, ph -> decisionLatency(ph, "admit"));
      t.record(nanos, java.util.concurrent.TimeUnit.NANOSECONDS);
    }

    /** Same meters as {@code estimated(pool, cls, input, output)}. */
    public void estimated(long input, long output) {
      DistributionSummary in = estimatedInput;
      DistributionSummary out = estimatedOutput;
      if (in == null || out == null) {
        estimatedInput = in = estimatedSummary(pool, cls, "input");
        estimatedOutput = out = estimatedSummary(pool, cls, "output");
      }
      in.record(input);
      out.record(output);
    }

    /**
     * The usage of a complete answer: {@code sluice_tokens_actual} by class, and actual ÷ estimate
     * by {@code format} ({@link AdmissionMetrics#actualToEstimate}).
     */
    public void actual(String format, long input, long output, long estInput, long estOutput) {
      actualSummary(0).record(input);
      actualSummary(1).record(output);
      actualToEstimate(pool, format, input, output, estInput, estOutput);
    }

    private DistributionSummary actualSummary(int i) {
      DistributionSummary d = actual.get(i);
      if (d == null) { // a benign race: both threads get the one registered summary
        String direction = i % 2 == 0 ? "input" : "output";
        d = summary(MetricNames.TOKENS_ACTUAL, "pool", pool, "class", cls, "direction", direction);
        actual.set(i, d);
      }
      return d;
    }

    /** Same meter as {@code upstreamResponse(pool, status)}. */
    public void upstreamResponse(int status) {
      int i =
          status == 429 ? 6 : status == 503 ? 7 : status >= 100 && status < 600 ? status / 100 : 8;
      if (i == 8) { // outside 1xx..5xx: not cached (each odd status its own class)
        upstreamCounter(pool, status).increment();
        return;
      }
      Counter c = upstream.get(i);
      if (c == null) {
        c = upstreamCounter(pool, status);
        upstream.set(i, c);
      }
      c.increment();
    }

    /** Same meters as {@code released(pool, cls, outcome, heldNanos)}. */
    public void released(Outcome outcome, long heldNanos) {
      Counter c = released.get(outcome.ordinal());
      if (c == null) { // a benign race: both threads get the one registered counter
        c = releasedCounter(pool, cls, outcome);
        released.set(outcome.ordinal(), c);
      }
      c.increment();
      Timer t = permitHold;
      if (t == null) {
        permitHold = t = timer(MetricNames.PERMIT_HOLD, "pool", pool, "class", cls);
      }
      t.record(Math.max(0, heldNanos), java.util.concurrent.TimeUnit.NANOSECONDS);
    }
  }

  private DistributionSummary estimatedSummary(String pool, String cls, String direction) {
    return summary(
        MetricNames.TOKENS_ESTIMATED, "pool", pool, "class", cls, "direction", direction);
  }

  private Counter releasedCounter(String pool, String cls, Outcome outcome) {
    String o = outcome.name().toLowerCase(Locale.ROOT);
    return counter(MetricNames.PERMITS_RELEASED, "pool", pool, "class", cls, "outcome", o);
  }

  public void released(String pool, String cls, Outcome outcome, long heldNanos) {
    releasedCounter(pool, cls, outcome).increment();
    timer(MetricNames.PERMIT_HOLD, "pool", pool, "class", cls)
        .record(Math.max(0, heldNanos), java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  public void upstreamResponse(String pool, int status) {
    upstreamCounter(pool, status).increment();
  }

  private Counter upstreamCounter(String pool, int status) {
    String statusClass =
        status == 429 || status == 503 ? String.valueOf(status) : (status / 100) + "xx";
    return counter(MetricNames.UPSTREAM_RESPONSES, "pool", pool, "status", statusClass);
  }

  public void streamError(String cause) {
    counter(MetricNames.STREAM_ERRORS, "cause", cause).increment();
  }

  /**
   * An ext_proc stream that ended before its request was decided ({@code phase}: first_message,
   * request_headers, request_body, queued; {@code end}: cancelled, completed, failed).
   */
  /** An ext_proc stream refused when it opened ({@code reason}: max_streams, draining). */
  public void streamRefused(String reason) {
    counter(MetricNames.STREAMS_REFUSED, "reason", reason).increment();
  }

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

  // Meters are cached by (name, tags): a hit is one hash lookup on the caller's varargs array,
  // no copy; Micrometer's own registration path runs once per tag tuple.
  private Counter counter(String name, String... tags) {
    MeterKey key = new MeterKey(name, tags);
    Counter c = counters.get(key);
    return c != null
        ? c
        : counters.computeIfAbsent(key, k -> Counter.builder(name).tags(tags).register(registry));
  }

  private DistributionSummary summary(String name, String... tags) {
    MeterKey key = new MeterKey(name, tags);
    DistributionSummary d = summaries.get(key);
    return d != null
        ? d
        : summaries.computeIfAbsent(
            key, k -> DistributionSummary.builder(name).tags(tags).register(registry));
  }

  private Timer timer(String name, String... tags) {
    MeterKey key = new MeterKey(name, tags);
    Timer t = timers.get(key);
    if (t != null) {
      return t;
    }
    return timers.computeIfAbsent(
        key,
        k ->
            Timer.builder(name)
                .tags(tags)
                // Histogram buckets (not client-side percentiles): cheap to record on the hot path
                // and aggregatable across replicas with histogram_quantile().
                .serviceLevelObjectives(
                    name.equals(MetricNames.DECISION_LATENCY) ? DECISION_BUCKETS : WAIT_BUCKETS)
                .register(registry));
  }

  /**
   * Bucket bounds of {@code sluice_decision_latency_seconds}, 1 µs to 1 s; also those of the RLS
   * store round trip ({@code sluice_rls_store_latency_seconds}).
   */
  private static final Duration[] DECISION_BUCKETS = {
    Duration.ofNanos(1_000),
    Duration.ofNanos(2_500),
    Duration.ofNanos(5_000),
    Duration.ofNanos(10_000),
    Duration.ofNanos(25_000),
    Duration.ofNanos(50_000),
    Duration.ofNanos(100_000),
    Duration.ofNanos(250_000),
    Duration.ofNanos(500_000),
    Duration.ofMillis(1),
    Duration.ofNanos(2_500_000),
    Duration.ofMillis(5),
    Duration.ofMillis(10),
    Duration.ofMillis(50),
    Duration.ofMillis(250),
    Duration.ofSeconds(1)
  };

  /** The decision-latency histogram buckets (a copy), shared with the rate limit service. */
  public static Duration[] decisionBuckets() {
    return DECISION_BUCKETS.clone();
  }

  /** Bucket bounds of permit hold and queue wait timers: 10 ms to 5 min. */
  static final Duration[] WAIT_BUCKETS = {
    Duration.ofMillis(10),
    Duration.ofMillis(50),
    Duration.ofMillis(100),
    Duration.ofMillis(250),
    Duration.ofMillis(500),
    Duration.ofSeconds(1),
    Duration.ofSeconds(2),
    Duration.ofSeconds(5),
    Duration.ofSeconds(10),
    Duration.ofSeconds(30),
    Duration.ofSeconds(60),
    Duration.ofSeconds(120),
    Duration.ofSeconds(300)
  };

  /** A meter's name and tag key/value pairs; the array is the caller's, never mutated. */
  private static final class MeterKey {
    private final String name;
    private final String[] tags;
    private final int hash;

    MeterKey(String name, String[] tags) {
      this.name = name;
      this.tags = tags;
      this.hash = 31 * name.hashCode() + java.util.Arrays.hashCode(tags);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof MeterKey k
          && k.hash == hash
          && k.name.equals(name)
          && java.util.Arrays.equals(k.tags, tags);
    }

    @Override
    public int hashCode() {
      return hash;
    }
  }
}
