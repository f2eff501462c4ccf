package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.quota.TenantSlots;
import io.sluice.core.time.Ticker;
import io.sluice.observability.MetricNames;
import io.sluice.store.LocalRedis;
import io.sluice.store.memory.InMemoryPermitLeases;
import io.sluice.store.redis.RedisPermitLeases;
import io.sluice.store.redis.RedisTenantSlots;
import io.sluice.store.redis.RedisWorkflowPlaces;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The built-in leased-places ports go through the store-port seam as a feature's do: built once per
 * backend by {@link Stores}, handed out by port, their late writes counted under their store names.
 * In memory the tenant slots and workflow places are none (the process's own caps apply); the
 * permit leases are the process's.
 */
class BuiltInPortsTest {
  @Test
  void memory_noSharedSlotsOrPlaces_permitLeasesInProcess() {
    try (Stores stores =
        Stores.create(
            StoreEnv.settings(Map.of()),
            Clock.systemUTC(),
            Ticker.system(),
            new SimpleMeterRegistry(),
            List.of())) {
      assertThat(stores.tenantSlots()).isNull();
      assertThat(stores.workflowPlaces()).isNull();
      assertThat(stores.permitLeases()).isInstanceOf(InMemoryPermitLeases.class);
      assertThat(stores.permitLeases()).isSameAs(stores.port(BuiltInPorts.PERMIT_LEASES));
    }
  }

  @Test
  void redis_eachPortItsRedisClass_lateWritesCountedByStore_slotRoundTrip() {
    assumeTrue(LocalRedis.reachable(LocalRedis.PORT), "no Redis on 127.0.0.1:6379");
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    try (Stores stores =
        Stores.create(
            StoreEnv.settings(
                Map.of("BACKEND_TYPE", "redis", "REDIS_URL", "127.0.0.1:" + LocalRedis.PORT)),
            Clock.systemUTC(),
            Ticker.system(),
            registry,
            List.of())) {
      assertThat(stores.tenantSlots()).isInstanceOf(RedisTenantSlots.class);
      assertThat(stores.workflowPlaces()).isInstanceOf(RedisWorkflowPlaces.class);
      assertThat(stores.permitLeases()).isInstanceOf(RedisPermitLeases.class);
      for (String store :
          List.of(RedisTenantSlots.STORE, RedisWorkflowPlaces.STORE, RedisPermitLeases.STORE)) {
        assertThat(registry.find(MetricNames.STORE_LATE_WRITES_UNDONE).tag("store", store).meters())
            .as(store)
            .hasSize(1);
      }
      String ns = LocalRedis.uniquePrefix();
      TenantSlots slots = stores.tenantSlots();
      assertThat(slots.acquire(ns, "p", "acme", "a", 1, 10_000).toCompletableFuture().join())
          .isEqualTo(new TenantSlots.SlotAnswer(true, 0));
      assertThat(slots.acquire(ns, "p", "acme", "b", 1, 10_000).toCompletableFuture().join())
          .isEqualTo(new TenantSlots.SlotAnswer(false, 1));
      slots.release(ns, "p", "acme", "a", 10_000).toCompletableFuture().join();
      assertThat(slots.acquire(ns, "p", "acme", "b", 1, 10_000).toCompletableFuture().join())
          .isEqualTo(new TenantSlots.SlotAnswer(true, 0));
      slots.release(ns, "p", "acme", "b", 10_000).toCompletableFuture().join();
    }
  }
}
