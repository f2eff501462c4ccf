package io.sluice.bootstrap;

import io.sluice.core.permit.PermitLeases;
import io.sluice.core.quota.TenantSlots;
import io.sluice.core.quota.WorkflowPlaces;
import io.sluice.core.time.Ticker;
import io.sluice.feature.StorePort;
import io.sluice.store.memory.InMemoryLeasedPlaces;
import io.sluice.store.memory.InMemoryPermitLeases;
import io.sluice.store.memory.InMemoryTenantSlots;
import io.sluice.store.memory.InMemoryWorkflowPlaces;
import io.sluice.store.redis.RedisConnection;
import io.sluice.store.redis.RedisPermitLeases;
import io.sluice.store.redis.RedisTenantSlots;
import io.sluice.store.redis.RedisWorkflowPlaces;
import java.time.Clock;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The store ports of the built-in parts that hold leased places in the shared store, built by
 * {@link Stores} as the features' ports are (one class per backend, its late writes counted under
 * its store name): the capped tenants' slots ({@code tiers.<t>.maxInFlight} across replicas), the
 * workflows' places ({@code pools.<p>.workflow} across replicas) and the permit API's leases. Each
 * pair runs its port's contract suite ({@code store/TenantSlotsContractTest}, {@code
 * WorkflowPlacesContractTest}, {@code PermitLeasesContractTest}) on memory and on Redis.
 */
final class BuiltInPorts {
  private BuiltInPorts() {}

  /** Tenant slots: a leased place of kind {@code tenant} per slot ({@code leased_places.lua}). */
  static final StorePort<TenantSlots> TENANT_SLOTS =
      port(
          "tenant-slots",
          RedisTenantSlots.STORE,
          t -> new InMemoryTenantSlots(new InMemoryLeasedPlaces(Clock.systemUTC())),
          RedisTenantSlots::new);

  /** Workflow places: a leased place of kind {@code workflow} per request of a workflow. */
  static final StorePort<WorkflowPlaces> WORKFLOW_PLACES =
      port(
          "workflow-places",
          RedisWorkflowPlaces.STORE,
          t -> new InMemoryWorkflowPlaces(new InMemoryLeasedPlaces(Clock.systemUTC())),
          RedisWorkflowPlaces::new);

  /** The permit API's leases: in memory on the process's ticker, or on Redis. */
  static final StorePort<PermitLeases> PERMIT_LEASES =
      port(
          "permit-leases",
          RedisPermitLeases.STORE,
          InMemoryPermitLeases::new,
          RedisPermitLeases::new);

  /** The built-in ports, in the order they are built (before the features'). */
  static final List<StorePort<?>> ALL = List.of(TENANT_SLOTS, WORKFLOW_PLACES, PERMIT_LEASES);

  private static <P> StorePort<P> port(
      String name,
      @Nullable String lateWrites,
      java.util.function.Function<Ticker, P> memory,
      java.util.function.Function<RedisConnection, P> redis) {
    return new StorePort<>() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public P memory(Ticker ticker, boolean isolated) {
        return memory.apply(ticker);
      }

      @Override
      public P redis(RedisConnection connection) {
        return redis.apply(connection);
      }

      @Override
      public @Nullable String lateWriteStore() {
        return lateWrites;
      }
    };
  }
}
