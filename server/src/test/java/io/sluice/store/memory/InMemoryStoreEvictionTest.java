package io.sluice.store.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.TokenBucketResult;
import io.sluice.core.store.TokenBucketSpec;
import io.sluice.store.MutableClock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The bound's policy: what is evicted first, what it costs in accuracy, and that it is counted. */
class InMemoryStoreEvictionTest {
  static final long BOUND = 256 * 1024;
  final MutableClock clock = new MutableClock(Instant.parse("2026-11-30T10:00:00Z"));
  final InMemoryStore store = new InMemoryStore(clock, new InMemoryStore.Bounds(BOUND, 0));
  final String pad = "v".repeat(1024);

  private long incr(String key, long hits) {
    return store
        .increment(List.of(new CounterIncrement(key, hits, 3600, 0)))
        .toCompletableFuture()
        .join()[0];
  }

  /** A flood of unique 1 KiB keys, 8 × the bound. */
  private void flood(String prefix) {
    for (int i = 0; i < 8 * BOUND / 1024; i++) {
      incr(prefix + i + "_" + pad, 1);
      assertThat(store.bytes()).isLessThanOrEqualTo(BOUND);
    }
  }

  @Test
  void bytesStayWithinTheBound_andEveryLiveEvictionIsCounted_withTheHitsItLost() {
    flood("flood_");
    assertThat(store.bytes()).isLessThanOrEqualTo(BOUND).isGreaterThan(BOUND / 2);
    assertThat(store.entries()).isEqualTo(store.size());
    assertThat(store.liveEvictions()).isPositive();
    assertThat(store.evictedHits()).isEqualTo(store.liveEvictions()); // each flood key had 1 hit
    assertThat(store.expiredEvictions()).isZero();
  }

  @Test
  void aFloodOfFreshKeys_doesNotResetTheCounterThatIsLimitingSomeone() {
    for (int i = 0; i < 50; i++) {
      incr("victim", 1);
    }
    flood("flood_");
    assertThat(store.counterValue("victim")).isEqualTo(50); // never the cheapest in a sample
    assertThat(incr("victim", 1)).isEqualTo(51);
  }

  @Test
  void aFloodOfFreshBuckets_doesNotRefillTheBucketThatIsLimitingSomeone() {
    TokenBucketSpec spec = new TokenBucketSpec(100, 100, 3_600_000);
    long now = clock.millis();
    assertThat(store.take("victim", spec, 100, now).toCompletableFuture().join().granted())
        .isTrue();
    for (int i = 0; i < 8 * BOUND / 1024; i++) {
      store.take("flood_" + i + "_" + pad, spec, 1, now);
      assertThat(store.bytes()).isLessThanOrEqualTo(BOUND);
    }
    assertThat(store.liveEvictions()).isPositive();
    TokenBucketResult r = store.take("victim", spec, 1, now).toCompletableFuture().join();
    assertThat(r.granted()).as("the drained bucket was not evicted into a full one").isFalse();
  }

  @Test
  void expiredEntriesAreDroppedFirst_withoutAccuracyLoss() {
    for (int i = 0; i < 200; i++) { // 200 × ~1.2 KiB: just below the bound
      incr("old_" + i + "_" + pad, 1);
    }
    assertThat(store.liveEvictions()).isZero();
    clock.advance(Duration.ofHours(2)); // all expired, none swept yet
    for (int i = 0; i < 150; i++) {
      incr("new_" + i + "_" + pad, 1);
    }
    // Room came from expired entries only: taken by the room-making scan (counted as expired
    // evictions) or by the periodic sweep, which runs at random about once in 4096 operations and
    // may come first here; never from a live entry.
    assertThat(store.liveEvictions()).isZero();
    assertThat(store.evictedHits()).isZero();
    for (int i = 0; i < 150; i++) {
      assertThat(store.counterValue("new_" + i + "_" + pad)).isEqualTo(1);
    }
    assertThat(store.bytes()).isLessThanOrEqualTo(BOUND);
  }

  @Test
  void aCounterWhoseWindowEnded_isDroppedAtTheWindowEnd_notAtItsJitteredExpiry() {
    long windowEnd = clock.millis() + 10_000;
    store.increment(List.of(new CounterIncrement("w", 3, 310, windowEnd)));
    clock.advance(Duration.ofSeconds(10));
    assertThat(store.counterValue("w")).isEqualTo(3); // within the 1 s grace
    clock.advance(Duration.ofMillis(1000));
    assertThat(store.counterValue("w")).isZero();
    store.sweep(clock.millis());
    assertThat(store.size()).isZero();
    assertThat(store.bytes()).isZero();
    assertThat(store.entries()).isZero();
  }

  @Test
  void entryBound_isASecondBound() {
    InMemoryStore small = new InMemoryStore(clock, new InMemoryStore.Bounds(BOUND, 10));
    for (int i = 0; i < 100; i++) {
      small.increment(List.of(new CounterIncrement("k" + i, 1, 60, 0)));
      assertThat(small.entries()).isLessThanOrEqualTo(10);
    }
    assertThat(small.size()).isEqualTo(10);
    assertThat(small.liveEvictions()).isEqualTo(90);
  }

  @Test
  void aKeyLargerThanTheWholeBound_isAnsweredFresh_notKept_andCounted() {
    String huge = "h".repeat((int) BOUND);
    assertThat(incr(huge, 2)).isEqualTo(2);
    assertThat(incr(huge, 2)).isEqualTo(2);
    assertThat(store.size()).isZero();
    assertThat(store.unstored()).isEqualTo(2);
  }

  @Test
  void countersSaturate_neverWrapBelowALimit() {
    assertThat(incr("s", Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
    assertThat(incr("s", Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
    assertThat(incr("s", 1)).isEqualTo(Long.MAX_VALUE);
  }

  @Test
  void accountingIsExact_underConcurrentInsertsOfSharedAndUniqueKeys() throws Exception {
    AtomicLong over = new AtomicLong();
    CountDownLatch go = new CountDownLatch(1);
    Runnable work =
        () -> {
          try {
            go.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          for (int i = 0; i < 4000; i++) {
            String key = (i % 3 == 0 ? "shared_" + (i % 50) : Thread.currentThread().getName() + i);
            incr(key + "_" + pad, 1);
            store.take("b_" + key, new TokenBucketSpec(10, 10, 60_000), 1, clock.millis());
            if (store.bytes() > BOUND) {
              over.incrementAndGet();
            }
          }
        };
    Thread a = new Thread(work, "a");
    Thread b = new Thread(work, "b");
    a.start();
    b.start();
    go.countDown();
    a.join();
    b.join();
    assertThat(over.get()).isZero();
    assertThat(store.entries()).isEqualTo(store.size());
    clock.advance(Duration.ofHours(2));
    store.sweep(clock.millis());
    assertThat(store.size()).isZero();
    assertThat(store.bytes()).isZero(); // every reserved byte was released exactly once
  }

  @Test
  void bounds_areValidated_namingTheSetting() {
    assertThatThrownBy(() -> new InMemoryStore.Bounds(1000, 0))
        .hasMessageContaining("SLUICE_RLS_MEMORY_MAX_BYTES");
    assertThatThrownBy(() -> new InMemoryStore.Bounds(BOUND, -1))
        .hasMessageContaining("SLUICE_RLS_MEMORY_MAX_ENTRIES");
  }
}
