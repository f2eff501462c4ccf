package io.sluice.store.memory;

import io.sluice.core.quota.WorkflowPlaces;
import java.time.Clock;
import java.util.Map;

/**
 * {@link WorkflowPlaces} in this process, for replicas that share one JVM (tests, simulations): the
 * leased places of kind {@code workflow} in an {@link InMemoryLeasedPlaces} on the injected {@link
 * Clock}.
 */
public final class InMemoryWorkflowPlaces extends WorkflowPlaces.Over {
  private final InMemoryLeasedPlaces places;

  /** Over {@code places} (e.g. {@code new InMemoryLeasedPlaces(clock)}), kind {@code workflow}. */
  public InMemoryWorkflowPlaces(InMemoryLeasedPlaces places) {
    super(places);
    this.places = places;
  }

  /** Each replica's places of {@code workflow} as held now (expired ones until pruned). */
  public Map<String, Long> contributions(String namespace, String pool, String workflow) {
    return places.contributions(WorkflowPlaces.scope(namespace, pool), workflow);
  }
}
