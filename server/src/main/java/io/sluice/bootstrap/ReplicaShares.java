package io.sluice.bootstrap;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.quota.SharedWorkflowBudget;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.TenantSlots;
import io.sluice.core.quota.WorkflowBudget;
import io.sluice.core.quota.WorkflowPlaces;
import io.sluice.core.share.ReplicaPolicy;
import io.sluice.core.share.ShareCoordinator;
import io.sluice.core.share.ShareStore;
import io.sluice.core.time.Ticker;
import io.sluice.observability.MetricNames;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The replica shares of a server whose store is shared (Redis): one {@link ShareCoordinator}
 * renewed on its own timer thread every {@code replicas.renewInterval}, its metrics, its lines in
 * {@code /readyz} and {@code /debug/queues}, and the leases given up at shutdown. A server whose
 * store is in the process has none: each pool's numbers are then the replica's own.
 *
 * <p>It also holds the process's {@link TenantCaps} (a tier's {@code maxInFlight} across replicas,
 * under the same replica id), whose contributions each round renews beside the shares.
 */
final class ReplicaShares implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ReplicaShares.class);

  private final ShareCoordinator coordinator;
  private final TenantCaps caps;
  private final SharedWorkflowBudget workflows;
  private final AdmissionController controller;
  private final MeterRegistry registry;
  private final ScheduledExecutorService timer;
  private final Map<String, List<Meter>> meters = new HashMap<>();
  private volatile boolean closed;

  private ReplicaShares(
      ShareCoordinator coordinator,
      TenantCaps caps,
      SharedWorkflowBudget workflows,
      AdmissionController controller,
      MeterRegistry registry) {
    this.coordinator = coordinator;
    this.caps = caps;
    this.workflows = workflows;
    this.controller = controller;
    this.registry = registry;
    this.timer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "sluice-replica-shares");
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * The shares leased by {@code store}, or null when there is none (the store is in this process).
   */
  static @Nullable ReplicaShares create(
      @Nullable ShareStore store,
      @Nullable TenantSlots slots,
      @Nullable WorkflowPlaces places,
      WorkflowBudget workflows,
      String namespace,
      ReplicaPolicy policy,
      AdmissionController controller,
      Ticker ticker,
      MeterRegistry registry,
      Map<String, String> env) {
    if (store == null) {
      return null;
    }
    Identity who = identity(env);
    String id = who.id();
    LOG.info(
        "pools are shared with the other replicas on the store as replica {} (leases {}, renewed"
            + " every {}){}",
        id,
        io.sluice.config.ConfigWriter.duration(policy.leaseTtl()),
        io.sluice.config.ConfigWriter.duration(policy.renewInterval()),
        who.supersedes().isEmpty()
            ? ""
            : "; leases of earlier incarnations (" + who.supersedes() + "*) are dropped at start");
    // every pool admits on a share of nothing until its first grant, never on the whole pool
    // (the gRPC port is open before the first exchange; a reload may add a pool between rounds)
    controller.holdForShares(ticker.nanos());
    ShareCoordinator coordinator =
        new ShareCoordinator(id, who.supersedes(), namespace, policy, store, ticker);
    TenantCaps caps =
        slots == null
            ? TenantCaps.none()
            : new TenantCaps(
                slots, namespace, id, () -> coordinator.policy().leaseTtl().toMillis());
    SharedWorkflowBudget shared =
        places == null
            ? SharedWorkflowBudget.local(workflows)
            : new SharedWorkflowBudget(
                workflows, places, namespace, id, () -> coordinator.policy().leaseTtl().toMillis());
    return new ReplicaShares(coordinator, caps, shared, controller, registry);
  }

  /**
   * A replica's lease id, and the id prefix of its earlier incarnations whose leases it drops at
   * start (empty: none).
   */
  record Identity(String id, String supersedes) {}

  /** Separates a pod's name from the incarnation suffix in a lease id. */
  static final String INCARNATION = "#";

  /**
   * {@code SLUICE_REPLICA_ID} as it is (a restart reuses the lease: its first exchange rewrites
   * it); else {@code POD_NAME} (the downward API; Kubernetes keeps it across a container restart
   * and gives no two live pods the same) with {@code #} and a random suffix, dropping the leases of
   * {@code POD_NAME#*} at start: an earlier incarnation is dead, its streams reset with it; else
   * {@code HOSTNAME} with {@code -} and a random suffix, dropping nothing (two processes on one
   * host share a host name).
   */
  static Identity identity(Map<String, String> env) {
    String id = env.get("SLUICE_REPLICA_ID");
    if (id != null && !id.isBlank()) {
      return new Identity(id.trim(), "");
    }
    String suffix = Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
    String pod = env.get("POD_NAME");
    if (pod != null && !pod.isBlank()) {
      String name = pod.trim();
      return new Identity(name + INCARNATION + suffix, name + INCARNATION);
    }
    return new Identity(env.getOrDefault("HOSTNAME", "sluice") + "-" + suffix, "");
  }

  /** {@link #identity}'s lease id. */
  static String replicaId(Map<String, String> env) {
    return identity(env).id();
  }

  ShareCoordinator coordinator() {
    return coordinator;
  }

  /** The tenants' {@code maxInFlight} across replicas (renewed by this object's rounds). */
  TenantCaps caps() {
    return caps;
  }

  /** The workflows' places across replicas (renewed by this object's rounds). */
  SharedWorkflowBudget workflows() {
    return workflows;
  }

  /**
   * Runs the first round and waits for it, at most {@code max} (the server reports ready after it:
   * a pool holds nothing before its first grant), then renews every {@code renewInterval}.
   */
  void start(Duration max) {
    try {
      coordinator
          .tick(controller.pools())
          .toCompletableFuture()
          .get(max.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      LOG.warn("replica shares: no first grant within {}: {}", max, e.toString());
    }
    long dropped = coordinator.superseded();
    if (dropped > 0) {
      LOG.info(
          "replica shares: dropped {} lease(s) of earlier incarnations of this replica (their"
              + " shares go back to the pool now, not at their expiry)",
          dropped);
    }
    FunctionCounter.builder(MetricNames.SHARE_SUPERSEDED, coordinator, ShareCoordinator::superseded)
        .description(
            "leases of this replica's earlier incarnations (same POD_NAME) dropped at start")
        .register(registry);
    Gauge.builder(MetricNames.TENANT_SLOTS_HELD, caps, TenantCaps::held)
        .description("slots of capped tenants (tiers' maxInFlight) this replica holds in the store")
        .register(registry);
    Gauge.builder(MetricNames.WORKFLOW_PLACES_HELD, workflows, SharedWorkflowBudget::held)
        .description("workflows' places (pools' workflow budgets) this replica holds in the store")
        .register(registry);
    FunctionCounter.builder(
            MetricNames.WORKFLOW_PLACES_STORE_FAILED,
            workflows,
            SharedWorkflowBudget::storeFailures)
        .description("workflow places the store did not answer for (quotas.failureMode decided)")
        .register(registry);
    bindMeters();
    schedule();
  }

  private void schedule() {
    if (closed) {
      return;
    }
    long every = Math.max(10, coordinator.policy().renewInterval().toMillis());
    var unused = timer.schedule(this::round, every, TimeUnit.MILLISECONDS);
  }

  private void round() {
    try {
      var unused = coordinator.tick(controller.pools());
      var unusedRenewal = caps.renew(); // the tenant slots this replica holds: fresh expiries
      var unusedPlaces = workflows.renew(); // and the workflows' places
      bindMeters();
    } catch (RuntimeException e) {
      LOG.warn("replica shares: round failed: {}", e.toString());
    } finally {
      schedule();
    }
  }

  void reconfigure(ReplicaPolicy next) {
    coordinator.reconfigure(next);
  }

  /** Per pool: mode, share, demand and peers (for {@code /readyz}). */
  String readinessLines() {
    StringBuilder sb = new StringBuilder();
    coordinator
        .statuses()
        .forEach(
            (pool, s) -> {
              sb.append("replica share ").append(pool).append(": ").append(s.mode().label());
              sb.append(", ").append(s.grantedWork()).append(" work units");
              if (s.grantedRequests() > 0 || s.mode() != ShareCoordinator.Mode.WAITING) {
                sb.append(", ").append(s.grantedRequests()).append(" requests");
              }
              sb.append(", ").append(s.peers()).append(" peers");
              if (s.nanosSinceGrant() >= 0) {
                sb.append(", granted ").append(s.nanosSinceGrant() / 1_000_000L).append(" ms ago");
              }
              if (s.mode() != ShareCoordinator.Mode.LEASED && !s.lastError().isEmpty()) {
                sb.append(", store: ").append(s.lastError());
              }
              sb.append('\n');
            });
    return sb.toString();
  }

  /** Adds this replica's share of {@code pool} to its {@code /debug/queues} entry. */
  void describe(String pool, ObjectNode p) {
    ShareCoordinator.Status s = coordinator.statuses().get(pool);
    if (s == null) {
      return;
    }
    ObjectNode n = p.putObject("replicaShare");
    n.put("replica", coordinator.replica());
    n.put("mode", s.mode().label());
    n.put("workUnits", s.grantedWork());
    n.put("requests", s.grantedRequests());
    n.put("demandWorkUnits", s.demandWork());
    n.put("demandRequests", s.demandRequests());
    n.put("peers", s.peers());
    n.put("msSinceGrant", s.nanosSinceGrant() < 0 ? -1 : s.nanosSinceGrant() / 1_000_000L);
    n.put("renewals", s.renewals());
    n.put("failures", s.failures());
    n.put("rebalances", s.rebalances());
    n.put("targetWorkUnits", s.targetWork());
    n.put("targetRequests", s.targetRequests());
    n.put("remaindersReceived", s.received());
    n.put("remaindersGiven", s.gave());
    ObjectNode classes = n.putObject("classes");
    s.classes()
        .forEach(
            (name, c) -> {
              ObjectNode cn = classes.putObject(name);
              cn.put("peersInFlightWorkUnits", c.peersWork());
              cn.put("peersInFlightRequests", c.peersRequests());
              cn.put("idleWorkUnits", c.idleWork());
              cn.put("idleRequests", c.idleRequests());
            });
  }

  /** Registers the gauges of pools seen for the first time, removes those of pools gone. */
  private synchronized void bindMeters() {
    Map<String, ShareCoordinator.Status> now = coordinator.statuses();
    for (String pool : now.keySet()) {
      if (!meters.containsKey(pool)) {
        meters.put(pool, register(pool));
      }
    }
    for (String pool : List.copyOf(meters.keySet())) {
      if (!now.containsKey(pool)) {
        java.util.Objects.requireNonNull(meters.remove(pool)).forEach(registry::remove); // a key
      }
    }
  }

  private List<Meter> register(String pool) {
    List<Meter> out = new ArrayList<>();
    out.add(
        gauge(
            MetricNames.SHARE_WORK,
            pool,
            s -> s.grantedWork(),
            "work units this replica may hold"));
    out.add(
        gauge(
            MetricNames.SHARE_REQUESTS,
            pool,
            s -> s.grantedRequests(),
            "request slots this replica may hold (0 when the pool caps none)"));
    out.add(
        gauge(
            MetricNames.SHARE_DEMAND_WORK,
            pool,
            s -> s.demandWork(),
            "work units this replica wants: in flight, waiting and refused for want of capacity"));
    out.add(
        gauge(
            MetricNames.SHARE_DEMAND_REQUESTS,
            pool,
            s -> s.demandRequests(),
            "requests this replica wants: in flight, waiting and refused for want of capacity"));
    out.add(
        gauge(
            MetricNames.SHARE_AGE,
            pool,
            s -> s.nanosSinceGrant() < 0 ? -1 : s.nanosSinceGrant() / 1e9,
            "seconds since the store last granted this replica's share (-1: never)"));
    out.add(
        gauge(MetricNames.SHARE_PEERS, pool, s -> s.peers(), "other live replicas on the pool"));
    for (ShareCoordinator.Mode m : ShareCoordinator.Mode.values()) {
      out.add(
          Gauge.builder(MetricNames.SHARE_MODE, coordinator, c -> modeIs(c, pool, m))
              .tag("pool", pool)
              .tag("mode", m.label())
              .description(
                  "1 for the mode the pool's share is in: waiting, leased, kept, fallback, refusing")
              .register(registry));
    }
    for (boolean ok : new boolean[] {true, false}) {
      out.add(
          FunctionCounter.builder(
                  MetricNames.SHARE_RENEWALS,
                  coordinator,
                  c -> read(c, pool, s -> ok ? s.renewals() : s.failures()))
              .tag("pool", pool)
              .tag("result", ok ? "ok" : "failed")
              .description("share exchanges with the store")
              .register(registry));
    }
    for (boolean in : new boolean[] {true, false}) {
      out.add(
          FunctionCounter.builder(
                  MetricNames.SHARE_GATHERED,
                  coordinator,
                  c -> read(c, pool, s -> in ? s.received() : s.gave()))
              .tag("pool", pool)
              .tag("role", in ? "received" : "gave")
              .description(
                  "renewals in which this replica's target took (received) or gave the remainders"
                      + " that replicas blocked on their queue head could not use")
              .register(registry));
    }
    out.add(
        gauge(
            MetricNames.SHARE_IDLE_WORK,
            pool,
            s ->
                s.classes().values().stream().mapToLong(ShareCoordinator.ClassView::idleWork).sum(),
            "work units of class guarantees placed on this replica that nothing here wanted at the"
                + " last renewal (kept for their classes)"));
    out.add(
        FunctionCounter.builder(
                MetricNames.SHARE_REBALANCES, coordinator, c -> read(c, pool, s -> s.rebalances()))
            .tag("pool", pool)
            .description("grants that changed this replica's share")
            .register(registry));
    return out;
  }

  private Gauge gauge(
      String name,
      String pool,
      java.util.function.ToDoubleFunction<ShareCoordinator.Status> f,
      String description) {
    return Gauge.builder(name, coordinator, c -> read(c, pool, f))
        .tag("pool", pool)
        .description(description)
        .register(registry);
  }

  private static double read(
      ShareCoordinator c,
      String pool,
      java.util.function.ToDoubleFunction<ShareCoordinator.Status> f) {
    ShareCoordinator.Status s = c.statuses().get(pool);
    return s == null ? 0 : f.applyAsDouble(s);
  }

  private static double modeIs(ShareCoordinator c, String pool, ShareCoordinator.Mode m) {
    ShareCoordinator.Status s = c.statuses().get(pool);
    return s != null && s.mode() == m ? 1 : 0;
  }

  /** Stops renewing and keeps every lease: they expire on the store (a crash, {@code halt}). */
  void abandon() {
    closed = true;
    timer.shutdownNow();
  }

  /** Stops renewing and gives up every lease (waits at most a second). */
  @Override
  public void close() {
    closed = true;
    timer.shutdownNow();
    try {
      coordinator.leaveAll().toCompletableFuture().get(1, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      LOG.debug("replica shares: leaving: {}", e.toString());
    }
  }
}
