package io.sluice.store.memory;

import io.sluice.core.permit.PermitLeases;
import io.sluice.core.time.Ticker;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link PermitLeases} in this process (one replica, or replicas sharing one JVM in tests): per
 * pool, permit id to its lease's expiry on the injected ticker. Bounded: a pool's live leases by
 * {@code maxLeases}; an expired lease is kept one lease more (readable as {@link State#EXPIRED})
 * and pruned at the next grant, all expired ones at once when the pool's map holds {@code 2 x
 * maxLeases}. Thread-safe (one lock).
 */
public final class InMemoryPermitLeases implements PermitLeases {
  /** {@code late}: released after it expired ({@link State#RELEASED_AFTER_EXPIRY}). */
  private record Lease(long expiresAtNanos, long ttlNanos, boolean late) {}

  private final Ticker ticker;
  // guarded by this: pool key -> permit id -> lease, in grant order
  private final Map<String, LinkedHashMap<String, Lease>> pools = new HashMap<>();

  public InMemoryPermitLeases(Ticker ticker) {
    this.ticker = ticker;
  }

  @Override
  public synchronized CompletionStage<Boolean> grant(
      Scope scope, String permitId, int maxLeases, long leaseTtlMillis) {
    long now = ticker.nanos();
    LinkedHashMap<String, Lease> leases =
        pools.computeIfAbsent(scope.key(), k -> new LinkedHashMap<>());
    boolean full = leases.size() >= 2L * Math.max(1, maxLeases);
    long live = 0;
    for (Iterator<Lease> it = leases.values().iterator(); it.hasNext(); ) {
      Lease l = it.next();
      if (l.expiresAtNanos() - now > 0) {
        live++;
      } else if (full || l.expiresAtNanos() + l.ttlNanos() - now <= 0) {
        it.remove();
      }
    }
    if (live >= maxLeases || leases.containsKey(permitId)) {
      return CompletableFuture.completedFuture(false);
    }
    long ttl = Math.max(1, leaseTtlMillis) * 1_000_000L;
    leases.put(permitId, new Lease(now + ttl, ttl, false));
    return CompletableFuture.completedFuture(true);
  }

  @Override
  public synchronized CompletionStage<Boolean> renew(
      Scope scope, String permitId, long leaseTtlMillis) {
    Map<String, Lease> leases = pools.get(scope.key());
    Lease l = leases == null ? null : leases.get(permitId);
    long now = ticker.nanos();
    if (leases == null || l == null || l.expiresAtNanos() - now <= 0) {
      return CompletableFuture.completedFuture(false);
    }
    long ttl = Math.max(1, leaseTtlMillis) * 1_000_000L;
    leases.put(permitId, new Lease(now + ttl, ttl, false));
    return CompletableFuture.completedFuture(true);
  }

  @Override
  public synchronized CompletionStage<Ended> end(Scope scope, String permitId) {
    Map<String, Lease> leases = pools.get(scope.key());
    Lease l = leases == null ? null : leases.get(permitId);
    if (leases == null || l == null || l.late()) {
      return CompletableFuture.completedFuture(Ended.GONE);
    }
    if (l.expiresAtNanos() - ticker.nanos() <= 0) { // kept, marked, until it leaves as expired
      leases.put(permitId, new Lease(l.expiresAtNanos(), l.ttlNanos(), true));
      return CompletableFuture.completedFuture(Ended.AFTER_EXPIRY);
    }
    leases.remove(permitId);
    if (leases.isEmpty()) {
      pools.remove(scope.key());
    }
    return CompletableFuture.completedFuture(Ended.RELEASED);
  }

  @Override
  public synchronized CompletionStage<Map<String, State>> states(
      Scope scope, Collection<String> permitIds) {
    Map<String, Lease> leases = pools.getOrDefault(scope.key(), new LinkedHashMap<>());
    long now = ticker.nanos();
    Map<String, State> out = new HashMap<>();
    for (String id : permitIds) {
      Lease l = leases.get(id);
      out.put(
          id,
          l == null
              ? State.GONE
              : l.late()
                  ? State.RELEASED_AFTER_EXPIRY
                  : l.expiresAtNanos() - now > 0 ? State.LIVE : State.EXPIRED);
    }
    return CompletableFuture.completedFuture(out);
  }

  /** Lease records kept now, live or expired, every pool (the bound's test). */
  public synchronized int size() {
    int n = 0;
    for (Map<String, Lease> m : pools.values()) {
      n += m.size();
    }
    return n;
  }
}
