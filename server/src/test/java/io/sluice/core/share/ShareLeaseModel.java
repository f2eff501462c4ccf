package io.sluice.core.share;

import io.sluice.core.admission.PoolState;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;

/**
 * The lease rule of {@code share_lease.lua} in Java, on a clock the test moves: the reference the
 * Redis script is checked against ({@code RedisShareStoreTest}) and the store of the simulations.
 * {@link #down} makes every call fail, as a store outage.
 */
public final class ShareLeaseModel implements ShareStore {
  /** One replica's entry: lease expiry (ms), held and demanded. */
  record Entry(
      long expiresMs,
      long heldWork,
      long heldRequests,
      long demandWork,
      long demandReqs,
      List<PoolState.ClassDemand> classes) {}

  private final LongSupplier nowMillis;
  final Map<String, TreeMap<String, Entry>> pools = new TreeMap<>();
  boolean down;

  public ShareLeaseModel(LongSupplier nowMillis) {
    this.nowMillis = nowMillis;
  }

  @Override
  public synchronized CompletionStage<Grant> exchange(Exchange x) {
    if (down) {
      return CompletableFuture.failedFuture(new RuntimeException("store down"));
    }
    long now = nowMillis.getAsLong();
    TreeMap<String, Entry> entries =
        pools.computeIfAbsent(x.namespace() + "{" + x.pool() + "}", k -> new TreeMap<>());
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
    if (down) {
      return CompletableFuture.failedFuture(new RuntimeException("store down"));
    }
    TreeMap<String, Entry> entries = pools.get(namespace + "{" + pool + "}");
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
    if (down) {
      return CompletableFuture.failedFuture(new RuntimeException("store down"));
    }
    TreeMap<String, Entry> entries = pools.get(namespace + "{" + pool + "}");
    if (entries != null) {
      entries.remove(replica);
    }
    return CompletableFuture.completedFuture(null);
  }
}
