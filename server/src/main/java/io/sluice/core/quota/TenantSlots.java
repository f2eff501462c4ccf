package io.sluice.core.quota;

import java.util.concurrent.CompletableFuture;
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
 * <p>It is the {@link LeasedPlaces} port under the kind {@value #KIND} (a slot is a place of no
 * work, the cap its {@code maxPlaces}): the stores implement it with {@link Over}, the core keeps
 * its holds through {@link #places()}. The layout (Redis: {@code
 * <namespace>{<pool>}:tenant:<tenantId>}, a sorted set of one holder per slot scored by its expiry)
 * is the store's; the core sees only this port.
 */
public interface TenantSlots extends LeasedPlaces.Typed {
  /** The kind of owner of a tenant's slots in {@link LeasedPlaces} (its key's part). */
  String KIND = "tenant";

  /** The leased places of {@code pool}'s tenants. */
  static LeasedPlaces.Scope scope(String namespace, String pool) {
    return new LeasedPlaces.Scope(namespace, pool, KIND);
  }

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
   * The store's answer to {@link #acquire}.
   *
   * @param granted whether this replica now holds one more slot
   * @param total the live slots of every replica before the call
   */
  record SlotAnswer(boolean granted, long total) {}

  /** This port as leased places of {@link #KIND} (a test's fake is adapted call by call). */
  @Override
  default LeasedPlaces places() {
    TenantSlots slots = this;
    return new LeasedPlaces.Adapter(this) {
      @Override
      public CompletionStage<Answer> acquire(
          Scope scope,
          String owner,
          String replica,
          long work,
          int maxPlaces,
          long maxWork,
          long leaseTtlMillis) {
        return slots
            .acquire(scope.namespace(), scope.pool(), owner, replica, maxPlaces, leaseTtlMillis)
            .thenApply(a -> new Answer(a.granted(), a.total(), 0));
      }

      @Override
      public CompletionStage<Void> release(
          Scope scope, String owner, String replica, long work, long leaseTtlMillis) {
        return slots.release(scope.namespace(), scope.pool(), owner, replica, leaseTtlMillis);
      }
    };
  }

  /**
   * The tenant slots of a {@link LeasedPlaces} store: a slot is a place of no work under {@link
   * #KIND}, the cap its {@code maxPlaces} (a cap under 1 grants nothing).
   */
  class Over extends LeasedPlaces.View implements TenantSlots {
    protected Over(LeasedPlaces places) {
      super(places, KIND);
    }

    @Override
    public final CompletionStage<SlotAnswer> acquire(
        String namespace,
        String pool,
        String tenant,
        String replica,
        int cap,
        long leaseTtlMillis) {
      if (cap <= 0) {
        return CompletableFuture.completedFuture(new SlotAnswer(false, 0));
      }
      return places()
          .acquire(scope(namespace, pool), tenant, replica, 0, cap, 0, leaseTtlMillis)
          .thenApply(a -> new SlotAnswer(a.granted(), a.places()));
    }

    @Override
    public final CompletionStage<Void> release(
        String namespace, String pool, String tenant, String replica, long leaseTtlMillis) {
      return places().release(scope(namespace, pool), tenant, replica, 0, leaseTtlMillis);
    }
  }
}
