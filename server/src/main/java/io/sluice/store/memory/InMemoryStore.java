package io.sluice.store.memory;

import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.CounterStore;
import io.sluice.core.store.StoreHealth;
import io.sluice.core.store.TokenBucketResult;
import io.sluice.core.store.TokenBucketSpec;
import io.sluice.core.store.TokenBucketStore;
import io.sluice.core.store.TokenBuckets;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counters and token buckets in this process: the default store for a single replica. Stages
 * complete before the method returns.
 *
 * <p>Expiry uses wall time from the injected {@link Clock} (the keys embed wall-clock window
 * starts, so expiry follows the same clock). Expired entries are dropped lazily on access and by a
 * sweep every {@value #SWEEP_EVERY_OPS} operations.
 *
 * <p>Concurrency: a counter of a live window is incremented atomically without a lock; a missing or
 * expired one is (re)created inside {@link ConcurrentHashMap#compute}. Keys embed their window
 * start, so a key is not used once its window has ended: an increment racing with the expiry of its
 * own key (at the very end of the window's expiry, which outlasts the window) could be lost.
 * Buckets are updated inside compute. A batch is not atomic as a whole (like the Redis pipeline it
 * mirrors).
 */
public final class InMemoryStore implements CounterStore, TokenBucketStore {
  static final int SWEEP_EVERY_OPS = 4096;

  /** A window's count; the value moves without a lock, the expiry with the last increment. */
  private static final class Counter {
    final AtomicLong value;
    volatile long expiresAtMillis;

    Counter(long value, long expiresAtMillis) {
      this.value = new AtomicLong(value);
      this.expiresAtMillis = expiresAtMillis;
    }

    long value() {
      return value.get();
    }

    long expiresAtMillis() {
      return expiresAtMillis;
    }
  }

  private record Bucket(double tokens, long updatedAtMillis, long expiresAtMillis) {}

  private final Clock clock;
  private final ConcurrentHashMap<String, Counter> counters = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Bucket> buckets = new ConcurrentHashMap<>();

  public InMemoryStore(Clock clock) {
    this.clock = clock;
  }

  @Override
  public CompletionStage<long[]> increment(List<CounterIncrement> batch) {
    long now = clock.millis();
    long[] after = new long[batch.size()];
    for (int i = 0; i < after.length; i++) {
      CounterIncrement inc = batch.get(i);
      long expires = now + inc.expirySeconds() * 1000;
      Counter live = counters.get(inc.key());
      if (live != null && live.expiresAtMillis - now > 0) {
        // The common case, a window already counting: one atomic add, no lock on the key.
        after[i] = live.value.addAndGet(inc.hits());
        live.expiresAtMillis = expires;
        continue;
      }
      long[] value = new long[1];
      counters.compute(
          inc.key(),
          (k, old) -> {
            if (old != null && old.expiresAtMillis - now > 0) { // another thread created it
              value[0] = old.value.addAndGet(inc.hits());
              old.expiresAtMillis = expires;
              return old;
            }
            value[0] = inc.hits();
            return new Counter(inc.hits(), expires);
          });
      after[i] = value[0];
    }
    maybeSweep(now, batch.size());
    return CompletableFuture.completedFuture(after);
  }

  /** Current value of a counter, 0 when absent or expired (for tests and diagnostics). */
  public long counterValue(String key) {
    Counter c = counters.get(key);
    return c == null || c.expiresAtMillis() - clock.millis() <= 0 ? 0 : c.value();
  }

  /** Number of live and not-yet-swept entries (counters and buckets). */
  public int size() {
    return counters.size() + buckets.size();
  }

  @Override
  public CompletionStage<TokenBucketResult> take(
      String key, TokenBucketSpec spec, long tokens, long nowMillis) {
    return CompletableFuture.completedFuture(apply(key, spec, tokens, nowMillis, false));
  }

  @Override
  public CompletionStage<TokenBucketResult> charge(
      String key, TokenBucketSpec spec, long tokens, long nowMillis) {
    return CompletableFuture.completedFuture(apply(key, spec, tokens, nowMillis, true));
  }

  private TokenBucketResult apply(
      String key, TokenBucketSpec spec, long requested, long nowMillis, boolean force) {
    TokenBucketResult[] out = new TokenBucketResult[1];
    buckets.compute(
        key,
        (k, old) -> {
          double tokens =
              old == null || old.expiresAtMillis() - nowMillis <= 0
                  ? spec.capacity()
                  : TokenBuckets.refill(spec, old.tokens(), old.updatedAtMillis(), nowMillis);
          boolean granted = force || TokenBuckets.fits(tokens, requested);
          if (granted) {
            tokens = Math.min(spec.capacity(), tokens - requested);
          }
          long full = TokenBuckets.fullAfterMillis(spec, tokens);
          out[0] =
              new TokenBucketResult(
                  granted,
                  tokens,
                  granted ? 0 : TokenBuckets.retryAfterMillis(spec, tokens, requested),
                  full);
          long updatedAt = old == null ? nowMillis : Math.max(nowMillis, old.updatedAtMillis());
          return new Bucket(tokens, updatedAt, nowMillis + full + 1000);
        });
    maybeSweep(clock.millis(), 1);
    return out[0];
  }

  @Override
  public boolean inProcess() {
    return true;
  }

  @Override
  public StoreHealth health() {
    return StoreHealth.ALWAYS_HEALTHY;
  }

  /** Sweeps once every {@value #SWEEP_EVERY_OPS} operations on average (no shared op counter). */
  private void maybeSweep(long now, int n) {
    if (java.util.concurrent.ThreadLocalRandom.current().nextInt(SWEEP_EVERY_OPS) < n) {
      sweep(now);
    }
  }

  /** Drops expired entries. */
  public void sweep(long nowMillis) {
    counters.values().removeIf(c -> c.expiresAtMillis() - nowMillis <= 0);
    buckets.values().removeIf(b -> b.expiresAtMillis() - nowMillis <= 0);
  }
}
