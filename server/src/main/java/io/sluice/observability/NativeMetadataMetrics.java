package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The meters of Envoy's native AI metadata (docs/metrics.md, "Envoy's native AI metadata"). Labels
 * are bounded: kind (request_info|token_usage), status, agreement, used, field (a field name of the
 * two records), method (an estimate method), direction; never a model, tenant or value. One per
 * process ({@link AdmissionMetrics#part}); thread-safe.
 */
public final class NativeMetadataMetrics {
  /** Records read and cross-checked: kind, status, agreement, used. */
  public static final String METADATA = "sluice.native.metadata";

  /** Fields ignored as unusable (wrong type, negative, over the bound): kind, field. */
  public static final String INVALID = "sluice.native.metadata.invalid";

  /** Actual ÷ estimated input tokens of an answer with reported usage, by estimate method. */
  public static final String INPUT_RATIO = "sluice.native.input.actual.to.estimate";

  /**
   * The learned bytes-per-token a pool's requests of no declared model are estimated with: pool.
   */
  public static final String BYTES_PER_TOKEN = "sluice.native.bytes.per.token";

  /** Answers the learned bytes-per-token learned from: pool. */
  public static final String BYTES_PER_TOKEN_LEARNED = "sluice.native.bytes.per.token.learned";

  /**
   * 1 for where a pool's learned bytes-per-token comes from now, 0 for the others: pool, source
   * ({@code prior}, {@code learned} from this replica's answers, {@code shared} with the store's).
   */
  public static final String BYTES_PER_TOKEN_SOURCE = "sluice.native.bytes.per.token.source";

  /** Keys the learned bytes-per-token holds (pools, and pools with a model). */
  public static final String BYTES_PER_TOKEN_KEYS = "sluice.native.bytes.per.token.keys";

  private static final double[] RATIO_BUCKETS = {
    0.25, 0.5, 0.75, 0.9, 0.95, 1.0, 1.05, 1.1, 1.25, 1.5, 2, 4
  };

  private final MeterRegistry registry;
  private final ConcurrentMap<String, Counter> counters = new ConcurrentHashMap<>();
  private final ConcurrentMap<String, DistributionSummary> ratios = new ConcurrentHashMap<>();

  /** The process's meters (one per registry: {@code AdmissionMetrics.part}). */
  public NativeMetadataMetrics(MeterRegistry registry, LongSupplier tickerNanos) {
    this.registry = registry;
  }

  /** A record read and cross-checked against Sluice's own reading. */
  public void checked(String kind, String status, String agreement, boolean used) {
    counter(
            METADATA,
            "kind",
            kind,
            "status",
            status,
            "agreement",
            agreement,
            "used",
            used ? "true" : "false")
        .increment();
  }

  /** A field of a record of {@code kind} ignored as unusable. */
  public void invalid(String kind, String field) {
    counter(INVALID, "kind", kind, "field", field).increment();
  }

  /** An answer's reported input against the estimate made by {@code method}. */
  public void inputRatio(String method, long actual, long estimated) {
    if (estimated <= 0) {
      return;
    }
    Ratio last = lastRatio; // the method is a constant: the last one is found by reference
    if (last == null || last.method() != method) {
      last = new Ratio(method, ratio(method));
      lastRatio = last;
    }
    last.summary().record((double) actual / estimated);
  }

  private volatile @Nullable Ratio lastRatio;

  private record Ratio(String method, DistributionSummary summary) {}

  private DistributionSummary ratio(String method) {
    return ratios.computeIfAbsent(
        method,
        m ->
            DistributionSummary.builder(INPUT_RATIO)
                .tag("method", m)
                .description("actual ÷ estimated input tokens, by estimate method")
                .serviceLevelObjectives(RATIO_BUCKETS)
                .register(registry));
  }

  /**
   * Gauges of the learned bytes-per-token of {@code pools} (the configured ones: bounded) and of
   * its keys; registered once per pool (the learner outlives snapshots).
   */
  public void bytesPerToken(
      java.util.Collection<String> pools, io.sluice.core.estimate.LearnedBytesPerToken learned) {
    for (String pool : pools) {
      io.micrometer.core.instrument.Gauge.builder(BYTES_PER_TOKEN, learned, l -> l.poolRatio(pool))
          .tag("pool", pool)
          .description("learned bytes per input token of the pool's headers-only estimates")
          .strongReference(true)
          .register(registry);
      for (io.sluice.core.estimate.LearnedBytesPerToken.Source source :
          io.sluice.core.estimate.LearnedBytesPerToken.Source.values()) {
        io.micrometer.core.instrument.Gauge.builder(
                BYTES_PER_TOKEN_SOURCE, learned, l -> l.poolSource(pool) == source ? 1 : 0)
            .tags("pool", pool, "source", source.label())
            .description(
                "1 for the source of the pool's bytes per token: prior, learned here, or shared")
            .strongReference(true)
            .register(registry);
      }
    }
    io.micrometer.core.instrument.Gauge.builder(
            BYTES_PER_TOKEN_KEYS, learned, l -> (double) l.keyCount())
        .description("keys of the learned bytes-per-token (pools, and pools with a model)")
        .strongReference(true)
        .register(registry);
  }

  /** An answer of {@code pool} the learned bytes-per-token learned from. */
  public void ratioLearned(String pool) {
    counter(BYTES_PER_TOKEN_LEARNED, "pool", pool).increment();
  }

  private Counter counter(String name, String... tags) {
    StringBuilder k = new StringBuilder(name);
    for (String t : tags) {
      k.append('\0').append(t);
    }
    return counters.computeIfAbsent(
        k.toString(),
        x ->
            Counter.builder(name)
                .tags(tags)
                .description(
                    name.equals(METADATA)
                        ? "Envoy native AI metadata records read, by kind, status and agreement"
                        : name.equals(INVALID)
                            ? "Envoy native AI metadata fields ignored as unusable"
                            : "answers the learned bytes-per-token learned from, by pool")
                .register(registry));
  }
}
