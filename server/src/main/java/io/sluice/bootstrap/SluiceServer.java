package io.sluice.bootstrap;

import io.grpc.Server;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.time.Ticker;
import io.sluice.extproc.AdmissionRuntime;
import io.sluice.extproc.ExtProcService;
import io.sluice.rls.RlsModule;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.DoubleSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Sluice process: the process-lived services ({@link ProcessServices}), the runtime of the
 * config in force ({@link RuntimeFactory}; swapped whole on a reload), the gRPC server ({@link
 * GrpcServers}), the admin port ({@link AdminRoutes}), readiness ({@link Readiness}) and the drain
 * ({@link Drain}). This class sequences the start and holds them together; the parts do the work.
 */
public final class SluiceServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SluiceServer.class);

  /** gRPC health service name Envoy and Kubernetes probe (besides the server-wide ""). */
  public static final String HEALTH_SERVICE = "sluice";

  /** Health service name of the rate limit service (as envoyproxy/ratelimit). */
  public static final String RLS_HEALTH_SERVICE = "ratelimit";

  /**
   * How the process was started.
   *
   * @param configFile the policy file to watch for hot reload, or null (embedded default)
   * @param env process environment (ports, rate limit service settings)
   */
  public record Options(
      @Nullable Path configFile, Map<String, String> env, Ticker ticker, Clock clock) {
    public static Options defaults() {
      return new Options(null, Map.of(), Ticker.system(), Clock.systemUTC());
    }
  }

  private final Options options;
  private final ProcessServices services;
  private final AtomicReference<AdmissionRuntime> runtime = new AtomicReference<>();
  private final AtomicBoolean draining = new AtomicBoolean();
  private final PolicyFile policyFile;
  private final ExtProcService extProc;
  private final Readiness readiness;
  private final Server grpc;
  private final AdminHttpServer admin;
  private final Drain drain;
  // the permit API for stages Envoy does not front (permits.enabled at start)
  private final PermitApi permits;

  private SluiceServer(SluiceConfig config, Options options, @Nullable DoubleSupplier heapSampler)
      throws IOException {
    this.options = options;
    this.services = new ProcessServices(config, options, this::config, heapSampler);
    ProcessServices s = services;
    runtime.set(s.runtimes().build(config));
    this.policyFile =
        new PolicyFile(
            options.configFile(),
            config.yaml(),
            yaml -> Main.withEnv(ConfigLoader.parse(yaml), options.env()),
            this::apply,
            () -> config().server().reloadInterval(),
            s.redactor,
            s.registry);
    this.extProc = ExtProcService.create(runtime::get, draining::get);
    s.metrics.bindStreams(extProc.tally());
    this.readiness = new Readiness(s, policyFile, draining::get);
    this.permits = PermitApi.of(config, this::config, s, () -> runtime().sessions().checks());
    SluiceConfig.Server srv = config.server();
    Server g;
    AdminHttpServer a;
    try {
      g =
          GrpcServers.build(
              srv,
              extProc,
              readiness.health(),
              s.store.rls,
              permits.services(),
              s.registry.config().clock()::wallTime);
      a = AdminRoutes.bind(srv);
    } catch (IOException | RuntimeException e) {
      s.closeAfterFailedStart();
      throw e;
    }
    this.grpc = g;
    this.admin = a;
    AdminRoutes.mount(admin, s, readiness, this::config);
    this.drain = new Drain(draining, s, readiness.health(), extProc, grpc, admin, permits);
  }

  /** Builds and starts a server with the embedded environment (tests: ports 0). */
  public static SluiceServer start(SluiceConfig config) throws IOException {
    return start(config, Options.defaults());
  }

  public static SluiceServer start(SluiceConfig config, Ticker ticker, Clock clock)
      throws IOException {
    return start(config, new Options(null, Map.of(), ticker, clock));
  }

  public static SluiceServer start(SluiceConfig config, Options options) throws IOException {
    return start(config, options, null);
  }

  /**
   * Binds, warms up, reads the learned state, then reports SERVING.
   *
   * @param heapSampler the used-after-GC ratio to read instead of this JVM's (tests), or null
   */
  static SluiceServer start(
      SluiceConfig config, Options options, @Nullable DoubleSupplier heapSampler)
      throws IOException {
    SluiceServer server = new SluiceServer(config, options, heapSampler);
    ProcessServices s = server.services;
    try {
      GrpcServers.start(server.grpc, config.server());
    } catch (IOException e) {
      server.draining.set(true);
      server.grpc.shutdownNow();
      server.admin.close();
      s.closeAfterFailedStart();
      throw e;
    }
    server.admin.start();
    // the warm-up (unless server.warmup.enabled: false) runs on an isolated runtime: see WarmUp;
    // a failed synthetic stream is logged and counted, it never fails the start
    server.readiness.warmUp(() -> IsolatedWarmUp.run(config, s));
    Duration storeTimeout = config.server().warmup().storeTimeout();
    server.readiness.awaitStoreAtStart(storeTimeout);
    s.readLearnedState(storeTimeout);
    // ready only now: a replacement admits on the pool's learned limit, reserves and its share
    // from its first stream, not on its starting guesses (each read above is bounded)
    server.readiness.learnedStateRead();
    long every = Math.max(100, config.server().reloadInterval().toMillis());
    var unused =
        s.housekeeping.scheduleWithFixedDelay(
            server::housekeep, every, every, TimeUnit.MILLISECONDS);
    server.housekeep();
    s.scheduleAdaptiveSteps();
    s.dispatcher.start(); // accepted background jobs run when their pool has idle room
    StartupLines.warnUntrustedHeaders(config);
    StartupLines.warnMissingRlsConfigDirectory(s);
    StartupLines.logStarted(config, server.policySummary(), server.grpcPort(), server.adminPort());
    InetSocketAddress control = server.adminControlAddress();
    if (control != null) {
      LOG.info("state-changing admin routes (POST /json) on their own listener {}", control);
    }
    return server;
  }

  /** Periodic: heap, rate limit store and service health, config file changes. */
  private void housekeep() {
    try {
      readiness.check(config().server().warmup().storeTimeout());
      if (options.configFile() != null) {
        reloadIfChanged();
      }
    } catch (RuntimeException e) {
      LOG.warn("housekeeping: {}", services.redactor.scrub(e.toString()));
    }
  }

  /**
   * Re-reads the config file (following symlinks, so a Kubernetes ConfigMap's {@code ..data} swap
   * is seen) and applies it if its content changed. Returns true if a new config is active.
   */
  public boolean reloadIfChanged() {
    return policyFile.reloadIfChanged();
  }

  /**
   * Swaps in a new policy atomically: new streams see it; permits in flight and queued requests
   * keep counting (pools and classes are matched by name; a shrunk pool admits nothing new until
   * its in-flight work drains below the new capacity). Process settings (ports, TLS) are not
   * changed by a reload.
   */
  public void apply(SluiceConfig next) {
    if (!next.server().equals(config().server())) {
      LOG.warn("config reload: server settings changed; they apply at the next restart");
    }
    services.reconfigure(next);
    runtime.set(services.runtimes().build(next));
    StartupLines.warnUntrustedHeaders(next);
    policyFile.applied();
    LOG.info(
        "config reloaded: {} pools, {} classes, {} routes",
        next.pools().size(),
        next.classes().size(),
        next.routes().size());
  }

  /** One line naming what this process enforces (policy, pools, classes, routes, rate limits). */
  String policySummary() {
    return StartupLines.policySummary(
        config(), options.configFile(), policyFile.appliedDigest(), rlsState());
  }

  /** The rate limit service's config state (off, on with its store and config directory). */
  String rlsState() {
    return StartupLines.rlsState(services);
  }

  /** Whether health says SERVING: warm, store ready (or given up on), heap fine, not draining. */
  public boolean serving() {
    return readiness.serving();
  }

  /** Permits of the permit API held now (0 when {@code permits} is off). */
  int permitLeases() {
    return permits.leases();
  }

  public int grpcPort() {
    return grpc.getPort();
  }

  public int adminPort() {
    return admin.port();
  }

  /**
   * Where the state-changing admin routes listen when they have a port of their own
   * (server.admin.control.host/port), else null.
   */
  public @Nullable InetSocketAddress adminControlAddress() {
    AdminHttpServer c = admin.control();
    return c == null ? null : c.address();
  }

  /** The admin HTTP server (tests of its routes in this package). */
  AdminHttpServer admin() {
    return admin;
  }

  /** Where the admin HTTP server is bound (server.admin.host/port, or HOST/PORT). */
  public InetSocketAddress adminAddress() {
    return admin.address();
  }

  public PrometheusMeterRegistry registry() {
    return services.registry;
  }

  public AdmissionRuntime runtime() {
    return java.util.Objects.requireNonNull(runtime.get()); // set by the constructor
  }

  public SluiceConfig config() {
    return runtime().config();
  }

  /**
   * This replica's share of each pool when the store is shared (by pool name), or an empty map when
   * it lives in this process (each pool's numbers are this replica's own).
   */
  public Map<String, io.sluice.core.share.ShareCoordinator.Status> replicaShares() {
    return services.store.shares == null
        ? Map.of()
        : services.store.shares.coordinator().statuses();
  }

  public @Nullable RlsModule rateLimitService() {
    return services.store.rls;
  }

  /** Waits until the store is connected and warm (at once for memory), up to {@code max}. */
  public boolean awaitRateLimitStore(Duration max) {
    return services.awaitStore(max);
  }

  /**
   * Graceful shutdown: health NOT_SERVING first (Envoy and Kubernetes stop sending), new streams
   * refused with UNAVAILABLE, queued requests answered 503 {@code shutting_down} with Retry-After,
   * in-flight streams finish within {@code grace}, then whatever remains is released (outcome
   * shutdown) and ended non-OK.
   */
  public void shutdown(Duration grace) {
    shutdown(grace, "requested");
  }

  /**
   * {@link #shutdown(Duration)}, logging why ({@code cause}, e.g. the signal), the drain's progress
   * (streams open, permits in flight; every {@value Drain#DRAIN_LOG_EVERY_SECONDS} s) and its end.
   */
  public void shutdown(Duration grace, String cause) {
    drain.stop(grace, cause, true);
  }

  /**
   * Stops at once as a crash would ({@code kill -9}), for benchmarks and tests of the lease path:
   * no drain (every open stream, queued or in flight, is cut), and the replica shares are not given
   * up: the store counts them until {@code replicas.leaseTtl} has passed, then the other replicas
   * take them.
   */
  public void halt() {
    drain.stop(Duration.ZERO, "halt", false);
  }

  /** What shutdown logged, in order (tests). */
  List<String> shutdownLines() {
    return drain.lines();
  }

  public boolean draining() {
    return draining.get();
  }

  @Override
  public void close() {
    shutdown(Duration.ZERO);
  }

  public void awaitTermination() throws InterruptedException {
    grpc.awaitTermination();
  }
}
