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

  private final MeterRegistry registry;
  private final ConcurrentMap<String, Counter> counters = new ConcurrentHashMap<>();

  /** The process's intake meters (one per registry: {@code AdmissionMetrics.part}). */
  public IntakeMetrics(MeterRegistry registry, LongSupplier tickerNanos) {
    this.registry = registry;
  }

  /** One request intake handled ({@code event}). */
  public void request(String pool, String cls, String event) {
    String key = pool + '\0' + cls + '\0' + event;
    Counter c = counters.get(key);
    if (c == null) {
      c =
          counters.computeIfAbsent(
              key,
              k ->
                  Counter.builder(REQUESTS)
                      .tags("pool", pool, "class", cls, "event", event)
                      .description(
                          "Requests background intake answered or refused, by pool, class and"
                              + " event")
                      .register(registry));
    }
    c.increment();
  }
}
