package io.sluice.store.memory;

import io.sluice.core.quota.TenantSlots;
import io.sluice.core.store.PoolKeys;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link TenantSlots} in this process, for replicas that share one JVM (tests, simulations): the
 * port's contract counted per replica ({@code tenant_slots.lua} keeps a holder per slot instead,
 * which only a store a call can time out on needs). Contributions expire on the injected {@link
 * Clock}; a tenant's record is dropped once it holds none. Thread-safe (one lock).
 */
public final class InMemoryTenantSlots implements TenantSlots {
  /** One replica's contribution to one tenant's slots. */
  private record Contribution(long expiresAtMillis, long count) {}

  private final Clock clock;
  private final Map<String, Map<String, Contribution>> tenants = new HashMap<>();

  public InMemoryTenantSlots(Clock clock) {
    this.clock = clock;
  }

  @Override
  public synchronized CompletionStage<SlotAnswer> acquire(
      String namespace, String pool, String tenant, String replica, int cap, long leaseTtlMillis) {
    long now = clock.millis();
    long ttl = Math.max(1, leaseTtlMillis);
    Map<String, Contribution> held =
        tenants.computeIfAbsent(key(namespace, pool, tenant), k -> new HashMap<>());
    // this replica's own contribution counts even past its expiry: the call shows it is alive
    held.entrySet()
        .removeIf(e -> !e.getKey().equals(replica) && e.getValue().expiresAtMillis() <= now);
    long total = 0;
    for (Contribution c : held.values()) {
      total += c.count();
    }
    if (total < cap) {
      Contribution mine = held.get(replica);
      held.put(replica, new Contribution(now + ttl, (mine == null ? 0 : mine.count()) + 1));
      return CompletableFuture.completedFuture(new SlotAnswer(true, total));
    }
    if (held.isEmpty()) {
      tenants.remove(key(namespace, pool, tenant));
    }
    return CompletableFuture.completedFuture(new SlotAnswer(false, total));
  }

  @Override
  public synchronized CompletionStage<Void> release(
      String namespace, String pool, String tenant, String replica, long leaseTtlMillis) {
    String key = key(namespace, pool, tenant);
    Map<String, Contribution> held = tenants.get(key);
    Contribution mine = held == null ? null : held.get(replica);
    if (held != null && mine != null) {
      if (mine.count() <= 1) {
        held.remove(replica);
      } else {
        held.put(replica, new Contribution(mine.expiresAtMillis(), mine.count() - 1));
      }
      if (held.isEmpty()) {
        tenants.remove(key);
      }
    }
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public synchronized CompletionStage<Void> renew(
      String namespace,
      String pool,
      String replica,
      Map<String, Integer> held,
      long leaseTtlMillis) {
    long now = clock.millis();
    long ttl = Math.max(1, leaseTtlMillis);
    for (Map.Entry<String, Integer> e : held.entrySet()) {
      String key = key(namespace, pool, e.getKey());
      Map<String, Contribution> record = tenants.get(key);
      Contribution mine = record == null ? null : record.get(replica);
      long count = mine == null ? Math.max(0, e.getValue()) : mine.count();
      if (count > 0) {
        tenants
            .computeIfAbsent(key, k -> new HashMap<>())
            .put(replica, new Contribution(now + ttl, count));
      }
    }
    return CompletableFuture.completedFuture(null);
  }

  /** Each replica's slots of {@code tenant} as held now (expired ones included until pruned). */
  public synchronized Map<String, Long> contributions(
      String namespace, String pool, String tenant) {
    Map<String, Long> out = new HashMap<>();
    Map<String, Contribution> record = tenants.get(key(namespace, pool, tenant));
    if (record != null) {
      record.forEach((replica, c) -> out.put(replica, c.count()));
    }
    return out;
  }

  private static String key(String namespace, String pool, String tenant) {
    return PoolKeys.key(namespace, pool, "tenant:" + tenant);
  }
}
