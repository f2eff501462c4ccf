package io.sluice.store.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.sluice.core.estimate.ReserveStore;
import io.sluice.store.MutableClock;
import io.sluice.store.ReserveStoreContractTest;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The contract in memory (one object, two replicas' views), and the decay on a fake clock. */
class InMemoryReserveStoreContractTest extends ReserveStoreContractTest {
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  private final InMemoryReserveStore store = new InMemoryReserveStore(clock);

  @Override
  protected ReserveStore replicaA() {
    return store;
  }

  @Override
  protected ReserveStore replicaB() {
    return store;
  }

  @Override
  protected String namespace() {
    return "test_";
  }

  @Test
  void storedState_halvesEveryWindow_forgottenAfterTwo() throws Exception {
    exchange(store, List.of(key("gpu", "t", Map.of("w", 8.0, "n", 8.0))), 0, 100);
    clock.advance(Duration.ofMillis(HOUR));

    assertThat(find(exchange(store, List.of(), 0, 100), "t").fields().get("w"))
        .isCloseTo(4.0, within(1e-9));

    clock.advance(Duration.ofMillis(HOUR + 1));
    assertThat(exchange(store, List.of(), 0, 100).changed()).isEmpty();
    assertThat(store.size()).isZero();
  }
}
