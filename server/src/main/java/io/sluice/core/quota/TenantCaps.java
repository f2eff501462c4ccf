package io.sluice.core.quota;

import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
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
 * when its last slot is given back. The holds are {@link LeasedHolds} of kind {@link
 * TenantSlots#KIND}, as the workflow places' are of theirs.
 *
 * <p>One per process (the held set outlives config reloads). {@link #none()} when the store is in
 * this process: then the per-replica check in the pool is the whole cap and nothing is called.
 * Thread-safe (one monitor over the held set; the store is never called under it).
 */
public final class TenantCaps {
  private static final TenantCaps NONE = new TenantCaps();

  private final @Nullable LeasedHolds holds;

  /**
   * @param namespace the store's key namespace of this deployment ({@code quotas.keyPrefix})
   * @param replica this replica's id (the same as its pool shares')
   * @param leaseTtlMillis the current {@code replicas.leaseTtl} (reloadable)
   */
  public TenantCaps(
      TenantSlots store, String namespace, String replica, LongSupplier leaseTtlMillis) {
    this.holds =
        new LeasedHolds(store.places(), namespace, TenantSlots.KIND, replica, leaseTtlMillis);
  }

  private TenantCaps() {
    this.holds = null;
  }

  /** No store shared with other replicas: {@link #applies} is always false. */
  public static TenantCaps none() {
    return NONE;
  }

  /** Whether requests of {@code tier} take a slot in the store (shared store, a cap set). */
  public boolean applies(TierPolicy tier) {
    return holds != null && tier.maxInFlight() > 0;
  }

  /**
   * Takes one of {@code tenant}'s slots in {@code pool}. The stage never fails: a store failure is
   * answered by {@code mode}. When the answer is {@link SlotCheck#granted()}, the caller owns the
   * slot and must {@link #release} it once.
   */
  public CompletionStage<SlotCheck> acquire(
      String pool, Tenant tenant, TenantQuotas.FailureMode mode) {
    LeasedHolds h = holds;
    int cap = tenant.tier().maxInFlight();
    if (h == null) {
      return CompletableFuture.completedFuture(SlotCheck.UNCAPPED);
    }
    if (cap <= 0) {
      return CompletableFuture.completedFuture(new SlotCheck(false, false, false, 0));
    }
    CompletionStage<LeasedPlaces.@Nullable Answer> answer =
        h.acquire(pool, tenant.id(), 0, cap, 0, Integer.MAX_VALUE);
    if (answer == null) {
      return CompletableFuture.completedFuture(SlotCheck.UNCAPPED);
    }
    return answer.thenApply(
        a -> {
          if (a == null) {
            return mode == TenantQuotas.FailureMode.OPEN ? SlotCheck.FAILED_OPEN : SlotCheck.FAILED;
          }
          return new SlotCheck(a.granted(), a.granted(), false, a.places());
        });
  }

  /** Gives back one slot {@link #acquire} granted (a no-op when this replica holds none). */
  public void release(String pool, String tenantId) {
    LeasedHolds h = holds;
    if (h != null) {
      h.release(pool, tenantId, 0);
    }
  }

  /**
   * Renews this replica's contribution for every tenant it holds slots of: one store call per pool
   * (per {@value LeasedHolds#RENEW_BATCH} tenants). Completes when every call was answered or
   * failed.
   */
  public CompletionStage<Void> renew() {
    LeasedHolds h = holds;
    return h == null ? CompletableFuture.completedFuture(null) : h.renew();
  }

  /** Slots this replica holds now, all tenants and pools (a gauge). */
  public long held() {
    LeasedHolds h = holds;
    return h == null ? 0 : h.held();
  }

  /** Slots this replica holds of {@code tenantId} in {@code pool}. */
  public int held(String pool, String tenantId) {
    LeasedHolds h = holds;
    return h == null ? 0 : h.held(pool, tenantId);
  }

  /**
   * Tenants (per pool) this replica holds slots of or is asking for: the set {@link #renew} reads.
   */
  public int tenants() {
    LeasedHolds h = holds;
    return h == null ? 0 : h.owners();
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
}
