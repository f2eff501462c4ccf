package io.sluice.observability;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.adapt.AnswerSource;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.quota.WorkflowBudget;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The per-pool and per-class gauges of the controller's pools, read at scrape time: in flight,
 * queued, capacity and, for an adaptive pool, why and how its limit moves. Rebound on every reload
 * ({@link AdmissionMetrics#bindPools}); thread-safe.
 */
final class PoolGauges {
  private final MeterRegistry registry;
  private final LongSupplier tickerNanos;

  /** The gauges {@link #bind} registered last, and the names of their pools and classes. */
  private final List<Meter> poolGauges = new ArrayList<>();

  private Set<String> boundPools = Set.of();
  private Set<String> boundClasses = Set.of();

  // the process's workflow budget (bindWorkflows), read by the per-pool gauge
  private volatile @Nullable WorkflowBudget workflows;

  PoolGauges(MeterRegistry registry, LongSupplier tickerNanos) {
    this.registry = registry;
    this.tickerNanos = tickerNanos;
  }

  /** The pools and classes a {@link #bind} no longer found. */
  record Gone(Set<String> pools, Set<String> classes) {
    boolean isEmpty() {
      return pools.isEmpty() && classes.isEmpty();
    }
  }

  /**
   * Registers the gauges of every pool and class of the controller, after removing those it
   * registered last (so none is re-registered onto a stale pool object or class index, and
   * Micrometer has nothing to warn about). Returns the pools and classes gone since the last call,
   * whose other meters the caller removes.
   */
  synchronized Gone bind(AdmissionController controller) {
    for (Meter m : poolGauges) {
      registry.remove(m);
    }
    poolGauges.clear();
    Set<String> pools = new LinkedHashSet<>();
    Set<String> classNames = new LinkedHashSet<>();
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
    Set<String> gonePools = new HashSet<>(boundPools);
    gonePools.removeAll(pools);
    Set<String> goneClasses = new HashSet<>(boundClasses);
    goneClasses.removeAll(classNames);
    boundPools = Set.copyOf(pools);
    boundClasses = Set.copyOf(classNames);
    return new Gone(gonePools, goneClasses);
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
          FunctionCounter.builder(
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
    for (AnswerSource src : AnswerSource.values()) {
      poolGauges.add(
          FunctionCounter.builder(MetricNames.POOL_ADAPTIVE_ANSWERS, pool, s -> s.answers(src))
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

  /** See {@link AdmissionMetrics#bindWorkflows}. */
  synchronized void bindWorkflows(WorkflowBudget budget) {
    if (workflows == null) {
      FunctionCounter.builder(MetricNames.WORKFLOWS_UNTRACKED, budget, WorkflowBudget::untracked)
          .description("requests run without a workflow budget: too many workflows tracked")
          .register(registry);
    }
    workflows = budget;
  }

  private double workflowsInFlight(String pool) {
    WorkflowBudget b = workflows;
    return b == null ? 0 : b.workflows(pool);
  }
}
