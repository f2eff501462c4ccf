package io.sluice.store.memory;

import io.sluice.core.retry.AttemptStore;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.AttemptStoreContractTest;

/** The in-process attempts store: both "replicas" are the one store. */
class InMemoryAttemptStoreContractTest extends AttemptStoreContractTest {
  private final InMemoryAttemptStore store = new InMemoryAttemptStore(new FakeTicker(), 10_000);

  @Override
  protected AttemptStore replicaA() {
    return store;
  }

  @Override
  protected AttemptStore replicaB() {
    return store;
  }

  @Override
  protected String prefix() {
    return "t_{gpu}:";
  }
}
