package io.sluice.store.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.CounterStore;
import io.sluice.core.store.TokenBucketStore;
import io.sluice.store.MutableClock;
import io.sluice.store.StoreContractTest;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class InMemoryStoreTest extends StoreContractTest {
  // the contract's own times (StoreContractTest passes 1_700_000_000_000 ms as "now"): a bucket's
  // expiry is stamped with the caller's time and swept on this clock, so the two must agree, or a
  // random periodic sweep (1 in 4096 operations) removes a live bucket as long expired
  private final MutableClock clock = new MutableClock(Instant.ofEpochMilli(1_700_000_000_000L));
  private final InMemoryStore store = new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT);

  @Override
  protected CounterStore counters() {
    return store;
  }

  @Override
  protected TokenBucketStore buckets() {
    return store;
  }

  @Override
  protected String prefix() {
    return "t-";
  }

  @Test
  void concurrentIncrements_ofOneKey_areAllCounted_andEachCallerSeesADistinctValue()
      throws Exception {
    int perThread = 50_000;
    java.util.Set<Long> seen = java.util.concurrent.ConcurrentHashMap.newKeySet();
    java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
    Runnable work =
        () -> {
          try {
            go.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          for (int i = 0; i < perThread; i++) {
            seen.add(
                store
                    .increment(List.of(new CounterIncrement("hot", 1, 60, 0)))
                    .toCompletableFuture()
                    .join()[0]);
          }
        };
    Thread a = new Thread(work);
    Thread b = new Thread(work);
    a.start();
    b.start();
    go.countDown();
    a.join();
    b.join();
    assertThat(store.counterValue("hot")).isEqualTo(2L * perThread);
    assertThat(seen).hasSize(2 * perThread); // 1 … 2n, each value returned once
  }

  @Test
  void increment_refreshesTheExpiry_likeRedisExpire() {
    store.increment(List.of(new CounterIncrement("k", 1, 60, 0)));
    clock.advance(Duration.ofSeconds(50));
    store.increment(List.of(new CounterIncrement("k", 1, 60, 0)));
    clock.advance(Duration.ofSeconds(50));
    assertThat(store.counterValue("k")).isEqualTo(2);
  }

  @Test
  void increment_afterExpiry_startsFromZero() {
    store.increment(List.of(new CounterIncrement("k", 5, 60, 0)));
    clock.advance(Duration.ofSeconds(59));
    assertThat(store.counterValue("k")).isEqualTo(5);
    clock.advance(Duration.ofSeconds(1));
    assertThat(store.counterValue("k")).isZero();
    long[] r =
        store.increment(List.of(new CounterIncrement("k", 1, 60, 0))).toCompletableFuture().join();
    assertThat(r).containsExactly(1);
  }

  @Test
  void sweep_dropsExpiredEntries() {
    store.increment(
        List.of(new CounterIncrement("a", 1, 1, 0), new CounterIncrement("b", 1, 100, 0)));
    clock.advance(Duration.ofSeconds(2));
    store.sweep(clock.millis());
    assertThat(store.size()).isEqualTo(1);
  }
}
