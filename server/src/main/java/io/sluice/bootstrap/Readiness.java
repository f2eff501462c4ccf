package io.sluice.bootstrap;

import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.protobuf.services.HealthStatusManager;
import io.micrometer.core.instrument.Gauge;
import io.sluice.core.admission.PoolState;
import io.sluice.observability.MetricNames;
import io.sluice.rls.RlsModule;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the process serves, and why not: gRPC health ({@code ""} and {@value
 * SluiceServer#HEALTH_SERVICE}, the rate limit service's {@value SluiceServer#RLS_HEALTH_SERVICE}),
 * {@code /healthz} and {@code /readyz}. SERVING only once warm, the rate limit store ready (or
 * given up on), the start's reads of the shared store done, the heap not exhausted and not
 * draining.
 */
final class Readiness {
  private static final Logger LOG = LoggerFactory.getLogger(SluiceServer.class);

  private final ProcessServices services;
  private final PolicyFile policyFile;
  private final BooleanSupplier draining;
  private final HealthStatusManager health = new HealthStatusManager();
  private volatile boolean warm;
  private volatile String warmupSummary = "not run";
  private volatile boolean storeReady;
  // the start-up reads of the shared store are done (limit, reserves, first share grant)
  private volatile boolean learnedStateRead;
  private volatile boolean storeGaveUp;
  private volatile long storeWaitStartNanos;

  Readiness(ProcessServices services, PolicyFile policyFile, BooleanSupplier draining) {
    this.services = services;
    this.policyFile = policyFile;
    this.draining = draining;
    Gauge.builder(MetricNames.READY, this, r -> r.serving() ? 1 : 0)
        .description("1 while gRPC health and /readyz report SERVING")
        .register(services.registry);
    // Not serving until the start has warmed the request path (HealthStatusManager starts "" as
    // SERVING).
    health.setStatus("", ServingStatus.NOT_SERVING);
    health.setStatus(SluiceServer.HEALTH_SERVICE, ServingStatus.NOT_SERVING);
  }

  HealthStatusManager health() {
    return health;
  }

  /** Runs the warm-up; warm afterwards even if it failed (it never fails the start). */
  void warmUp(Supplier<String> warmUp) {
    try {
      warmupSummary = warmUp.get(); // the line /readyz shows
    } finally {
      warm = true;
    }
  }

  /** The start's reads of the shared store are done: a replacement admits on what was learned. */
  void learnedStateRead() {
    learnedStateRead = true;
    update();
  }

  /** Whether health says SERVING: warm, store ready (or given up on), heap fine, not draining. */
  boolean serving() {
    return !draining.getAsBoolean()
        && warm
        && (storeReady || storeGaveUp)
        && learnedStateRead
        && !services.heap.exhausted();
  }

  /** Health follows {@link #serving()}; terminal once draining. */
  void update() {
    if (draining.getAsBoolean()) {
      return; // terminal: enterTerminalState already answered NOT_SERVING
    }
    ServingStatus st = serving() ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
    health.setStatus("", st);
    health.setStatus(SluiceServer.HEALTH_SERVICE, st);
  }

  /** Periodic: heap, the rate limit store (until ready or given up on) and the service's health. */
  void check(Duration storeTimeout) {
    services.heap.check();
    if (!storeReady && !storeGaveUp && warm) {
      pollStore(storeTimeout, 0);
    }
    update();
    RlsModule rls = services.store.rls;
    if (rls != null && !draining.getAsBoolean()) {
      health.setStatus(
          SluiceServer.RLS_HEALTH_SERVICE,
          rls.healthy() ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
    }
  }

  /** Waits (bounded) for the rate limit store, so the common case is ready when start returns. */
  void awaitStoreAtStart(Duration storeTimeout) {
    storeWaitStartNanos = System.nanoTime();
    // at once in memory; Redis is usually connected during the warm-up; if not, housekeeping
    // flips readiness later
    pollStore(storeTimeout, 1_000_000_000L);
    update();
  }

  /** Checks the store, blocking at most {@code maxBlockNanos}; gives up after storeTimeout. */
  private void pollStore(Duration storeTimeout, long maxBlockNanos) {
    long waited = System.nanoTime() - storeWaitStartNanos;
    long left = Math.max(0, Math.min(storeTimeout.toNanos() - waited, maxBlockNanos));
    try {
      services.store.warm.toCompletableFuture().get(left, TimeUnit.NANOSECONDS);
      storeReady = true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException e) {
      // the store's own warm-up gave up (SLUICE_RLS_WARMUP_TIMEOUT): it keeps reconnecting in
      // the background and limits follow their failure mode
      storeGaveUp = true;
      LOG.warn(
          "rate limit store not ready: {}; serving anyway, its failure mode applies",
          services.redactor.scrub(String.valueOf(e.getCause())));
    } catch (Exception e) {
      if (System.nanoTime() - storeWaitStartNanos >= storeTimeout.toNanos()) {
        storeGaveUp = true;
        LOG.warn(
            "rate limit store not ready after {}: serving anyway, its failure mode applies",
            storeTimeout);
      }
    }
  }

  private String heapProblem() {
    HeapGuard heap = services.heap;
    return String.format(
        Locale.ROOT,
        "heap exhausted: %.0f%% of a heap pool still used after GC for %s (server.health"
            + ".maxHeapAfterGc %.2f)\n",
        heap.lastRatio() * 100,
        heap.window(),
        heap.maxRatio());
  }

  /** {@code /healthz}. */
  AdminHttpServer.Reply liveness() {
    if (services.heap.exhausted()) {
      return AdminHttpServer.Reply.text(503, heapProblem());
    }
    return AdminHttpServer.Reply.text(200, "ok\n");
  }

  /** {@code /readyz}. */
  AdminHttpServer.Reply readiness() {
    if (draining.getAsBoolean()) {
      return AdminHttpServer.Reply.text(503, "draining\n");
    }
    if (!warm) {
      return AdminHttpServer.Reply.text(503, "warming up\n");
    }
    if (services.heap.exhausted()) {
      return AdminHttpServer.Reply.text(503, heapProblem());
    }
    if (!storeReady && !storeGaveUp) {
      return AdminHttpServer.Reply.text(503, "ratelimit store: not ready yet\n");
    }
    if (!learnedStateRead) {
      return AdminHttpServer.Reply.text(
          503, "starting: reading the pools' shared limit, reserves and shares\n");
    }
    StringBuilder sb = new StringBuilder("ready\n");
    sb.append("warm-up: ").append(warmupSummary).append('\n');
    if (storeGaveUp && !storeReady) {
      sb.append(
          "ratelimit store: not ready after server.warmup.storeTimeout; failure mode applies\n");
    }
    sb.append("config: ")
        .append(
            policyFile.lastReloadOk()
                ? "ok"
                : "last reload failed: " + policyFile.lastReloadError());
    sb.append('\n');
    if (services.store.shares != null) {
      sb.append(services.store.shares.readinessLines());
    }
    sb.append(responseEndLine());
    RlsModule rls = services.store.rls;
    if (rls != null) {
      sb.append("ratelimit: ").append(rls.healthy() ? "ok" : rls.health().toString());
      if (StartupLines.rlsConfigDirectoryMissing(rls) && rls.health().domains() == 0) {
        sb.append(
            StartupLines.rlsConfigDirectoryConfigured(services.rlsEnv)
                ? "; config directory "
                    + rls.settings().configDirectory()
                    + " does not exist"
                    + " (RUNTIME_ROOT): no limits loaded"
                : "; no config directory (RUNTIME_ROOT not set): no limits");
      } else {
        sb.append("; ").append(rls.health().domains()).append(" domains");
      }
      sb.append('\n');
    }
    return AdminHttpServer.Reply.text(200, services.redactor.scrub(sb.toString()));
  }

  /**
   * The {@code /readyz} detail on response-end accounting: a pool that saw a response whose end
   * Sluice cannot see (response_body_mode NONE) holds permits for a predicted tail; still ready.
   */
  private String responseEndLine() {
    Set<String> unseen = services.metrics.responseEndUnseenPools();
    if (unseen.isEmpty()) {
      return "response end: seen\n";
    }
    StringBuilder sb = new StringBuilder("response end: not seen in pool");
    sb.append(unseen.size() == 1 ? " " : "s ");
    sb.append(String.join(", ", new TreeSet<>(unseen)));
    sb.append(" (response_body_mode NONE; ").append(services.tails.size());
    sb.append(" permits held for a predicted tail now; STREAMED gives exact accounting)");
    List<String> guessed = new ArrayList<>();
    for (String name : new TreeSet<>(unseen)) {
      PoolState pool = services.controller.pool(name);
      if (pool != null && pool.serviceTimeGuessed()) {
        guessed.add(name + " " + pool.policy().defaultServiceTime().toMillis() + " ms");
      }
    }
    if (!guessed.isEmpty()) {
      // still ready: the hold is a pessimistic guess, not a fault
      sb.append("; held on a guess, defaultServiceTime (no response end seen yet): ");
      sb.append(String.join(", ", guessed));
    }
    return sb.append('\n').toString();
  }
}
