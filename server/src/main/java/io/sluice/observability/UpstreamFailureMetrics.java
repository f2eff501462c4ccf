package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.LongSupplier;

/**
 * The upstream's own failures as the client got them (docs/metrics.md, "Upstream failures"): {@code
 * sluice_upstream_failures_total{pool, kind, answer}}. Labels are bounded: pool (config names),
 * kind ({@code rate_limited}, {@code unavailable}, {@code overloaded}, {@code timeout}, {@code
 * reset}) and answer ({@code typed}: Sluice's JSON error; {@code annotated}: the provider's body
 * with Sluice's headers; {@code passed}: untouched, {@code upstreamErrors.rewrite: false}). One per
 * process ({@link AdmissionMetrics#part}); thread-safe.
 */
public final class UpstreamFailureMetrics {
  public static final String FAILURES = "sluice.upstream.failures";

  private final MeterRegistry registry;
  private final ConcurrentMap<String, Counter> counters = new ConcurrentHashMap<>();

  /** The process's meters (one per registry: {@code AdmissionMetrics.part}). */
  public UpstreamFailureMetrics(MeterRegistry registry, LongSupplier tickerNanos) {
    this.registry = registry;
  }

  /** One upstream failure of {@code pool}, of {@code kind}, answered as {@code answer}. */
  public void failure(String pool, String kind, String answer) {
    counters
        .computeIfAbsent(
            pool + '\0' + kind + '\0' + answer,
            k ->
                Counter.builder(FAILURES)
                    .description(
                        "Upstream failures of admitted requests, by pool, kind and how the client"
                            + " got them")
                    .tags("pool", pool, "kind", kind, "answer", answer)
                    .register(registry))
        .increment();
  }
}
