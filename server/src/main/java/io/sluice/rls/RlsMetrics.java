package io.sluice.rls;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.sluice.observability.AdmissionMetrics;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Micrometer meters of the rate limit service. Per-limit counters have the meaning of
 * envoyproxy/ratelimit's {@code ratelimit.service.rate_limit.<domain>.<key>.*} stats and are
 * incremented by the weight (hits), split across thresholds like the reference.
 *
 * <p>Tags: {@code domain} and {@code key} (the descriptor path from the config, e.g. {@code
 * tenant_acme.model}; wildcard matches use the pattern; values of the request appear only with
 * {@code detailed_metric: true}; override limits use the entry keys only). To keep cardinality
 * bounded, at most {@value #MAX_KEYS} distinct (domain, key) pairs get their own series; the rest
 * share {@code key=_other}.
 */
public final class RlsMetrics {
  public static final String TOTAL_HITS = "sluice.rls.total_hits";
  public static final String OVER_LIMIT = "sluice.rls.over_limit";
  public static final String NEAR_LIMIT = "sluice.rls.near_limit";
  public static final String WITHIN_LIMIT = "sluice.rls.within_limit";
  public static final String SHADOW_MODE = "sluice.rls.shadow_mode";
  public static final String CALLS = "sluice.rls.calls";
  public static final String GLOBAL_SHADOW_MODE = "sluice.rls.global_shadow_mode";
  public static final String STORE_LATENCY = "sluice.rls.store.latency";
  public static final String STORE_ERRORS = "sluice.rls.store.errors";
  public static final String STORE_FAILURE_MODE = "sluice.rls.store.failure_mode";
  public static final String CONFIG_RELOADS = "sluice.rls.config.reloads";
  public static final String INVALID_REQUESTS = "sluice.rls.invalid_requests";
  public static final String CANCELLED = "sluice.rls.cancelled";
  public static final String MEMORY_BYTES = "sluice.rls.store.memory.bytes";
  public static final String MEMORY_ENTRIES = "sluice.rls.store.memory.entries";
  public static final String MEMORY_MAX_BYTES = "sluice.rls.store.memory.max_bytes";
  public static final String MEMORY_EVICTIONS = "sluice.rls.store.memory.evictions";
  public static final String MEMORY_EVICTED_HITS = "sluice.rls.store.memory.evicted_hits";
  public static final String STORE_WARMUP = "sluice.rls.store.warmup";
  static final int MAX_KEYS = 10_000;

  /** The five per-limit counters of one (domain, key). */
  public record LimitCounters(
      Counter totalHits,
      Counter overLimit,
      Counter nearLimit,
      Counter withinLimit,
      Counter shadowMode) {}

  private final MeterRegistry registry;
  // domain -> key -> counters: config strings are the same instances call after call, so a hit is
  // two lookups on cached hash codes, with no key string built per call.
  private final ConcurrentHashMap<String, ConcurrentHashMap<String, LimitCounters>> limits =
      new ConcurrentHashMap<>();
  private final java.util.concurrent.atomic.AtomicInteger limitKeys =
      new java.util.concurrent.atomic.AtomicInteger();
  private final Timer storeLatency;
  private final Counter storeErrors;
  private final Counter callsOk;
  private final Counter callsOverLimit;
  private final Counter callsError;
  private final Counter callsInvalid;
  private final Counter callsInternalError;
  private final Counter cancelled;
  private final RateLimitedLog internalErrors =
      new RateLimitedLog(org.slf4j.LoggerFactory.getLogger(RlsMetrics.class), 10_000);

  public RlsMetrics(MeterRegistry registry) {
    this.registry = registry;
    this.storeLatency =
        Timer.builder(STORE_LATENCY)
            .description("Store round trip of one ShouldRateLimit call")
            // Histogram buckets, not client-side percentiles: cheap on the hot path and
            // aggregatable across replicas with histogram_quantile().
            .serviceLevelObjectives(AdmissionMetrics.decisionBuckets())
            .register(registry);
    this.storeErrors = registry.counter(STORE_ERRORS);
    this.callsOk = registry.counter(CALLS, "result", "ok");
    this.callsOverLimit = registry.counter(CALLS, "result", "over_limit");
    this.callsError = registry.counter(CALLS, "result", "error");
    this.callsInvalid = registry.counter(CALLS, "result", "invalid_argument");
    this.callsInternalError = registry.counter(CALLS, "result", "internal_error");
    this.cancelled =
        Counter.builder(CANCELLED)
            .description("Calls decided after the client had gone (cancelled or past deadline)")
            .register(registry);
  }

  /**
   * A request refused with INVALID_ARGUMENT; {@code reason}: {@code malformed} (not a
   * RateLimitRequest) or {@code hits_addend_out_of_range}.
   */
  public void invalidRequest(String reason) {
    callsInvalid.increment();
    registry.counter(INVALID_REQUESTS, "reason", reason).increment();
  }

  /** An unexpected error answered UNKNOWN "internal error"; logged (WARN, at most every 10 s). */
  public void internalError(Throwable t) {
    callsInternalError.increment();
    internalErrors.warn("rate limit call failed internally: {}", String.valueOf(t));
  }

  /** A decided call whose client had already gone. */
  public void cancelled() {
    cancelled.increment();
  }

  /**
   * Gauges and counters of an in-memory store ({@code store}: {@code memory} for the process's
   * store, shared with the tenant quotas; {@code local} for failure mode {@code local} beside
   * Redis). Called by the bootstrap, which builds the stores.
   */
  public static void bindMemoryStore(
      MeterRegistry registry, String store, io.sluice.core.store.MemoryStoreStats s) {
    io.micrometer.core.instrument.Gauge.builder(MEMORY_BYTES, s, x -> x.bytes())
        .description("Accounted bytes of the in-memory store (keys + per-entry overhead)")
        .tag("store", store)
        .baseUnit("bytes")
        .register(registry);
    io.micrometer.core.instrument.Gauge.builder(MEMORY_MAX_BYTES, s, x -> x.maxBytes())
        .description("Byte bound of the in-memory store (SLUICE_RLS_MEMORY_MAX_BYTES)")
        .tag("store", store)
        .baseUnit("bytes")
        .register(registry);
    io.micrometer.core.instrument.Gauge.builder(MEMORY_ENTRIES, s, x -> x.entries())
        .description("Counters and token buckets held by the in-memory store")
        .tag("store", store)
        .register(registry);
    io.micrometer.core.instrument.FunctionCounter.builder(
            MEMORY_EVICTIONS, s, x -> x.expiredEvictions())
        .description("Entries removed to make room; state=expired loses nothing")
        .tags("store", store, "state", "expired")
        .register(registry);
    io.micrometer.core.instrument.FunctionCounter.builder(
            MEMORY_EVICTIONS, s, x -> x.liveEvictions())
        .description("Entries removed to make room; state=live reset a counter or bucket")
        .tags("store", store, "state", "live")
        .register(registry);
    io.micrometer.core.instrument.FunctionCounter.builder(MEMORY_EVICTIONS, s, x -> x.unstored())
        .description("Keys larger than the whole bound, answered fresh and not kept")
        .tags("store", store, "state", "unstored")
        .register(registry);
    io.micrometer.core.instrument.FunctionCounter.builder(
            MEMORY_EVICTED_HITS, s, x -> x.evictedHits())
        .description(
            "Hits (counts, or tokens owed) lost by live evictions: at most this many extra"
                + " hits were admitted because of the bound")
        .tag("store", store)
        .register(registry);
  }

  public MeterRegistry registry() {
    return registry;
  }

  public LimitCounters limit(String domain, String key) {
    // the key is the config's string, the same instance call after call, the domain the request's
    // (equal, not the same): the last limit's counters are found first (a miss takes the maps)
    LastLimit last = lastLimit;
    if (last != null && last.key() == key && last.domain().equals(domain)) {
      return last.counters();
    }
    LimitCounters c = lookUp(domain, key);
    lastLimit = new LastLimit(domain, key, c);
    return c;
  }

  private record LastLimit(String domain, String key, LimitCounters counters) {}

  private volatile @org.jspecify.annotations.Nullable LastLimit lastLimit;

  private LimitCounters lookUp(String domain, String key) {
    ConcurrentHashMap<String, LimitCounters> byKey = limits.get(domain);
    LimitCounters c = byKey == null ? null : byKey.get(key);
    if (c != null) {
      return c;
    }
    if (byKey == null) {
      byKey = limits.computeIfAbsent(domain, d -> new ConcurrentHashMap<>());
    }
    String k = limitKeys.get() >= MAX_KEYS ? "_other" : key;
    return byKey.computeIfAbsent(
        k,
        unused -> {
          limitKeys.incrementAndGet();
          return new LimitCounters(
              registry.counter(TOTAL_HITS, "domain", domain, "key", k),
              registry.counter(OVER_LIMIT, "domain", domain, "key", k),
              registry.counter(NEAR_LIMIT, "domain", domain, "key", k),
              registry.counter(WITHIN_LIMIT, "domain", domain, "key", k),
              registry.counter(SHADOW_MODE, "domain", domain, "key", k));
        });
  }

  public void storeLatency(long nanos) {
    storeLatency.record(nanos, TimeUnit.NANOSECONDS);
  }

  public void storeError() {
    storeErrors.increment();
  }

  /** A limit decided by its failure mode because the store failed. */
  public void failureMode(String mode) {
    registry.counter(STORE_FAILURE_MODE, "mode", mode).increment();
  }

  /** {@code result}: ok, over_limit or error. */
  public void call(String result) {
    switch (result) {
      case "ok" -> callsOk.increment();
      case "over_limit" -> callsOverLimit.increment();
      case "error" -> callsError.increment();
      default -> registry.counter(CALLS, "result", result).increment();
    }
  }

  public void globalShadowMode() {
    registry.counter(GLOBAL_SHADOW_MODE).increment();
  }

  /** {@code result}: success or failure. */
  public void configReload(String result) {
    registry.counter(CONFIG_RELOADS, "result", result).increment();
    // failures at zero from the first load on (a config exists): an alert rate()s them
    registry.counter(CONFIG_RELOADS, "result", "failure");
  }
}
