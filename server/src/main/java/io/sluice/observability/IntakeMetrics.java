package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.LongSupplier;

/**
 * Background intake's meters (docs/metrics.md, "Background intake"). Labels are bounded: pool and
 * class (config names), event (the {@code IntakeNote} constants); never a tenant or an operation
 * id. One per process ({@link AdmissionMetrics#part}); thread-safe.
 */
public final class IntakeMetrics {
  /**
   * Requests intake answered or refused, by pool, class and event: {@code queued}, {@code
   * backlog_full}, {@code store_failed}, {@code too_large}, {@code read}, {@code cancel}, {@code
   * unknown}, {@code malformed}.
   */
  public static final String REQUESTS = "sluice.intake.requests";

  /**
   * Jobs the dispatcher handled, by pool, class and event: {@code dispatched} (claimed and sent),
   * {@code completed}, {@code failed}, {@code returned} (refused by the pool for room: given back
   * to the store, claimed again at once by any replica), {@code late} (a completion that changed
   * nothing: the job had ended), {@code store_failed} (a claim, completion or give-back the store
   * did not acknowledge).
   */
  public static final String DISPATCH = "sluice.intake.dispatch";

  /**
   * Late requests ({@code intake.whenLate: accept}) by pool, class, the pool's refusal they were
   * taken in instead of ({@code reason}: {@code deadline_unreachable}, {@code queue_full}, {@code
   * queue_timeout}, {@code pool_saturated}, {@code class_share}) and what intake did ({@code
   * event}: {@code queued}; the refusal stood: {@code store_failed}, {@code backlog_full}, {@code
   * too_large}, {@code not_json}).
   */
  public static final String LATE = "sluice.intake.late";

  /** Jobs waiting in a pool's durable queue (pool-wide: every replica reads the same store). */
  public static final String BACKLOG = "sluice.intake.backlog.jobs";

  /** How long the pool's oldest waiting job has waited (seconds; 0 when none waits). */
  public static final String OLDEST = "sluice.intake.backlog.oldest.age";

  /**
   * Work units per second that left the pool's job queue lately while jobs waited, as the store's
   * answers told this replica (the start window's measured drain; NaN: no evidence yet).
   */
  public static final String DRAIN = "sluice.intake.backlog.drain";

  /** Jobs that expired waiting ({@code intake.freshness}), each counted once across replicas. */
  public static final String EXPIRED = "sluice.intake.expired";

  private final MeterRegistry registry;
  private final ConcurrentMap<String, Counter> counters = new ConcurrentHashMap<>();
  private final ConcurrentMap<String, Backlog> backlogs = new ConcurrentHashMap<>();

  /** The last backlog read of one pool. */
  private static final class Backlog {
    volatile long waiting;
    volatile double oldestSeconds;
    volatile double drain = Double.NaN;
    final Counter expired;

    Backlog(MeterRegistry registry, String pool) {
      Gauge.builder(BACKLOG, this, b -> b.waiting)
          .tag("pool", pool)
          .description("Background jobs waiting in the pool's durable queue (pool-wide)")
          .register(registry);
      Gauge.builder(OLDEST, this, b -> b.oldestSeconds)
          .tag("pool", pool)
          .baseUnit("seconds")
          .description("Age of the pool's oldest waiting background job (pool-wide; 0: none)")
          .register(registry);
      Gauge.builder(DRAIN, this, b -> b.drain)
          .tag("pool", pool)
          .baseUnit("work_units_per_second")
          .description("Work per second that left the pool's job queue lately while jobs waited")
          .register(registry);
      this.expired =
          Counter.builder(EXPIRED)
              .tag("pool", pool)
              .description("Background jobs that expired waiting, each counted by one replica")
              .register(registry);
    }
  }

  /** The process's intake meters (one per registry: {@code AdmissionMetrics.part}). */
  public IntakeMetrics(MeterRegistry registry, LongSupplier tickerNanos) {
    this.registry = registry;
  }

  /** One job the dispatcher handled ({@code event}). */
  public void dispatch(String pool, String cls, String event) {
    count(
        DISPATCH,
        "Background jobs the dispatcher handled, by pool, class and event",
        pool,
        cls,
        event);
  }

  /** One request intake handled ({@code event}). */
  public void request(String pool, String cls, String event) {
    count(
        REQUESTS,
        "Requests background intake answered or refused, by pool, class and event",
        pool,
        cls,
        event);
  }

  /**
   * One late request intake handled ({@code event}) instead of the pool's refusal ({@code reason}).
   */
  public void late(String pool, String cls, String reason, String event) {
    String key = LATE + '\0' + pool + '\0' + cls + '\0' + reason + '\0' + event;
    Counter c = counters.get(key);
    if (c == null) {
      c =
          counters.computeIfAbsent(
              key,
              k ->
                  Counter.builder(LATE)
                      .tags("pool", pool, "class", cls, "reason", reason, "event", event)
                      .description(
                          "Late requests background intake took in instead of the pool's refusal,"
                              + " or not, by pool, class, reason and event")
                      .register(registry));
    }
    c.increment();
  }

  /**
   * The pool's backlog as the store answered ({@code JobStore.backlog}): its gauges set, its
   * expired count raised by the expiries handed to this replica; {@code drainPerSecond}: the
   * queue's measured drain ({@code JobStore.drainedWorkPerSecond}, NaN: no evidence).
   */
  public void backlog(
      String pool, long waiting, double oldestSeconds, long expired, double drainPerSecond) {
    Backlog b = backlogs.computeIfAbsent(pool, p -> new Backlog(registry, p));
    b.waiting = waiting;
    b.oldestSeconds = oldestSeconds;
    b.drain = drainPerSecond;
    if (expired > 0) {
      b.expired.increment(expired);
    }
  }

  private void count(String name, String description, String pool, String cls, String event) {
    String key = name + '\0' + pool + '\0' + cls + '\0' + event;
    Counter c = counters.get(key);
    if (c == null) {
      c =
          counters.computeIfAbsent(
              key,
              k ->
                  Counter.builder(name)
                      .tags("pool", pool, "class", cls, "event", event)
                      .description(description)
                      .register(registry));
    }
    c.increment();
  }
}
