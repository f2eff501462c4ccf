package io.sluice.store.memory;

import io.sluice.core.share.ShareStore;
import io.sluice.store.ShareStoreContractTest;
import java.time.Clock;

/** The in-process share store on the system clock (leases expire in real time, as Redis's). */
class InMemoryShareStoreContractTest extends ShareStoreContractTest {
  private final InMemoryShareStore store = new InMemoryShareStore(Clock.systemUTC());

  @Override
  protected ShareStore store() {
    return store;
  }
}
