package io.sluice.rls;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.CounterStore;
import io.sluice.core.store.StoreException;
import io.sluice.core.store.StoreHealth;
import io.sluice.core.store.TokenBucketResult;
import io.sluice.core.store.TokenBucketSpec;
import io.sluice.core.store.TokenBucketStore;
import io.sluice.core.time.FakeTicker;
import io.sluice.rls.config.RateLimitConfig;
import io.sluice.rls.config.RateLimitConfigLoader;
import io.sluice.rls.config.RateLimitConfigLoader.ConfigFile;
import io.sluice.rls.config.RlsSettings;
import io.sluice.store.MutableClock;
import io.sluice.store.memory.InMemoryStore;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/** An evaluator on an in-memory store and a fake wall clock. */
final class RlsFixture {
  /** 2023-11-14T22:13:20Z = Unix 1700000000, a multiple of 20 and of 100 seconds. */
  static final Instant START = Instant.ofEpochSecond(1_700_000_000L);

  final MutableClock clock = new MutableClock(START);
  final InMemoryStore store = new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT);
  final InMemoryStore local = new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT);
  final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  final RlsMetrics metrics = new RlsMetrics(registry);
  final RlsSettings settings;
  final RateLimitEvaluator evaluator;
  boolean storeDown;
  boolean async; // answers complete later, on another thread (as Redis's do)
  boolean inProcess; // the stores say they live in this process (as the memory store does)

  RlsFixture(String yaml, String... env) {
    Map<String, String> e = new HashMap<>();
    e.put("EXPIRATION_JITTER_MAX_SECONDS", "0");
    for (int i = 0; i < env.length; i += 2) {
      e.put(env[i], env[i + 1]);
    }
    settings = RlsSettings.fromEnv(e);
    RateLimitConfig config =
        RateLimitConfigLoader.build(List.of(new ConfigFile("config.yaml", yaml)), false);
    CounterStore counters =
        new CounterStore() {
          @Override
          public CompletionStage<long[]> increment(List<CounterIncrement> batch) {
            CompletionStage<long[]> r =
                storeDown
                    ? CompletableFuture.failedFuture(
                        new StoreException("redis: connection refused"))
                    : store.increment(batch);
            return async ? later(r) : r;
          }

          @Override
          public StoreHealth health() {
            return store.health();
          }

          @Override
          public boolean inProcess() {
            return inProcess;
          }
        };
    TokenBucketStore buckets =
        new TokenBucketStore() {
          @Override
          public CompletionStage<TokenBucketResult> take(
              String key, TokenBucketSpec spec, long tokens, long nowMillis) {
            CompletionStage<TokenBucketResult> r =
                storeDown
                    ? CompletableFuture.failedFuture(
                        new StoreException("redis: connection refused"))
                    : store.take(key, spec, tokens, nowMillis);
            return async ? later(r) : r;
          }

          @Override
          public CompletionStage<TokenBucketResult> charge(
              String key, TokenBucketSpec spec, long tokens, long nowMillis) {
            return store.charge(key, spec, tokens, nowMillis);
          }

          @Override
          public StoreHealth health() {
            return store.health();
          }

          @Override
          public boolean inProcess() {
            return inProcess;
          }
        };
    evaluator =
        new RateLimitEvaluator(
            settings,
            () -> config,
            counters,
            buckets,
            local,
            java.time.Duration.ofMillis(50), // REDIS_COMMAND_TIMEOUT's default
            clock,
            new FakeTicker(),
            metrics);
  }

  private static <T> CompletionStage<T> later(CompletionStage<T> r) {
    CompletableFuture<T> out = new CompletableFuture<>();
    CompletableFuture.delayedExecutor(2, java.util.concurrent.TimeUnit.MILLISECONDS)
        .execute(
            () ->
                r.whenComplete(
                    (v, e) -> {
                      if (e != null) {
                        out.completeExceptionally(e);
                      } else {
                        out.complete(v);
                      }
                    }));
    return out;
  }

  RlsDecision call(RlsRequest request) {
    return evaluator.evaluate(request).toCompletableFuture().join();
  }

  RlsDecision.Decided decided(String domain, RlsRequest.Descriptor... descriptors) {
    return (RlsDecision.Decided) call(new RlsRequest(domain, List.of(descriptors), 0));
  }

  double counter(String name, String key) {
    var c = registry.find(name).tag("key", key).counter();
    return c == null ? 0 : c.count();
  }
}
