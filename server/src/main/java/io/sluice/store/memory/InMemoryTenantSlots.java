package io.sluice.store.memory;

import io.sluice.core.quota.TenantSlots;
import java.time.Clock;
import java.util.Map;

/**
 * {@link TenantSlots} in this process, for replicas that share one JVM (tests, simulations): the
 * leased places of kind {@code tenant} in an {@link InMemoryLeasedPlaces} on the injected {@link
 * Clock}.
 */
public final class InMemoryTenantSlots extends TenantSlots.Over {
  private final InMemoryLeasedPlaces places;

  /** Over {@code places} (e.g. {@code new InMemoryLeasedPlaces(clock)}), kind {@code tenant}. */
  public InMemoryTenantSlots(InMemoryLeasedPlaces places) {
    super(places);
    this.places = places;
  }

  /** Each replica's slots of {@code tenant} as held now (expired ones included until pruned). */
  public Map<String, Long> contributions(String namespace, String pool, String tenant) {
    return places.contributions(TenantSlots.scope(namespace, pool), tenant);
  }
}
