package io.sluice.store.memory;

import io.sluice.core.budget.BudgetStore;
import io.sluice.store.BudgetStoreContractTest;

/** One replica's store: both "replicas" are the same process. */
class InMemoryBudgetStoreContractTest extends BudgetStoreContractTest {
  private final InMemoryBudgetStore store = new InMemoryBudgetStore(1000);

  @Override
  protected BudgetStore replicaA() {
    return store;
  }

  @Override
  protected BudgetStore replicaB() {
    return store;
  }

  @Override
  protected String prefix() {
    return "t_";
  }
}
