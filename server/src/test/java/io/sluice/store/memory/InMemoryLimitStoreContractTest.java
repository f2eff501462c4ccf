package io.sluice.store.memory;

import io.sluice.core.adapt.LimitStore;
import io.sluice.store.LimitStoreContractTest;
import java.time.Clock;

/** The in-process limit store on the system clock (its records expire as Redis's do). */
class InMemoryLimitStoreContractTest extends LimitStoreContractTest {
  private final InMemoryLimitStore store = new InMemoryLimitStore(Clock.systemUTC());

  @Override
  protected LimitStore store() {
    return store;
  }
}
