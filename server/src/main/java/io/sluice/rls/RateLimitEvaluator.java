package io.sluice.rls;

import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.CounterStore;
import io.sluice.core.store.KeyValueStore;
import io.sluice.core.store.TokenBucketResult;
import io.sluice.core.store.TokenBucketSpec;
import io.sluice.core.store.TokenBucketStore;
import io.sluice.core.time.Ticker;
import io.sluice.rls.RlsDecision.Code;
import io.sluice.rls.RlsDecision.Failed;
import io.sluice.rls.RlsOutcomes.Slot;
import io.sluice.rls.RlsOutcomes.SlotResult;
import io.sluice.rls.config.Algorithm;
import io.sluice.rls.config.FailureMode;
import io.sluice.rls.config.LimitSpec;
import io.sluice.rls.config.RateLimitConfig;
import io.sluice.rls.config.RateLimitConfig.Entry;
import io.sluice.rls.config.RateLimitConfig.Match;
import io.sluice.rls.config.RateLimitUnit;
import io.sluice.rls.config.RlsSettings;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * envoyproxy/ratelimit's ShouldRateLimit semantics on Sluice's store ports: matching, replaces,
 * weights, fixed windows (or token buckets), shadow and quota modes, overall code, headers. Never
 * blocks: the returned stage completes from the store's callbacks.
 *
 * <p>Cache keys: {@code CACHE_KEY_PREFIX + domain + "_" + (key + "_" + value + "_")... +
 * windowStart}, {@code windowStart = floor(now / window) * window} (Unix seconds), exactly the
 * reference's layout for a descriptor's first limit with {@code unit_multiplier: 1}. Other limits
 * of the same descriptor insert {@code l<index>w<windowSeconds>_} before the window start; token
 * buckets use {@code ...tb<index>w<windowSeconds>} without a window start. Built by {@link
 * CacheKeys}, which hands a recent call's key out again while it is the same.
 *
 * <p>Store failure: each limit follows its {@link FailureMode} (the limit's {@code failure_mode},
 * else {@code SLUICE_RLS_FAILURE_MODE}); one {@code error} limit fails the whole call like the
 * reference.
 */
public final class RateLimitEvaluator {
  private final RlsSettings settings;
  private final Supplier<RateLimitConfig> config;
  private final CounterStore counters;
  private final TokenBucketStore buckets;
  private final KeyValueStore local;
  private final long storeDeadlineMillis;
  private final Clock clock;
  private final Ticker ticker;
  private final RlsMetrics metrics;
  private final RlsOutcomes outcomes;
  private final CacheKeys cacheKeys;

  /**
   * @param config the current config, or null while none has been loaded
   * @param local in-process store used by failure mode {@code local}
   * @param commandTimeout how long one store command may take ({@link
   *     KeyValueStore#commandTimeout()}): sizes {@link #storeDeadlineMillis()}
   */
  public RateLimitEvaluator(
      RlsSettings settings,
      Supplier<RateLimitConfig> config,
      CounterStore counters,
      TokenBucketStore buckets,
      KeyValueStore local,
      java.time.Duration commandTimeout,
      Clock clock,
      Ticker ticker,
      RlsMetrics metrics) {
    this.settings = settings;
    this.config = config;
    this.counters = counters;
    this.buckets = buckets;
    this.local = local;
    this.storeDeadlineMillis = Math.max(100, commandTimeout.toMillis() * 4);
    this.clock = clock;
    this.ticker = ticker;
    this.metrics = metrics;
    this.outcomes = new RlsOutcomes(settings, metrics);
    this.cacheKeys = new CacheKeys(settings.cacheKeyPrefix());
  }

  /**
   * Decides one call. Never throws and never completes exceptionally: an unexpected error is
   * answered {@link Failed} ("internal error") and counted ({@code sluice.rls.calls{result=
   * internal_error}}); a store that does not answer within {@link #storeDeadlineMillis()} is a
   * store failure (each limit's failure mode applies).
   */
  public CompletionStage<RlsDecision> evaluate(RlsRequest request) {
    try {
      CompletionStage<RlsDecision> stage = evaluateOrThrow(request);
      if (stage instanceof CompletableFuture<RlsDecision> f && f.isDone()) {
        return f.isCompletedExceptionally() ? internalError(f) : f;
      }
      return stage.handle(
          (d, e) -> {
            if (e != null) {
              metrics.internalError(e);
              return new Failed("internal error");
            }
            return d;
          });
    } catch (RuntimeException | Error e) {
      if (e instanceof VirtualMachineError) {
        throw e;
      }
      metrics.internalError(e);
      return CompletableFuture.completedFuture(new Failed("internal error"));
    }
  }

  private CompletionStage<RlsDecision> internalError(CompletableFuture<RlsDecision> f) {
    try {
      f.join();
    } catch (CompletionException | java.util.concurrent.CancellationException e) {
      metrics.internalError(e.getCause() != null ? e.getCause() : e);
    }
    return CompletableFuture.completedFuture(new Failed("internal error"));
  }

  /** Largest weight accepted: Redis INCRBY's (signed 64-bit) range, as for the reference. */
  public static final long MAX_HITS_ADDEND = Long.MAX_VALUE;

  /**
   * How long a store that answers over the network may take before the call is decided by the
   * failure mode: 4 × the store's command timeout ({@code REDIS_COMMAND_TIMEOUT}), at least 100 ms
   * (the Redis store itself fails a command after 2 ×; this is the safety net for a stage that
   * would never complete).
   */
  long storeDeadlineMillis() {
    return storeDeadlineMillis;
  }

  RlsMetrics metrics() {
    return metrics;
  }

  private CompletionStage<RlsDecision> evaluateOrThrow(RlsRequest request) {
    if (request.domain().isEmpty()) {
      return failed("rate limit domain must not be empty");
    }
    if (request.descriptors().isEmpty()) {
      return failed("rate limit descriptor list must not be empty");
    }
    RateLimitConfig cfg = config.get();
    if (cfg == null) {
      return failed("no rate limit configuration loaded");
    }
    String domain = request.domain();
    long nowMillis = clock.millis();
    long nowSeconds = Math.floorDiv(nowMillis, 1000);
    List<RlsRequest.Descriptor> descriptors = request.descriptors();
    int n = descriptors.size();

    Match[] matches = new Match[n];
    long[] weights = new long[n];
    Set<String> replaced = null; // built only when some limit replaces another
    for (int i = 0; i < n; i++) {
      RlsRequest.Descriptor d = descriptors.get(i);
      weights[i] =
          d.hitsAddend().isPresent()
              ? d.hitsAddend().getAsLong()
              : Math.max(1, request.hitsAddend());
      if (weights[i] < 0 || request.hitsAddend() < 0) {
        // uint64 on the wire: 2^63 and above read as a negative long. The reference sends it to
        // Redis INCRBY, which refuses it ("value is not an integer or out of range"); here it
        // is a clean INVALID_ARGUMENT, counted, before anything is counted in the store.
        long bad = weights[i] < 0 ? weights[i] : request.hitsAddend();
        return invalid(
            "hits_addend_out_of_range",
            "hits_addend: "
                + Long.toUnsignedString(bad)
                + " (expected: at most "
                + MAX_HITS_ADDEND
                + ")");
      }
      Match m = match(cfg, domain, d);
      matches[i] = m;
      for (LimitSpec l : m.limits()) {
        if (!l.replaces().isEmpty()) {
          if (replaced == null) {
            replaced = new HashSet<>();
          }
          replaced.addAll(l.replaces());
        }
      }
    }

    boolean[] unlimited = new boolean[n];
    // sized for one limit per descriptor, the usual case; grown only as needed
    List<Slot> fixed = new ArrayList<>(n);
    List<Slot> tokenBuckets = List.of(); // a list only once something is added
    List<SlotResult> precomputed = List.of();
    for (int i = 0; i < n; i++) {
      Match m = matches[i];
      List<Entry> entries = descriptors.get(i).entries();
      for (LimitSpec l : m.limits()) {
        if (replaced != null && !l.name().isEmpty() && replaced.contains(l.name())) {
          continue;
        }
        if (l.unlimited()) {
          unlimited[i] = true;
          continue;
        }
        String key = cacheKeys.key(domain, entries, m.cacheValues(), l, nowSeconds);
        Slot slot = new Slot(i, l, key, weights[i]);
        if (l.algorithm() == Algorithm.TOKEN_BUCKET) {
          if (l.requestsPerUnit() == 0) {
            precomputed =
                added(
                    precomputed,
                    outcomes.count(slot, Code.OVER_LIMIT, 0, l.windowSeconds(), domain));
          } else {
            tokenBuckets = added(tokenBuckets, slot);
          }
        } else {
          fixed.add(slot);
        }
      }
    }
    if (fixed.isEmpty() && tokenBuckets.isEmpty()) {
      return CompletableFuture.completedFuture(outcomes.decide(n, unlimited, precomputed));
    }

    boolean inProcess = counters.inProcess() && buckets.inProcess();
    long startNanos = inProcess ? 0 : ticker.nanos(); // the in-process store is not timed
    CompletableFuture<long[]> counted =
        fixed.isEmpty()
            ? CompletableFuture.completedFuture(new long[0])
            : counters.increment(increments(fixed, nowSeconds)).toCompletableFuture();
    List<CompletableFuture<TokenBucketResult>> taken =
        tokenBuckets.isEmpty() ? List.of() : new ArrayList<>(tokenBuckets.size());
    for (Slot s : tokenBuckets) {
      taken.add(
          buckets
              .take(s.key(), spec(s.limit(), s.limit().requestsPerUnit()), s.hits(), nowMillis)
              .toCompletableFuture());
    }
    CompletableFuture<?> all =
        taken.isEmpty()
            ? counted
            : CompletableFuture.allOf(
                java.util.stream.Stream.concat(taken.stream(), java.util.stream.Stream.of(counted))
                    .toArray(CompletableFuture[]::new));
    Counted answers =
        new Counted(counted, taken, fixed, tokenBuckets, precomputed, unlimited, domain, nowMillis);
    if (!all.isDone()) {
      if (!inProcess) {
        // a stage that never completes must not hold the call until the client's deadline
        all = all.orTimeout(storeDeadlineMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
      }
      return all.handle(
          (v, e) -> {
            storeLatency(startNanos);
            return finish(e, answers);
          });
    }
    // The in-process store answers at once: finish on this thread, no callback stage to build.
    storeLatency(startNanos);
    Throwable error = null;
    try {
      all.join();
    } catch (CompletionException | java.util.concurrent.CancellationException x) {
      error = x;
    }
    return CompletableFuture.completedFuture(finish(error, answers));
  }

  /** {@code list} with {@code t} added: a new list in place of the shared empty one. */
  private static <T> List<T> added(List<T> list, T t) {
    List<T> l = list instanceof ArrayList<T> ? list : new ArrayList<>(2);
    l.add(t);
    return l;
  }

  /** What the store was asked for one call, and its answers (a class: it holds an array). */
  private static final class Counted {
    final CompletableFuture<long[]> counted;
    final List<CompletableFuture<TokenBucketResult>> taken;
    final List<Slot> fixed;
    final List<Slot> tokenBuckets;
    final List<SlotResult> precomputed;
    final boolean[] unlimited; // per request descriptor: whether an unlimited limit matched it
    final String domain;
    final long nowMillis;

    Counted(
        CompletableFuture<long[]> counted,
        List<CompletableFuture<TokenBucketResult>> taken,
        List<Slot> fixed,
        List<Slot> tokenBuckets,
        List<SlotResult> precomputed,
        boolean[] unlimited,
        String domain,
        long nowMillis) {
      this.counted = counted;
      this.taken = taken;
      this.fixed = fixed;
      this.tokenBuckets = tokenBuckets;
      this.precomputed = precomputed;
      this.unlimited = unlimited;
      this.domain = domain;
      this.nowMillis = nowMillis;
    }
  }

  private List<CounterIncrement> increments(List<Slot> fixed, long nowSeconds) {
    if (fixed.size() == 1) {
      Slot s = fixed.get(0);
      return List.of(
          new CounterIncrement(
              s.key(), s.hits(), expiry(s.limit()), windowEndMillis(s.limit(), nowSeconds)));
    }
    List<CounterIncrement> incs = new ArrayList<>(fixed.size());
    for (Slot s : fixed) {
      incs.add(
          new CounterIncrement(
              s.key(), s.hits(), expiry(s.limit()), windowEndMillis(s.limit(), nowSeconds)));
    }
    return incs;
  }

  /**
   * Records a store round trip (Redis). The in-process store is not timed: a histogram of it would
   * only say "under 1 µs", at a cost on every call.
   */
  private void storeLatency(long startNanos) {
    if (!counters.inProcess() || !buckets.inProcess()) { // as startNanos was read
      metrics.storeLatency(ticker.nanos() - startNanos);
    }
  }

  private RlsDecision finish(@Nullable Throwable e, Counted c) {
    List<Slot> fixed = c.fixed;
    List<Slot> tokenBuckets = c.tokenBuckets;
    List<SlotResult> precomputed = c.precomputed;
    List<CompletableFuture<TokenBucketResult>> taken = c.taken;
    boolean[] unlimited = c.unlimited;
    int n = unlimited.length;
    String domain = c.domain;
    long nowMillis = c.nowMillis;
    long nowSeconds = Math.floorDiv(nowMillis, 1000);
    List<SlotResult> results = new ArrayList<>(precomputed.size() + fixed.size() + taken.size());
    if (!precomputed.isEmpty()) {
      results.addAll(precomputed);
    }
    if (e != null) {
      return onStoreFailure(
          e, fixed, tokenBuckets, results, n, unlimited, domain, nowMillis, nowSeconds);
    }
    long[] after = c.counted.join();
    for (int i = 0; i < fixed.size(); i++) {
      results.add(
          outcomes.fixedWindow(
              fixed.get(i), after[i], fixed.get(i).limit().requestsPerUnit(), nowSeconds, domain));
    }
    for (int i = 0; i < tokenBuckets.size(); i++) {
      results.add(outcomes.tokenBucket(tokenBuckets.get(i), taken.get(i).join(), domain));
    }
    return outcomes.decide(n, unlimited, results);
  }

  private static Match match(RateLimitConfig cfg, String domain, RlsRequest.Descriptor d) {
    if (d.limitOverride().isEmpty()) {
      return cfg.match(domain, d.entries());
    }
    if (!cfg.hasDomain(domain)) {
      return Match.NONE;
    }
    RlsRequest.LimitOverride o = d.limitOverride().get();
    Optional<RateLimitUnit> unit = RateLimitUnit.forProtoNumber(o.unitNumber());
    if (unit.isEmpty()) {
      return Match.NONE;
    }
    StringBuilder stat = new StringBuilder();
    List<String> values = new ArrayList<>(d.entries().size());
    for (Entry e : d.entries()) {
      if (stat.length() > 0) {
        stat.append('.');
      }
      stat.append(e.key());
      values.add(e.value());
    }
    return new Match(
        List.of(LimitSpec.override(unit.get(), o.requestsPerUnit(), stat.toString())), values);
  }

  private long expiry(LimitSpec l) {
    long jitter = settings.expirationJitterMaxSeconds();
    return l.windowSeconds() + (jitter > 0 ? ThreadLocalRandom.current().nextLong(jitter) : 0);
  }

  private static TokenBucketSpec spec(LimitSpec l, long capacity) {
    return new TokenBucketSpec(capacity, capacity, l.windowSeconds() * 1000);
  }

  /** End of the current window of a fixed-window limit, epoch millis. */
  private static long windowEndMillis(LimitSpec l, long nowSeconds) {
    long w = l.windowSeconds();
    return (Math.floorDiv(nowSeconds, w) * w + w) * 1000;
  }

  private RlsDecision onStoreFailure(
      Throwable error,
      List<Slot> fixed,
      List<Slot> tokenBuckets,
      List<SlotResult> results,
      int n,
      boolean[] unlimited,
      String domain,
      long nowMillis,
      long nowSeconds) {
    Throwable cause =
        error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    metrics.storeError();
    List<Slot> all = new ArrayList<>(fixed);
    all.addAll(tokenBuckets);
    for (Slot s : all) {
      if (s.limit().failureMode().orElse(settings.failureMode()) == FailureMode.ERROR) {
        metrics.failureMode("error");
        metrics.call("error");
        return new Failed(String.valueOf(cause.getMessage()));
      }
    }
    for (Slot s : all) {
      LimitSpec l = s.limit();
      FailureMode mode = l.failureMode().orElse(settings.failureMode());
      metrics.failureMode(mode.name().toLowerCase(java.util.Locale.ROOT));
      switch (mode) {
        case OPEN ->
            results.add(
                outcomes.count(
                    s,
                    Code.OK,
                    l.requestsPerUnit(),
                    RlsOutcomes.resetSeconds(l, nowSeconds),
                    domain));
        case CLOSED ->
            results.add(
                outcomes.count(
                    s, Code.OVER_LIMIT, 0, RlsOutcomes.resetSeconds(l, nowSeconds), domain));
        default -> {
          long share =
              Math.floorDiv(
                  l.requestsPerUnit() + settings.expectedReplicas() - 1,
                  settings.expectedReplicas());
          if (l.algorithm() == Algorithm.TOKEN_BUCKET) {
            TokenBucketResult r =
                local
                    .take(s.key(), spec(l, Math.max(1, share)), s.hits(), nowMillis)
                    .toCompletableFuture()
                    .join();
            results.add(outcomes.tokenBucket(s, r, domain));
          } else {
            long after =
                local
                    .increment(
                        List.of(
                            new CounterIncrement(
                                s.key(), s.hits(), expiry(l), windowEndMillis(l, nowSeconds))))
                    .toCompletableFuture()
                    .join()[0];
            results.add(outcomes.fixedWindow(s, after, share, nowSeconds, domain));
          }
        }
      }
    }
    return outcomes.decide(n, unlimited, results);
  }

  private CompletionStage<RlsDecision> invalid(String reason, String message) {
    metrics.invalidRequest(reason);
    return CompletableFuture.completedFuture(new RlsDecision.Invalid(reason, message));
  }

  private CompletionStage<RlsDecision> failed(String message) {
    metrics.call("error");
    return CompletableFuture.completedFuture(new Failed(message));
  }
}
