package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
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
   * {@code completed}, {@code failed}, {@code returned} (refused by the pool for room: claimed
   * again after its lease), {@code late} (a completion that changed nothing: the job had ended),
   * {@code store_failed} (a claim or completion the store did not acknowledge).
   */
  public static final String DISPATCH = "sluice.intake.dispatch";

  private final MeterRegistry registry;
  private final ConcurrentMap<String, Counter> counters = new ConcurrentHashMap<>();

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
