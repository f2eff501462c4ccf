package io.sluice.bootstrap;

import io.micrometer.core.instrument.MeterRegistry;
import io.sluice.core.store.KeyValueStore;
import io.sluice.core.time.Ticker;
import io.sluice.feature.StorePort;
import io.sluice.feature.StorePorts;
import io.sluice.rls.RlsMetrics;
import io.sluice.store.StoreSettings;
import io.sluice.store.memory.InMemoryStore;
import io.sluice.store.redis.RedisConnection;
import io.sluice.store.redis.RedisKeyValueStore;
import io.sluice.store.redis.RedisLimitStore;
import io.sluice.store.redis.RedisReserveStore;
import io.sluice.store.redis.RedisShareStore;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The process's key-value stores, built once from {@link StoreSettings} ({@code BACKEND_TYPE},
 * {@code REDIS_*}, {@code SLUICE_RLS_MEMORY_*}) and handed as ports to the rate limit service and
 * to the tenant quotas, so both count in the same store: with {@code BACKEND_TYPE=redis} tenant
 * budgets hold across replicas whether or not the rate limit service is enabled.
 *
 * <ul>
 *   <li>{@link #shared()}: the backend (one bounded {@link InMemoryStore}, or a {@link
 *       RedisKeyValueStore}; with Redis every port is its own class on one {@link
 *       RedisConnection}).
 *   <li>{@link #local()}: the in-process store of the rate limit failure mode {@code local}: the
 *       backend itself when it is memory (it cannot fail), else a bounded {@link InMemoryStore}.
 * </ul>
 *
 * <p>The store ports ({@link StorePort}: shared state) are built here once, on the backend, without
 * being named: the built-in ones ({@link BuiltInPorts}: tenant slots, workflow places, permit
 * leases) and the features'. Each port says how it is built on memory and on Redis, and its users
 * ask for it by port ({@link #port}).
 *
 * <p>Memory stores are observed as {@code sluice.rls.store.memory.*{store=memory|local}}. With
 * {@link BuiltInPorts} the only class that names a store implementation besides the feature
 * modules' ports; closing it closes the Redis connection.
 */
public final class Stores implements AutoCloseable, StorePorts {
  private static final Logger LOG = LoggerFactory.getLogger(Stores.class);

  private final StoreSettings settings;
  private final KeyValueStore shared;
  private final KeyValueStore local;
  private final io.sluice.core.share.@Nullable ShareStore shares;
  private final AutoCloseable closer;
  // the built-in and the features' ports, built on the backend (shared exactly when it is), by port
  private final Map<StorePort<?>, Object> ports;
  // the adaptive limits' shared state: Redis only (in memory the pool's own limit is the limit)
  private io.sluice.core.adapt.@org.jspecify.annotations.Nullable LimitStore limits;
  // the learned output reserve's shared state: Redis only (in memory the learner outlives reloads)
  private io.sluice.core.estimate.@org.jspecify.annotations.Nullable ReserveStore reserves;

  private Stores(
      StoreSettings settings,
      KeyValueStore shared,
      KeyValueStore local,
      io.sluice.core.share.@Nullable ShareStore shares,
      AutoCloseable closer,
      Map<StorePort<?>, Object> ports) {
    this.ports = ports;
    this.settings = settings;
    this.shared = shared;
    this.local = local;
    this.shares = shares;
    this.closer = closer;
  }

  /**
   * The stores of {@code env} (the merged {@code rateLimit.env} and process environment).
   *
   * @param registry where the memory stores' gauges go, or null for none
   * @throws IllegalArgumentException a bad setting, naming the variable
   */
  public static Stores fromEnv(
      Map<String, String> env, Clock clock, Ticker ticker, MeterRegistry registry) {
    return create(StoreEnv.settings(env), clock, ticker, registry);
  }

  public static Stores create(
      StoreSettings settings, Clock clock, Ticker ticker, MeterRegistry registry) {
    return create(settings, clock, ticker, registry, Features.storePorts());
  }

  /** The stores, with the built-in ports ({@link BuiltInPorts}) and these features' ports. */
  static Stores create(
      StoreSettings settings,
      Clock clock,
      Ticker ticker,
      MeterRegistry registry,
      List<StorePort<?>> features) {
    List<StorePort<?>> featurePorts = withBuiltIns(features);
    if (settings.redisBackend()) {
      RedisConnection redis = new RedisConnection(settings.redis(), ticker);
      // the key-value store first: warm-up rounds run in the order the ports register
      KeyValueStore keyValue = new RedisKeyValueStore(redis);
      io.sluice.core.share.ShareStore shares = new RedisShareStore(redis);
      io.sluice.core.adapt.LimitStore limits = new RedisLimitStore(redis);
      Map<StorePort<?>, Object> ports = new LinkedHashMap<>();
      featurePorts.forEach(p -> ports.put(p, p.redis(redis)));
      InMemoryStore local = new InMemoryStore(clock, settings.memoryBounds());
      bind(registry, "local", local);
      bindLateWrites(registry, redis, featurePorts);
      Stores s = new Stores(settings, keyValue, local, shares, redis, ports);
      s.limits = limits;
      s.reserves = new RedisReserveStore(redis);
      return s;
    }
    InMemoryStore memory = new InMemoryStore(clock, settings.memoryBounds());
    bind(registry, "memory", memory);
    return new Stores(
        settings, memory, memory, null, () -> {}, memoryPorts(featurePorts, ticker, false));
  }

  private static List<StorePort<?>> withBuiltIns(List<StorePort<?>> features) {
    List<StorePort<?>> all = new ArrayList<>(BuiltInPorts.ALL);
    all.addAll(features);
    return List.copyOf(all);
  }

  private static Map<StorePort<?>, Object> memoryPorts(
      List<StorePort<?>> featurePorts, Ticker ticker, boolean isolated) {
    Map<StorePort<?>, Object> ports = new LinkedHashMap<>();
    featurePorts.forEach(p -> ports.put(p, p.memory(ticker, isolated)));
    return ports;
  }

  /** A private in-memory store with the default bound and no metrics (the warm-up's). */
  static Stores isolatedMemory(Clock clock) {
    InMemoryStore memory = new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT);
    return new Stores(
        StoreEnv.settings(Map.of()),
        memory,
        memory,
        null,
        () -> {},
        memoryPorts(withBuiltIns(Features.storePorts()), Ticker.system(), true));
  }

  /** {@code sluice_store_late_writes_undone_total{store}} of the Redis ports that write holders. */
  private static void bindLateWrites(
      MeterRegistry registry, RedisConnection redis, List<StorePort<?>> featurePorts) {
    if (registry == null) {
      return;
    }
    List<String> stores = new ArrayList<>();
    for (StorePort<?> p : featurePorts) {
      String name = p.lateWriteStore();
      if (name != null) {
        stores.add(name);
      }
    }
    for (String store : stores) {
      io.micrometer.core.instrument.FunctionCounter.builder(
              io.sluice.observability.MetricNames.STORE_LATE_WRITES_UNDONE,
              redis,
              c -> c.lateWritesUndone(store))
          .tag("store", store)
          .description(
              "writes that landed in the store after their call had timed out (a hung Redis ran"
                  + " them late), taken back: in-flight claims (attempts), tenant slots"
                  + " (tenant_slots)")
          .register(registry);
    }
  }

  private static void bind(MeterRegistry registry, String tag, InMemoryStore store) {
    if (registry != null) {
      RlsMetrics.bindMemoryStore(registry, tag, store);
    }
  }

  public StoreSettings settings() {
    return settings;
  }

  /** The backend: the rate limit service's counters and buckets, and the tenant quotas'. */
  public KeyValueStore shared() {
    return shared;
  }

  /**
   * The store that leases pool shares among replicas, or null when the backend lives in this
   * process (one replica: every pool's numbers are this replica's own).
   */
  public io.sluice.core.share.@Nullable ShareStore shares() {
    return shares;
  }

  /**
   * The store that counts capped tenants' slots across replicas, or null when the backend lives in
   * this process (a tier's {@code maxInFlight} is then this replica's own).
   */
  public io.sluice.core.quota.@Nullable TenantSlots tenantSlots() {
    return shared.inProcess() ? null : port(BuiltInPorts.TENANT_SLOTS);
  }

  /**
   * The store that counts the workflows' places across replicas, or null when the backend lives in
   * this process (a workflow's budget is then this process's own).
   */
  public io.sluice.core.quota.@Nullable WorkflowPlaces workflowPlaces() {
    return shared.inProcess() ? null : port(BuiltInPorts.WORKFLOW_PLACES);
  }

  /**
   * A feature's port as built for this backend: the Redis one when the backend is Redis (across
   * replicas), else the in-process one.
   */
  @Override
  public <P> P port(StorePort<P> port) {
    Object p = ports.get(port);
    if (p == null) {
      throw new IllegalArgumentException("store port not registered: " + port.name());
    }
    @SuppressWarnings("unchecked") // put by create from this very port
    P typed = (P) p;
    return typed;
  }

  /** Applies a snapshot's policy to every feature port ({@link StorePort#configure}). */
  void configure(io.sluice.config.SluiceConfig config) {
    ports.forEach((port, built) -> configure(port, built, config));
  }

  @SuppressWarnings("unchecked")
  private static <P> void closePort(StorePort<P> port, Object built) {
    try {
      port.close((P) built);
    } catch (RuntimeException e) {
      LOG.warn("closing store port {}: {}", port.name(), e.toString());
    }
  }

  @SuppressWarnings("unchecked")
  private static <P> void configure(
      StorePort<P> port, Object built, io.sluice.config.SluiceConfig config) {
    port.configure((P) built, config);
  }

  /**
   * Where the replicas share each adaptive pool's learned limit, or null when the backend lives in
   * this process (nothing to share with).
   */
  public io.sluice.core.adapt.@org.jspecify.annotations.Nullable LimitStore limits() {
    return limits;
  }

  /**
   * Where the replicas share the learned output reserve, or null when the backend lives in this
   * process (nothing to share with; the learner itself outlives reloads).
   */
  public io.sluice.core.estimate.@org.jspecify.annotations.Nullable ReserveStore reserves() {
    return reserves;
  }

  /**
   * The permit API's lease records: in this process with the memory backend (built on the process's
   * ticker), on Redis with the Redis backend (a permit renewed or released at any replica).
   */
  public io.sluice.core.permit.PermitLeases permitLeases() {
    return port(BuiltInPorts.PERMIT_LEASES);
  }

  /** The in-process store of failure mode {@code local}. */
  public KeyValueStore local() {
    return local;
  }

  /**
   * Completes when the backend answers: at once in memory; for Redis, {@code rounds} warm-up calls
   * on keys under {@code keyPrefix}, a failed attempt retried every {@code
   * REDIS_RECONNECT_INTERVAL} until {@code timeoutNanos} (then the stage fails). The bootstrap
   * waits on it when the rate limit service (whose own warm-up covers the store) is off.
   */
  CompletionStage<Void> warmUp(String keyPrefix, int rounds, long timeoutNanos, Ticker ticker) {
    if (shared.inProcess()) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Void> done = new CompletableFuture<>();
    long deadline = ticker.nanos() + timeoutNanos;
    Runnable[] attempt = new Runnable[1];
    attempt[0] =
        () ->
            shared
                .warmUp(keyPrefix, rounds)
                .whenComplete(
                    (v, e) -> {
                      if (e == null) {
                        done.complete(null);
                      } else if (ticker.nanos() - deadline >= 0) {
                        done.completeExceptionally(e);
                      } else {
                        CompletableFuture.delayedExecutor(
                                Math.max(50, shared.retryInterval().toMillis()),
                                TimeUnit.MILLISECONDS)
                            .execute(attempt[0]);
                      }
                    });
    attempt[0].run();
    return done;
  }

  @Override
  public void close() {
    ports.forEach((port, built) -> closePort(port, built)); // what a port owes, written
    try {
      closer.close();
    } catch (Exception e) {
      LOG.warn("closing store: {}", e.toString());
    }
  }
}
