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
  private final MutableClock clock = new MutableClock(Instant.parse("2026-11-30T10:00:00Z"));
  private final InMemoryStore store = new InMemoryStore(clock);

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
  void increment_afterExpiry_startsFromZero() {
    store.increment(List.of(new CounterIncrement("k", 5, 60)));
    clock.advance(Duration.ofSeconds(59));
    assertThat(store.counterValue("k")).isEqualTo(5);
    clock.advance(Duration.ofSeconds(1));
    assertThat(store.counterValue("k")).isZero();
    long[] r =
        store.increment(List.of(new CounterIncrement("k", 1, 60))).toCompletableFuture().join();
    assertThat(r).containsExactly(1);
  }

  @Test
  void sweep_dropsExpiredEntries() {
    store.increment(List.of(new CounterIncrement("a", 1, 1), new CounterIncrement("b", 1, 100)));
    clock.advance(Duration.ofSeconds(2));
    store.sweep(clock.millis());
    assertThat(store.size()).isEqualTo(1);
  }
}
