package io.sluice.store.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.TokenBucketSpec;
import io.sluice.store.MutableClock;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Finding 2 of issue 13: unique large keys (descriptor values Envoy copies from request headers)
 * each kept their entry for the limit's window, without a bound. Uses only the store's public API
 * of before the fix: a default-constructed store must not hold more than its default byte bound.
 */
class InMemoryStoreBoundTest {
  private final MutableClock clock = new MutableClock(Instant.parse("2026-11-30T10:00:00Z"));

  /** 96 MiB of 8 KiB keys, each counted once in a one-hour window. */
  @Test
  void uniqueLargeCounterKeys_doNotGrowTheDefaultStoreWithoutBound() {
    InMemoryStore store = new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT);
    String pad = "x".repeat(8 * 1024);
    int n = 12 * 1024;
    for (int i = 0; i < n; i++) {
      store.increment(List.of(new CounterIncrement("rl_" + i + "_" + pad, 1, 3600, 0)));
    }
    long keyBytes = (long) store.size() * pad.length();
    assertThat(keyBytes).isLessThanOrEqualTo(64L << 20); // the default bound (64 MiB)
    assertThat(store.size()).isLessThan(n);
  }

  @Test
  void uniqueLargeBucketKeys_doNotGrowTheDefaultStoreWithoutBound() {
    InMemoryStore store = new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT);
    String pad = "y".repeat(8 * 1024);
    int n = 12 * 1024;
    TokenBucketSpec spec = new TokenBucketSpec(100, 100, 60_000);
    for (int i = 0; i < n; i++) {
      store.take("tenant_" + i + "_" + pad + "_rpm", spec, 1, clock.millis());
    }
    assertThat((long) store.size() * pad.length()).isLessThanOrEqualTo(64L << 20);
    assertThat(store.size()).isLessThan(n);
  }
}
