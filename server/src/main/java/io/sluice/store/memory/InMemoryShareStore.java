package io.sluice.store.memory;

import io.sluice.core.share.ClassDemand;
import io.sluice.core.share.ShareStore;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link ShareStore} in this process: the lease rule of {@code share_lease.lua} in Java, for
 * replicas that share one JVM (tests, simulations, the benchmarks' multi-replica rigs). Leases
 * expire on the injected {@link Clock}; an expired replica is dropped when another exchanges on its
 * pool. Thread-safe (one lock).
 */
public final class InMemoryShareStore implements ShareStore {
  /** One replica's entry: lease expiry (ms), held and demanded. */
  private record Entry(
      long expiresMs,
      long heldWork,
      long heldRequests,
      long demandWork,
      long demandReqs,
      List<ClassDemand> classes) {}

  private final Clock clock;
  private final Map<String, TreeMap<String, Entry>> pools = new TreeMap<>();

  public InMemoryShareStore(Clock clock) {
    this.clock = clock;
  }

  @Override
  public synchronized CompletionStage<Grant> exchange(Exchange x) {
    long now = clock.millis();
    TreeMap<String, Entry> entries =
        pools.computeIfAbsent(key(x.namespace(), x.pool()), k -> new TreeMap<>());
    long otherWork = 0;
    long otherRequests = 0;
    List<Peer> peers = new ArrayList<>();
    for (var it = entries.entrySet().iterator(); it.hasNext(); ) {
      var e = it.next();
      if (e.getKey().equals(x.replica())) {
        continue;
      }
      Entry v = e.getValue();
      if (v.expiresMs() <= now) {
        it.remove();
        continue;
      }
      otherWork += v.heldWork();
      otherRequests += v.heldRequests();
      peers.add(
          new Peer(
              e.getKey(),
              v.heldWork(),
              (int) v.heldRequests(),
              v.demandWork(),
              (int) v.demandReqs(),
              v.classes()));
    }
    long grantWork = Math.max(0, Math.min(x.targetWork(), x.capacityWork() - otherWork));
    long grantRequests =
        Math.max(0, Math.min(x.targetRequests(), x.capacityRequests() - otherRequests));
    entries.put(
        x.replica(),
        new Entry(
            now + x.leaseTtlMillis(),
            Math.max(grantWork, x.inUseWork()),
            Math.max(grantRequests, x.inUseRequests()),
            x.demandWork(),
            x.demandRequests(),
            x.classes()));
    return CompletableFuture.completedFuture(new Grant(grantWork, (int) grantRequests, peers));
  }

  @Override
  public synchronized CompletionStage<Integer> supersede(
      String namespace, String pool, String replica, String prefix) {
    TreeMap<String, Entry> entries = pools.get(key(namespace, pool));
    int n = 0;
    if (entries != null) {
      for (var it = entries.keySet().iterator(); it.hasNext(); ) {
        String id = it.next();
        if (id.startsWith(prefix) && !id.equals(replica)) {
          it.remove();
          n++;
        }
      }
    }
    return CompletableFuture.completedFuture(n);
  }

  @Override
  public synchronized CompletionStage<Void> leave(String namespace, String pool, String replica) {
    TreeMap<String, Entry> entries = pools.get(key(namespace, pool));
    if (entries != null) {
      entries.remove(replica);
    }
    return CompletableFuture.completedFuture(null);
  }

  /** The replicas holding a lease on {@code pool}, live or not yet dropped (tests, diagnostics). */
  public synchronized Set<String> replicas(String namespace, String pool) {
    TreeMap<String, Entry> entries = pools.get(key(namespace, pool));
    return entries == null ? Set.of() : Set.copyOf(entries.keySet());
  }

  /** Every pool's leases, in order (a deterministic dump for simulations). */
  @Override
  public synchronized String toString() {
    return pools.toString();
  }

  private static String key(String namespace, String pool) {
    return io.sluice.core.store.PoolKeys.shares(namespace, pool);
  }
}
