package io.sluice.store.memory;

import io.sluice.core.estimate.ReserveSnapshot;
import io.sluice.core.estimate.ReserveStore;
import io.sluice.core.store.PoolKeys;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link ReserveStore} in this process, the rule of {@code reserve_publish.lua} in Java: for
 * replicas that share one JVM (tests, the benchmarks' rigs) and for a server that restarts its
 * learner in-process. Bounded: at most {@code maxKeys} per pool, and keys not written for two
 * windows are dropped on every exchange. Thread-safe.
 */
public final class InMemoryReserveStore implements ReserveStore {
  private record Entry(String namespace, ReserveSnapshot key, long writtenMillis, long seq) {}

  private final Clock clock;
  private final Map<String, Entry> entries = new HashMap<>();
  private long writes; // orders writes within one millisecond

  public InMemoryReserveStore(Clock clock) {
    this.clock = clock;
  }

  @Override
  public synchronized CompletionStage<Pull> exchange(
      String namespace,
      Collection<String> pools,
      List<ReserveSnapshot> additions,
      long sinceMillis,
      long windowMillis,
      int maxKeys) {
    long now = clock.millis();
    entries.values().removeIf(e -> now - e.writtenMillis() > 2 * windowMillis);
    for (ReserveSnapshot a : additions) {
      String name = PoolKeys.reserve(namespace, a.pool(), a.identity());
      Entry e = entries.get(name);
      Map<String, Double> f = new HashMap<>();
      if (e != null) {
        double d = ReserveStore.decay(now - e.writtenMillis(), windowMillis);
        e.key().fields().forEach((k, v) -> f.put(k, v * d));
      }
      a.fields().forEach((k, v) -> f.merge(k, v, Double::sum));
      entries.put(
          name,
          new Entry(
              namespace,
              new ReserveSnapshot(a.pool(), a.model(), a.scope(), a.quantile(), a.tenant(), f),
              now,
              writes++));
      trim(namespace, a.pool(), maxKeys);
    }
    List<ReserveSnapshot> changed = new ArrayList<>();
    for (Entry e : entries.values()) {
      if (e.namespace().equals(namespace)
          && pools.contains(e.key().pool())
          && e.writtenMillis() >= sinceMillis) {
        double d = ReserveStore.decay(now - e.writtenMillis(), windowMillis);
        Map<String, Double> f = new HashMap<>();
        e.key().fields().forEach((k, v) -> f.put(k, v * d));
        ReserveSnapshot k = e.key();
        changed.add(
            new ReserveSnapshot(k.pool(), k.model(), k.scope(), k.quantile(), k.tenant(), f));
      }
    }
    return CompletableFuture.completedFuture(new Pull(now, changed));
  }

  private void trim(String namespace, String pool, int maxKeys) {
    List<Map.Entry<String, Entry>> ofPool = new ArrayList<>();
    for (Map.Entry<String, Entry> e : entries.entrySet()) {
      if (e.getValue().namespace().equals(namespace) && e.getValue().key().pool().equals(pool)) {
        ofPool.add(e);
      }
    }
    if (ofPool.size() <= maxKeys) {
      return;
    }
    ofPool.sort(
        Comparator.comparingLong((Map.Entry<String, Entry> e) -> e.getValue().writtenMillis())
            .thenComparingLong(e -> e.getValue().seq()));
    for (int i = 0; i < ofPool.size() - maxKeys; i++) {
      entries.remove(ofPool.get(i).getKey());
    }
  }

  /** Keys held (all namespaces). */
  public synchronized int size() {
    return entries.size();
  }
}
