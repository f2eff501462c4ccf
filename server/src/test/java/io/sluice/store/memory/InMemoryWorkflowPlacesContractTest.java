package io.sluice.store.memory;

import io.sluice.core.quota.WorkflowPlaces;
import io.sluice.store.WorkflowPlacesContractTest;
import java.time.Clock;
import java.util.Map;

/** The in-process workflow places on the system clock (places expire in real time). */
class InMemoryWorkflowPlacesContractTest extends WorkflowPlacesContractTest {
  private final InMemoryWorkflowPlaces store =
      new InMemoryWorkflowPlaces(new InMemoryLeasedPlaces(Clock.systemUTC()));

  @Override
  protected WorkflowPlaces store() {
    return store;
  }

  @Override
  protected Map<String, Long> contributions(String ns) {
    return store.contributions(ns, "p", "run-1");
  }
}
