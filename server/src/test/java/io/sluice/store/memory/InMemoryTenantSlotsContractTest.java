package io.sluice.store.memory;

import io.sluice.core.quota.TenantSlots;
import io.sluice.store.TenantSlotsContractTest;
import java.time.Clock;
import java.util.Map;

/** The in-process tenant slots on the system clock (contributions expire in real time). */
class InMemoryTenantSlotsContractTest extends TenantSlotsContractTest {
  private final InMemoryTenantSlots store =
      new InMemoryTenantSlots(new InMemoryLeasedPlaces(Clock.systemUTC()));

  @Override
  protected TenantSlots store() {
    return store;
  }

  @Override
  protected Map<String, Long> contributions(String ns) {
    return store.contributions(ns, "p", "acme");
  }
}
