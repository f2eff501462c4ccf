package io.sluice.core.quota;

import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
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
 * A tier's {@code maxInFlight} held for the tenant across the replicas that share a store
 * (docs/scheduling.md §11): a capped request takes one of its tenant's slots in the store ({@link
 * TenantSlots}) before the pool decides, and gives it back exactly once when it ends, however it
 * ends (the session guards that). One store round trip per capped request, as for the tenant token
 * budgets; a store failure follows {@code quotas.failureMode}.
 *
 * <p>This replica's contributions carry a lease expiry on the store's clock; {@link #renew} (every
 * {@code replicas.renewInterval}, beside the pool shares) refreshes every tenant it holds slots of,
 * so the contributions of a replica that died expire and return to the others. The set renewed is
 * bounded by this replica's in-flight and queued requests of capped tenants: an entry leaves it
 * when its last slot is given back.
 *
 * <p>One per process (the held set outlives config reloads). {@link #none()} when the store is in
 * this process: then the per-replica check in the pool is the whole cap and nothing is called.
 * Thread-safe (one monitor over the held set; the store is never called under it).
 */
public final class TenantCaps {
  /** Tenants renewed per store call (one pool's keys share a slot, so a call may hold many). */
  static final int RENEW_BATCH = 256;

  private static final TenantCaps NONE = new TenantCaps();

  private final @Nullable TenantSlots store;
  private final String namespace;
  private final String replica;
  private final LongSupplier leaseTtlMillis;
  // guarded by this
  private final Map<Key, Counts> held = new HashMap<>();
  private long heldTotal;

  /**
   * @param namespace the store's key namespace of this deployment ({@code quotas.keyPrefix})
   * @param replica this replica's id (the same as its pool shares')
   * @param leaseTtlMillis the current {@code replicas.leaseTtl} (reloadable)
   */
  public TenantCaps(
      TenantSlots store, String namespace, String replica, LongSupplier leaseTtlMillis) {
    this.store = store;
    this.namespace = namespace;
    this.replica = replica;
    this.leaseTtlMillis = leaseTtlMillis;
  }

  private TenantCaps() {
    this.store = null;
    this.namespace = "";
    this.replica = "";
    this.leaseTtlMillis = () -> 0;
  }

  /** No store shared with other replicas: {@link #applies} is always false. */
  public static TenantCaps none() {
    return NONE;
  }

  /** Whether requests of {@code tier} take a slot in the store (shared store, a cap set). */
  public boolean applies(TierPolicy tier) {
    return store != null && tier.maxInFlight() > 0;
  }

  /**
   * Takes one of {@code tenant}'s slots in {@code pool}. The stage never fails: a store failure is
   * answered by {@code mode}. When the answer is {@link SlotCheck#granted()}, the caller owns the
   * slot and must {@link #release} it once.
   */
  public CompletionStage<SlotCheck> acquire(
      String pool, Tenant tenant, TenantQuotas.FailureMode mode) {
    TenantSlots s = store;
    if (s == null) {
      return CompletableFuture.completedFuture(SlotCheck.UNCAPPED);
    }
    Key k = new Key(pool, tenant.id());
    synchronized (this) {
      held.computeIfAbsent(k, x -> new Counts()).pending++;
    }
    CompletionStage<TenantSlots.SlotAnswer> answer;
    try {
      answer =
          s.acquire(namespace, pool, tenant.id(), replica, tenant.tier().maxInFlight(), leaseTtl());
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
          }
          if (e != null || a == null) {
            return mode == TenantQuotas.FailureMode.OPEN ? SlotCheck.FAILED_OPEN : SlotCheck.FAILED;
          }
          return new SlotCheck(granted, granted, false, a.total());
        });
  }

  /** Gives back one slot {@link #acquire} granted (a no-op when this replica holds none). */
  public void release(String pool, String tenantId) {
    TenantSlots s = store;
    if (s == null) {
      return;
    }
    Key k = new Key(pool, tenantId);
    synchronized (this) {
      Counts c = held.get(k);
      if (c == null || c.held <= 0) {
        return;
      }
      c.held--;
      heldTotal--;
      if (c.idle()) {
        held.remove(k);
      }
    }
    try {
      var unused = s.release(namespace, pool, tenantId, replica, leaseTtl());
    } catch (RuntimeException e) {
      // the contribution expires within the lease (see docs/scheduling.md §11)
    }
  }

  /**
   * Renews this replica's contribution for every tenant it holds slots of: one store call per pool
   * (per {@value #RENEW_BATCH} tenants). Completes when every call was answered or failed.
   */
  public CompletionStage<Void> renew() {
    TenantSlots s = store;
    if (s == null) {
      return CompletableFuture.completedFuture(null);
    }
    Map<String, Map<String, Integer>> byPool = new LinkedHashMap<>();
    synchronized (this) {
      for (Map.Entry<Key, Counts> e : held.entrySet()) {
        if (e.getValue().held > 0) {
          byPool
              .computeIfAbsent(e.getKey().pool(), p -> new LinkedHashMap<>())
              .put(e.getKey().tenant(), e.getValue().held);
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
          sent.add(renew(s, e.getKey(), batch, ttl));
          batch = new LinkedHashMap<>();
        }
      }
      if (!batch.isEmpty()) {
        sent.add(renew(s, e.getKey(), batch, ttl));
      }
    }
    return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
  }

  private CompletableFuture<Void> renew(
      TenantSlots s, String pool, Map<String, Integer> batch, long ttl) {
    try {
      return s.renew(namespace, pool, replica, batch, ttl)
          .toCompletableFuture()
          .exceptionally(e -> null);
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(null);
    }
  }

  /** Slots this replica holds now, all tenants and pools (a gauge). */
  public synchronized long held() {
    return heldTotal;
  }

  /** Slots this replica holds of {@code tenantId} in {@code pool}. */
  public synchronized int held(String pool, String tenantId) {
    Counts c = held.get(new Key(pool, tenantId));
    return c == null ? 0 : c.held;
  }

  /**
   * Tenants (per pool) this replica holds slots of or is asking for: the set {@link #renew} reads.
   */
  public synchronized int tenants() {
    return held.size();
  }

  private long leaseTtl() {
    return Math.max(1, leaseTtlMillis.getAsLong());
  }

  /**
   * What {@link #acquire} answers.
   *
   * @param allowed whether the request may go on to the pool
   * @param granted whether it holds a slot now (to be released once)
   * @param storeFailed the store did not answer; {@code allowed} then follows the failure mode
   * @param total the tenant's live slots across replicas the store saw (when it answered)
   */
  public record SlotCheck(boolean allowed, boolean granted, boolean storeFailed, long total) {
    static final SlotCheck UNCAPPED = new SlotCheck(true, false, false, 0);
    static final SlotCheck FAILED_OPEN = new SlotCheck(true, false, true, 0);
    static final SlotCheck FAILED = new SlotCheck(false, false, true, 0);
  }

  private record Key(String pool, String tenant) {}

  private static final class Counts {
    int held;
    int pending;

    boolean idle() {
      return held <= 0 && pending <= 0;
    }
  }
}
