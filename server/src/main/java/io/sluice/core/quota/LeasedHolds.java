package io.sluice.core.quota;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * What one replica holds of one kind of {@link LeasedPlaces} (the tenant slots, the workflow
 * places, ...): the places it was granted per pool and owner, so it gives each back once and renews
 * them (every {@code replicas.renewInterval}, beside the pool shares), so the places of a replica
 * that died come back within the lease. The set is bounded by the places held and asked for: an
 * owner leaves it when its last place is given back, and a caller may refuse to track more than a
 * number of owners ({@link #acquire}).
 *
 * <p>Thread-safe: one monitor over the held set; the store is never called under it.
 */
public final class LeasedHolds {
  /** Owners renewed per store call (one pool's keys share a slot, so a call may hold many). */
  static final int RENEW_BATCH = 256;

  private final LeasedPlaces store;
  private final String namespace;
  private final String kind;
  private final String replica;
  private final LongSupplier leaseTtlMillis;
  // guarded by this
  private final Map<Key, Counts> held = new HashMap<>();
  private long heldTotal;
  private long storeFailures;

  /**
   * @param namespace the store's key namespace of this deployment ({@code quotas.keyPrefix})
   * @param kind the kind of owner ({@link LeasedPlaces.Scope#kind})
   * @param replica this replica's id (the same as its pool shares')
   * @param leaseTtlMillis the current {@code replicas.leaseTtl} (reloadable)
   */
  public LeasedHolds(
      LeasedPlaces store,
      String namespace,
      String kind,
      String replica,
      LongSupplier leaseTtlMillis) {
    this.store = store;
    this.namespace = namespace;
    this.kind = kind;
    this.replica = replica;
    this.leaseTtlMillis = leaseTtlMillis;
  }

  /**
   * Takes one place of {@code owner} in {@code pool}: null (nothing asked) when this replica
   * already tracks {@code maxOwners} owners and not this one; else a stage that never fails,
   * completing with the store's answer, or with null when the store did not answer (counted in
   * {@link #storeFailures}). When the answer is granted, the caller owns the place and must {@link
   * #release} it once.
   */
  public @Nullable CompletionStage<LeasedPlaces.@Nullable Answer> acquire(
      String pool, String owner, long work, int maxPlaces, long maxWork, int maxOwners) {
    Key k = new Key(pool, owner);
    synchronized (this) {
      Counts c = held.get(k);
      if (c == null) {
        if (held.size() >= maxOwners) {
          return null;
        }
        c = new Counts();
        held.put(k, c);
      }
      c.pending++;
    }
    CompletionStage<LeasedPlaces.Answer> answer;
    try {
      answer =
          store.acquire(
              scope(pool), owner, replica, Math.max(0, work), maxPlaces, maxWork, leaseTtl());
    } catch (RuntimeException e) {
      answer = CompletableFuture.failedFuture(e);
    }
    return answer.handle(
        (a, e) -> {
          boolean granted = e == null && a != null && a.granted();
          synchronized (this) {
            Counts c = held.computeIfAbsent(k, x -> new Counts());
            c.pending--;
            if (granted) {
              c.held++;
              heldTotal++;
            }
            if (c.idle()) {
              held.remove(k);
            }
            if (e != null || a == null) {
              storeFailures++;
            }
          }
          return e == null ? a : null;
        });
  }

  /**
   * Gives back one place {@link #acquire} granted (a no-op when this replica holds none of {@code
   * owner}): whether one was held. A release the store does not take expires within the lease.
   */
  public boolean release(String pool, String owner, long work) {
    Key k = new Key(pool, owner);
    synchronized (this) {
      Counts c = held.get(k);
      if (c == null || c.held <= 0) {
        return false;
      }
      c.held--;
      heldTotal--;
      if (c.idle()) {
        held.remove(k);
      }
    }
    try {
      var unused = store.release(scope(pool), owner, replica, Math.max(0, work), leaseTtl());
    } catch (RuntimeException e) {
      // the place expires within the lease
    }
    return true;
  }

  /**
   * Renews this replica's places of every owner it holds some of: one store call per pool (per
   * {@value #RENEW_BATCH} owners). Completes when every call was answered or failed.
   */
  public CompletionStage<Void> renew() {
    Map<String, Map<String, Integer>> byPool = new LinkedHashMap<>();
    synchronized (this) {
      for (Map.Entry<Key, Counts> e : held.entrySet()) {
        if (e.getValue().held > 0) {
          byPool
              .computeIfAbsent(e.getKey().pool(), p -> new LinkedHashMap<>())
              .put(e.getKey().owner(), e.getValue().held);
        }
      }
    }
    long ttl = leaseTtl();
    List<CompletableFuture<Void>> sent = new ArrayList<>();
    for (Map.Entry<String, Map<String, Integer>> e : byPool.entrySet()) {
      Map<String, Integer> batch = new LinkedHashMap<>();
      for (Map.Entry<String, Integer> t : e.getValue().entrySet()) {
        batch.put(t.getKey(), t.getValue());
        if (batch.size() == RENEW_BATCH) {
          sent.add(renew(e.getKey(), batch, ttl));
          batch = new LinkedHashMap<>();
        }
      }
      if (!batch.isEmpty()) {
        sent.add(renew(e.getKey(), batch, ttl));
      }
    }
    return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
  }

  private CompletableFuture<Void> renew(String pool, Map<String, Integer> batch, long ttl) {
    try {
      return store
          .renew(scope(pool), replica, batch, ttl)
          .toCompletableFuture()
          .exceptionally(e -> null);
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(null);
    }
  }

  /** Places this replica holds now, all owners and pools (a gauge). */
  public synchronized long held() {
    return heldTotal;
  }

  /** Places this replica holds of {@code owner} in {@code pool}. */
  public synchronized int held(String pool, String owner) {
    Counts c = held.get(new Key(pool, owner));
    return c == null ? 0 : c.held;
  }

  /** Owners (per pool) this replica holds places of or is asking for: the set renewed. */
  public synchronized int owners() {
    return held.size();
  }

  /** Calls the store did not answer (a counter). */
  public synchronized long storeFailures() {
    return storeFailures;
  }

  private LeasedPlaces.Scope scope(String pool) {
    return new LeasedPlaces.Scope(namespace, pool, kind);
  }

  private long leaseTtl() {
    return Math.max(1, leaseTtlMillis.getAsLong());
  }

  private record Key(String pool, String owner) {}

  private static final class Counts {
    int held;
    int pending;

    boolean idle() {
      return held <= 0 && pending <= 0;
    }
  }
}
