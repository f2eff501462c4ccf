package io.sluice.core.quota;

import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * The store that counts a capped tenant's requests across replicas (tiers' {@code maxInFlight}):
 * per tenant and pool, each replica's contribution (the slots it holds), each slot with an expiry
 * on the store's own clock, so a replica that stops renewing stops counting (docs/scheduling.md
 * §11). Every call is one atomic step in the store.
 *
 * <p>A shared store may see a call's write after the call failed (a hung store runs it when it
 * resumes): it must then take that write back, or let it expire within the lease, since the caller
 * holds nothing to give back (a failed {@link #acquire} is no slot).
 *
 * <p>The layout (Redis: {@code <namespace>{<pool>}:tenant:<tenantId>}, a sorted set of one holder
 * per slot scored by its expiry) is the store's; the core sees only this port.
 */
public interface TenantSlots {
  /**
   * Takes one slot of {@code tenant} for {@code replica} when the live slots of every replica add
   * up to less than {@code cap}; expired contributions are dropped first. A grant refreshes this
   * replica's expiry.
   */
  CompletionStage<SlotAnswer> acquire(
      String namespace, String pool, String tenant, String replica, int cap, long leaseTtlMillis);

  /** Gives one slot back: this replica's count goes down by one, never below 0. */
  CompletionStage<Void> release(
      String namespace, String pool, String tenant, String replica, long leaseTtlMillis);

  /**
   * Renews this replica's contribution for each tenant of {@code held} (tenant → slots this replica
   * holds): a contribution that is there keeps its count with a fresh expiry; one that is gone (it
   * expired during a store outage) is written back with the count held.
   */
  CompletionStage<Void> renew(
      String namespace,
      String pool,
      String replica,
      Map<String, Integer> held,
      long leaseTtlMillis);

  /**
   * The store's answer to {@link #acquire}.
   *
   * @param granted whether this replica now holds one more slot
   * @param total the live slots of every replica before the call
   */
  record SlotAnswer(boolean granted, long total) {}
}
