package io.sluice.store.memory;

import io.sluice.core.adapt.LimitStore;
import io.sluice.core.adapt.SharedLimit;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link LimitStore} in this process: one {@link SharedLimit} per namespace and pool, for replicas
 * that share one JVM (tests, the benchmarks' multi-replica rigs). Records expire like Redis's
 * ({@link SharedLimit#expired}), so the map holds only the pools exchanged recently. Thread-safe.
 */
public final class InMemoryLimitStore implements LimitStore {
  private final Clock clock;
  private final Map<String, SharedLimit> limits = new HashMap<>();

  public InMemoryLimitStore(Clock clock) {
    this.clock = clock;
  }

  @Override
  public synchronized CompletionStage<Shared> exchange(
      String namespace, String pool, Exchange exchange) {
    long now = clock.millis();
    limits.values().removeIf(l -> l.expired(now, exchange.baselineWindowMillis()));
    SharedLimit l =
        limits.computeIfAbsent(
            io.sluice.core.store.PoolKeys.limit(namespace, pool), k -> new SharedLimit());
    return CompletableFuture.completedFuture(l.exchange(exchange, now));
  }
}
