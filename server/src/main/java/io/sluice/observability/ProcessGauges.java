package io.sluice.observability;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.TokenCountCache;

/**
 * The process-wide meters read at scrape time from the object that already counts: the adapter's
 * streams, the token-count cache, the learned output reserve. Bound once per process by {@link
 * AdmissionMetrics}.
 */
final class ProcessGauges {
  private ProcessGauges() {}

  /** See {@link AdmissionMetrics#bindStreams}. */
  static void bindStreams(MeterRegistry registry, StreamTally tally) {
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

  /** See {@link AdmissionMetrics#bindTokenCache}. */
  static void bindTokenCache(MeterRegistry registry, TokenCountCache cache) {
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

  /** See {@link AdmissionMetrics#bindReserves}. */
  static void bindReserves(MeterRegistry registry, OutputReserves reserves) {
    Gauge.builder(MetricNames.RESERVE_LEARNED_KEYS, reserves, OutputReserves::keyCount)
        .description("keys the learned output reserve holds (coarse and per tenant)")
        .register(registry);
    FunctionCounter.builder(
            MetricNames.RESERVE_LEARNED_EVICTIONS, reserves, OutputReserves::evictions)
        .description("learned output reserve keys evicted to stay within maxKeys")
        .register(registry);
  }
}
