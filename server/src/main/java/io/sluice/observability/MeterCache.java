package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The tagged meters of {@link AdmissionMetrics}, cached by (name, tags): a hit is one hash lookup
 * on the caller's varargs array, no copy; Micrometer's own registration path runs once per tag
 * tuple. All tags are bounded (pools, classes, tiers, reason codes), so the caches are too.
 */
final class MeterCache {
  private final MeterRegistry registry;
  private final ConcurrentMap<MeterKey, Counter> counters = new ConcurrentHashMap<>();
  private final ConcurrentMap<MeterKey, DistributionSummary> summaries = new ConcurrentHashMap<>();
  private final ConcurrentMap<MeterKey, Timer> timers = new ConcurrentHashMap<>();

  MeterCache(MeterRegistry registry) {
    this.registry = registry;
  }

  Counter counter(String name, String... tags) {
    MeterKey key = new MeterKey(name, tags);
    Counter c = counters.get(key);
    return c != null
        ? c
        : counters.computeIfAbsent(key, k -> Counter.builder(name).tags(tags).register(registry));
  }

  DistributionSummary summary(String name, String... tags) {
    MeterKey key = new MeterKey(name, tags);
    DistributionSummary d = summaries.get(key);
    return d != null
        ? d
        : summaries.computeIfAbsent(
            key, k -> DistributionSummary.builder(name).tags(tags).register(registry));
  }

  /** A summary with histogram buckets at {@code slos} and a description, cached as the others. */
  DistributionSummary histogram(String name, double[] slos, String description, String... tags) {
    MeterKey key = new MeterKey(name, tags);
    DistributionSummary d = summaries.get(key);
    return d != null
        ? d
        : summaries.computeIfAbsent(
            key,
            k ->
                DistributionSummary.builder(name)
                    .tags(tags)
                    .serviceLevelObjectives(slos)
                    .description(description)
                    .register(registry));
  }

  Timer timer(String name, String... tags) {
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
   * Removes every Sluice meter of the registry tagged with one of these pools or classes (those
   * this cache made and the gauges bound elsewhere), and its cache entry.
   */
  void removeTagged(Set<String> gonePools, Set<String> goneClasses) {
    Set<Meter.Id> removed = new HashSet<>();
    for (Meter m : List.copyOf(registry.getMeters())) {
      Meter.Id id = m.getId();
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
  }

  /**
   * Bucket bounds of {@code sluice_decision_latency_seconds}, 1 µs to 1 s; also those of the RLS
   * store round trip ({@code sluice_rls_store_latency_seconds}).
   */
  static final Duration[] DECISION_BUCKETS = {
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
      this.hash = 31 * name.hashCode() + Arrays.hashCode(tags);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof MeterKey k
          && k.hash == hash
          && k.name.equals(name)
          && Arrays.equals(k.tags, tags);
    }

    @Override
    public int hashCode() {
      return hash;
    }
  }
}
