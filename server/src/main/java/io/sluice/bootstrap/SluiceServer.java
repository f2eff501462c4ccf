package io.sluice.bootstrap;

import io.grpc.Server;
import io.grpc.ServerCredentials;
import io.grpc.TlsServerCredentials;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.grpc.util.AdvancedTlsX509KeyManager;
import io.grpc.util.AdvancedTlsX509TrustManager;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import io.sluice.config.Secrets;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.estimate.EstimatorSettings;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.TokenCountCache;
import io.sluice.core.estimate.TokenEstimator;
import io.sluice.core.time.Ticker;
import io.sluice.extproc.AdmissionRuntime;
import io.sluice.extproc.ExtProcService;
import io.sluice.extproc.QueueTimer;
import io.sluice.observability.AdmissionMetrics;
import io.sluice.observability.DecisionLog;
import io.sluice.observability.MetricNames;
import io.sluice.rls.HttpReply;
import io.sluice.rls.RlsModule;
import io.sluice.rls.config.RlsSettings;
import io.sluice.routing.RequestResolver;
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wires one Sluice process: gRPC (ext_proc, rate limit service, health, reflection) on Netty with
 * the direct executor, optional TLS/mTLS, the admin HTTP port, metrics, config hot reload and
 * graceful shutdown. The only class that knows every module.
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
  public record Options(Path configFile, Map<String, String> env, Ticker ticker, Clock clock) {
    public static Options defaults() {
      return new Options(null, Map.of(), Ticker.system(), Clock.systemUTC());
    }
  }

  private final Options options;
  private final Server grpc;
  private final AdminHttpServer admin;
  private final HealthStatusManager health = new HealthStatusManager();
  private final PrometheusMeterRegistry registry;
  private final AtomicReference<AdmissionRuntime> runtime = new AtomicReference<>();
  private final AtomicBoolean draining = new AtomicBoolean();
  private final ExtProcService extProc;
  private final QueueTimer timer = new QueueTimer();
  // permits held for a predicted tail (response end not seen), across reloads; released at shutdown
  private final io.sluice.core.session.TailHolds tails = new io.sluice.core.session.TailHolds();
  private final Ticker ticker;
  private final AdmissionController controller;
  private final io.sluice.core.admission.AdaptiveCoordinator adaptive;
  private final AdmissionMetrics metrics;
  private final TokenCountCache tokenCounts;
  // the learned output reserve: one per process, so a reload keeps what it learned
  private final OutputReserves reserves;
  private final @org.jspecify.annotations.Nullable ReserveSharing
      reserveSharing; // learned reserves across replicas
  // the workflows' places in their pools' budgets: one per process, it outlives reloads
  private final io.sluice.core.quota.WorkflowBudget workflows =
      new io.sluice.core.quota.WorkflowBudget(
          io.sluice.core.quota.WorkflowBudget.DEFAULT_MAX_WORKFLOWS);
  private final RlsModule rls;
  private final Stores stores;
  private final ReplicaShares shares; // null: the store is in this process (one replica)
  private final java.util.concurrent.CompletionStage<Void> storeWarm;
  private final ScheduledExecutorService housekeeping;
  private final PolicyFile policyFile;

  private final io.sluice.core.store.TokenBucketStore quotaStore;

  /** Scrubs credentials (policy rateLimit.env and process env) from everything shown or logged. */
  private final Secrets.Redactor redactor;

  private final Map<String, String> rlsEnv;
  private final HeapGuard heap;
  private final AutoCloseable jvmMetrics;
  private final io.sluice.observability.DecisionLogBudget decisionBudget;
  // Readiness: SERVING only once warm, the rate limit store ready (or given up on), the heap not
  // exhausted and not draining.
  private volatile boolean warm;
  private volatile String warmupSummary = "not run";
  private volatile boolean storeReady;
  // the start-up reads of the shared store are done (limit, reserves, first share grant)
  private volatile boolean learnedStateRead;
  private volatile boolean storeGaveUp;
  private volatile long storeWaitStartNanos;

  private SluiceServer(
      SluiceConfig config, Options options, java.util.function.DoubleSupplier heapSampler)
      throws IOException {
    this.options = options;
    this.ticker = options.ticker();
    this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    // process-wide bindings, let go of on every close path: JVM meters, grpc's abuse log lines
    AutoCloseable jvm = JvmProcessMetrics.bindTo(registry);
    GrpcTransportLog transportLog = GrpcTransportLog.register(registry);
    this.jvmMetrics =
        () -> {
          transportLog.close();
          jvm.close();
        };
    this.decisionBudget = new io.sluice.observability.DecisionLogBudget(ticker::nanos);
    for (boolean refused : new boolean[] {false, true}) {
      io.micrometer.core.instrument.FunctionCounter.builder(
              MetricNames.DECISION_LOG_DROPPED, decisionBudget, b -> b.dropped(refused))
          .tag("kind", refused ? "refused" : "admitted")
          .description(
              "decision records not written: over decisionLog.maxAdmittedPerSecond or"
                  + " maxRefusedPerSecond")
          .register(registry);
    }
    this.metrics = new AdmissionMetrics(registry, ticker::nanos);
    this.controller =
        new AdmissionController(
            config.pools().values(),
            config.classes().values(),
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE);
    metrics.bindWorkflows(workflows);
    metrics.bindPools(controller);
    Map<String, String> rlsEnv = new HashMap<>(config.rateLimit().env());
    rlsEnv.putAll(options.env());
    this.redactor = Secrets.redactor(rlsEnv);
    this.rlsEnv = Map.copyOf(rlsEnv);
    try {
      // One store for the process (memory or Redis, from BACKEND_TYPE): the rate limit service and
      // the tenant quotas count in it, so tenant budgets are shared across replicas exactly when
      // the
      // store is.
      RlsSettings rlsSettings = config.rateLimit().enabled() ? settings(rlsEnv) : null;
      this.stores = stores(rlsEnv);
      this.rls =
          rlsSettings == null
              ? null
              : RlsModule.create(
                  rlsSettings, stores.shared(), stores.local(), registry, options.clock(), ticker);
      this.quotaStore = stores.shared();
      this.shares =
          ReplicaShares.create(
              stores.shares(),
              stores.tenantSlots(),
              config.quotas().keyPrefix(),
              config.replicas(),
              controller,
              ticker,
              registry,
              this.rlsEnv);
      this.storeWarm =
          rls != null
              ? rls.ready() // its warm-up covers the store
              : stores.warmUp(
                  config.quotas().keyPrefix(),
                  20, // as the rate limit service's warm-up
                  config.server().warmup().storeTimeout().toNanos(),
                  ticker);
    } catch (RuntimeException e) {
      timer.close();
      closeQuietly(jvmMetrics);
      throw e;
    }
    SluiceConfig.Estimation est = config.estimation();
    this.tokenCounts = new TokenCountCache(est.tokenCacheChars(), est.tokenCacheMinChars());
    metrics.bindTokenCache(tokenCounts);
    this.reserves = new OutputReserves(est.learnedReserve());
    metrics.bindReserves(reserves);
    this.reserveSharing =
        ReserveSharing.create(
            reserves,
            stores.reserves(),
            config.quotas().keyPrefix(),
            () -> config().pools().keySet());
    runtime.set(runtimeFor(config));
    this.policyFile =
        new PolicyFile(
            options.configFile(),
            config.yaml(),
            yaml -> Main.withEnv(ConfigLoader.parse(yaml), options.env()),
            this::apply,
            () -> config().server().reloadInterval(),
            redactor,
            registry);
    this.extProc = new ExtProcService(runtime::get, draining::get);
    metrics.bindStreams(extProc.tally());
    SluiceConfig.Health hc = config.server().health();
    this.heap =
        heapSampler == null
            ? HeapGuard.forThisJvm(hc.maxHeapAfterGc(), hc.heapAfterGcFor(), Ticker.system())
            : new HeapGuard(hc.maxHeapAfterGc(), hc.heapAfterGcFor(), ticker, heapSampler);
    Gauge.builder(MetricNames.HEAP_AFTER_GC_RATIO, heap, HeapGuard::lastRatio)
        .description("largest fraction of a heap pool still used after its last collection")
        .register(registry);
    Gauge.builder(MetricNames.HEAP_EXHAUSTED, heap, h -> h.exhausted() ? 1 : 0)
        .description(
            "1 while heap used after GC stays above server.health.maxHeapAfterGc: health fails")
        .register(registry);
    Gauge.builder(MetricNames.READY, this, srv -> srv.serving() ? 1 : 0)
        .description("1 while gRPC health and /readyz report SERVING")
        .register(registry);
    // Not serving until start() has warmed the request path (HealthStatusManager starts "" as
    // SERVING).
    health.setStatus("", ServingStatus.NOT_SERVING);
    health.setStatus(HEALTH_SERVICE, ServingStatus.NOT_SERVING);

    SluiceConfig.Server s = config.server();
    InetSocketAddress bind = new InetSocketAddress(s.grpcHost(), s.grpcPort());
    NettyServerBuilder b =
        s.tls() == null
            ? NettyServerBuilder.forAddress(bind)
            : NettyServerBuilder.forAddress(bind, tlsCredentials(s.tls()));
    SluiceConfig.Http2 h2 = s.http2();
    if (h2.maxResetsPerWindow() > 0) {
      // rapid reset: past the limit the connection gets GOAWAY ENHANCE_YOUR_CALM and is closed
      b.maxRstFramesPerWindow(h2.maxResetsPerWindow(), (int) h2.resetWindow().toSeconds());
    }
    if (!h2.maxConnectionIdle().isZero()) {
      b.maxConnectionIdle(h2.maxConnectionIdle().toNanos(), TimeUnit.NANOSECONDS);
    }
    b.directExecutor()
        .maxInboundMessageSize((int) Math.min(Integer.MAX_VALUE, s.maxInboundMessageBytes()))
        // HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: Envoy opens another connection beyond it; the
        // total (server.grpc.maxStreams) and the silence bounds are enforced by ExtProcService.
        .maxConcurrentCallsPerConnection(s.streams().maxStreamsPerConnection())
        // Envoy's HTTP/2 keepalive pings must not earn a GOAWAY too_many_pings.
        .permitKeepAliveTime(h2.permitKeepAliveTime().toNanos(), TimeUnit.NANOSECONDS)
        .permitKeepAliveWithoutCalls(true)
        // a larger header list is refused with HTTP 431 on that stream (counted, one log line:
        // GrpcTransportLog), never passed to a call
        .maxInboundMetadataSize(h2.maxHeaderListBytes())
        .addService(extProc.definition())
        .addService(health.getHealthService())
        .addService(ProtoReflectionServiceV1.newInstance());
    if (rls != null) {
      b.addService(rls.service());
    }
    this.grpc = b.build();
    AdminHttpServer adminServer;
    try {
      adminServer = new AdminHttpServer(s.adminHost(), s.adminPort());
    } catch (IOException e) {
      timer.close();
      closeQuietly(jvmMetrics);
      if (rls != null) {
        rls.close();
      }
      stores.close();
      throw PortBindException.of(
          "admin HTTP",
          s.adminHost(),
          s.adminPort(),
          "HOST / PORT",
          "server.admin.host / .port",
          e);
    }
    this.admin = adminServer;
    admin
        .route(
            "/metrics",
            "Prometheus metrics (docs/metrics.md)",
            () ->
                new AdminHttpServer.Reply(
                    200, "text/plain; version=0.0.4; charset=utf-8", registry.scrape()))
        .probe(
            "/healthz",
            "liveness: 200 while the process answers and the heap is fine",
            this::liveness)
        .probe(
            "/readyz",
            "readiness: 200 while serving, with details; 503 and why otherwise",
            this::readiness)
        .routeWithQuery(
            "/config",
            "the effective config, redacted: JSON, or YAML with ?format=yaml; either validates as"
                + " a policy file",
            this::configReply)
        .routeWithQuery(
            "/debug/estimates",
            "the learned output reserve per key, most used first (JSON; ?limit=, default 100)",
            query -> DebugEstimates.reply(reserves, query))
        .route(
            "/debug/queues",
            "per pool and class: in flight, queued, oldest wait (JSON)",
            () ->
                AdminHttpServer.Reply.json(
                    200,
                    DebugQueues.render(
                        controller,
                        ticker.nanos(),
                        (pool, node) -> {
                          if (shares != null) {
                            shares.describe(pool, node);
                          }
                        })));
    if (rls != null) {
      admin
          .route(
              "/healthcheck",
              "rate limit service health (as envoyproxy/ratelimit)",
              () -> reply(rls.healthcheck()))
          .route("/rlconfig", "the loaded rate limit descriptors", () -> reply(rls.rlconfig()))
          .describe(
              "/json",
              "POST a RateLimitRequest in JSON, get the decision (as envoyproxy/ratelimit)")
          .routeWithBody("/json", body -> rls.json(body).thenApply(this::reply));
    }
    // adaptive pools share one learned limit through the store the replicas share (Redis)
    this.adaptive =
        new io.sluice.core.admission.AdaptiveCoordinator(
            controller,
            stores.shares() instanceof io.sluice.core.adapt.LimitStore ls ? ls : null,
            config.quotas().keyPrefix(),
            ticker);
    this.housekeeping =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "sluice-housekeeping");
              t.setDaemon(true);
              return t;
            });
  }

  /** How often the adaptive pools' limits are stepped (their rules run once per interval). */
  static final Duration ADAPT_TICK = Duration.ofMillis(100);

  /** One step of the adaptive pools' limits; never throws (a timer task would stop). */
  private void adaptTick() {
    try {
      var unused = adaptive.tick();
    } catch (RuntimeException e) {
      LOG.warn("adaptive limits: {}", e.toString());
    }
  }

  /**
   * The adaptive pools' first step before the start returns: each limit is made (at its {@code
   * start}) and, with a shared store, reads the pool's learned limit, waiting at most {@code
   * timeout} (a replica of a warm Deployment starts from what the pool learned, not its start).
   */
  private void adaptAtStart(Duration timeout) {
    if (!adaptive.any()) {
      return;
    }
    try {
      adaptive.tick().toCompletableFuture().get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      LOG.warn(
          "adaptive limits: the shared limit was not read within {} ({}); starting from"
              + " adaptive.start until the store answers",
          timeout,
          redactor.scrub(String.valueOf(e)));
    }
  }

  /** The adaptive pools' driver (metrics, /debug/queues). */
  io.sluice.core.admission.AdaptiveCoordinator adaptive() {
    return adaptive;
  }

  /** {@code GET /config[?format=json|yaml]}: JSON unless asked for YAML. */
  private AdminHttpServer.Reply configReply(Map<String, String> query) {
    String f = query.getOrDefault("format", "json");
    ConfigView.Format format = ConfigView.Format.parse(f);
    if (format == null) {
      return AdminHttpServer.Reply.text(
          400, "format: " + redactor.scrub(f) + " (expected: json or yaml)\n");
    }
    String body = ConfigView.render(config(), redactor, format);
    return format == ConfigView.Format.YAML
        ? new AdminHttpServer.Reply(200, "application/yaml; charset=utf-8", body)
        : AdminHttpServer.Reply.json(200, body);
  }

  private AdminHttpServer.Reply reply(HttpReply r) {
    return new AdminHttpServer.Reply(r.status(), r.contentType(), redactor.scrub(r.body()));
  }

  /**
   * The rate limit service's settings from the merged environment; a bad setting is a config error
   * naming it, with every credential redacted.
   */
  private RlsSettings settings(Map<String, String> rlsEnv) {
    try {
      return RlsSettings.fromEnv(rlsEnv);
    } catch (IllegalArgumentException e) {
      throw badEnv(e);
    }
  }

  /** The process's stores from the merged environment (a bad setting: a config error, redacted). */
  private Stores stores(Map<String, String> rlsEnv) {
    try {
      return Stores.fromEnv(rlsEnv, options.clock(), ticker, registry);
    } catch (IllegalArgumentException e) {
      // drivers' messages echo their input, e.g. a REDIS_URL
      throw badEnv(e);
    }
  }

  private ConfigException badEnv(IllegalArgumentException e) {
    return new ConfigException(
        java.util.List.of(
            "rateLimit.env or environment variable " + redactor.scrub(e.getMessage())));
  }

  private AdmissionRuntime runtimeFor(SluiceConfig config) {
    return new AdmissionRuntime(
            config,
            new RequestResolver(config),
            controller,
            new TokenEstimator(estimatorSettings(config), tokenCounts),
            metrics,
            new DecisionLog(config.decisionLog(), decisionBudget),
            ticker,
            options.clock(),
            timer,
            new io.sluice.core.quota.TenantQuotas(
                quotaStore,
                config.quotas().keyPrefix(),
                config.quotas().failureMode() == SluiceConfig.Quotas.FailureMode.CLOSED
                    ? io.sluice.core.quota.TenantQuotas.FailureMode.CLOSED
                    : io.sluice.core.quota.TenantQuotas.FailureMode.OPEN),
            shares == null ? io.sluice.core.quota.TenantCaps.none() : shares.caps(),
            reserves,
            workflows,
            tails)
        .withRetries(retries(config));
  }

  /** Retry control of {@code config} on the process's attempts store (issue 19). */
  private io.sluice.core.retry.RetryControl retries(SluiceConfig config) {
    stores.boundAttempts(config.retries().maxEntries());
    return new io.sluice.core.retry.RetryControl(
        config.retries(),
        stores.attempts(),
        config.quotas().keyPrefix(),
        config.quotas().failureMode() != SluiceConfig.Quotas.FailureMode.CLOSED,
        ticker::nanos);
  }

  private static ServerCredentials tlsCredentials(SluiceConfig.Tls tls) throws IOException {
    try {
      AdvancedTlsX509KeyManager km = new AdvancedTlsX509KeyManager();
      ScheduledExecutorService tlsRefresh =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "sluice-tls-refresh");
                t.setDaemon(true);
                return t;
              });
      long every = Math.max(1, tls.refreshInterval().toSeconds());
      km.updateIdentityCredentials(
          new File(tls.certFile()), new File(tls.keyFile()), every, TimeUnit.SECONDS, tlsRefresh);
      TlsServerCredentials.Builder creds = TlsServerCredentials.newBuilder().keyManager(km);
      if (tls.clientCaFile() != null) {
        AdvancedTlsX509TrustManager tm =
            AdvancedTlsX509TrustManager.newBuilder()
                .setVerification(
                    AdvancedTlsX509TrustManager.Verification.CERTIFICATE_ONLY_VERIFICATION)
                .build();
        tm.updateTrustCredentials(
            new File(tls.clientCaFile()), every, TimeUnit.SECONDS, tlsRefresh);
        creds.trustManager(tm).clientAuth(TlsServerCredentials.ClientAuth.REQUIRE);
      }
      return creds.build();
    } catch (GeneralSecurityException e) {
      throw new IOException(
          "server.grpc.tls: cannot load " + tls.certFile() + ": " + e.getMessage(), e);
    }
  }

  static EstimatorSettings estimatorSettings(SluiceConfig config) {
    SluiceConfig.Estimation e = config.estimation();
    return EstimatorSettings.builder()
        .bytesPerToken(e.bytesPerToken())
        .imageTokens(e.imageTokens())
        .attachmentTokens(e.attachmentTokens())
        .toolDefinitionOverheadTokens(e.toolDefinitionOverheadTokens())
        .perMessageOverheadTokens(e.perMessageOverheadTokens())
        .replyPrimingTokens(e.replyPrimingTokens())
        .maxJsonDepth(e.maxJsonDepth())
        .maxTokenizeChars(e.maxTokenizeChars())
        .build();
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
   * @param heapSampler the used-after-GC ratio to read instead of this JVM's (tests), or null
   */
  static SluiceServer start(
      SluiceConfig config, Options options, java.util.function.DoubleSupplier heapSampler)
      throws IOException {
    SluiceServer server = new SluiceServer(config, options, heapSampler);
    try {
      server.grpc.start();
    } catch (IOException e) {
      server.closeAfterFailedStart();
      SluiceConfig.Server s = config.server();
      throw PortBindException.of(
          "gRPC",
          s.grpcHost(),
          s.grpcPort(),
          "GRPC_HOST / GRPC_PORT",
          "server.grpc.host / .port",
          e);
    }
    server.admin.start();
    server.warmUp(config);
    server.awaitStoreAtStart(config);
    server.adaptAtStart(config.server().warmup().storeTimeout());
    if (server.reserveSharing != null) { // a new replica of a warm Deployment does not start cold
      server.reserveSharing.start(server.housekeeping, config.server().warmup().storeTimeout());
    }
    if (server.shares != null) {
      server.shares.start(config.server().warmup().storeTimeout());
    }
    // ready only now: a replacement admits on the pool's learned limit, reserves and its share
    // from its first stream, not on its starting guesses (each read above is bounded)
    server.learnedStateRead = true;
    server.updateHealth();
    long every = Math.max(100, config.server().reloadInterval().toMillis());
    var unused =
        server.housekeeping.scheduleWithFixedDelay(
            server::housekeep, every, every, TimeUnit.MILLISECONDS);
    server.housekeep();
    var unusedAdaptive = // cheap when no pool is adaptive: one check per pool
        server.housekeeping.scheduleWithFixedDelay(
            server::adaptTick, ADAPT_TICK.toMillis(), ADAPT_TICK.toMillis(), TimeUnit.MILLISECONDS);
    warnUntrustedHeaders(config);
    server.warnMissingRlsConfigDirectory();
    LOG.info("{}", server.policySummary());
    LOG.info("{}", RESPONSE_END_ACCOUNTING);
    LOG.info("{}", serviceTimeStartLine(config));
    LOG.info(
        "sluice {} serving gRPC on {}:{}{} and admin HTTP on {}:{}",
        Main.versionLine().substring("sluice ".length()),
        config.server().grpcHost(),
        server.grpcPort(),
        config.server().tls() == null ? "" : " (TLS)",
        config.server().adminHost(),
        server.adminPort());
    return server;
  }

  /** After a failed bind: let go of everything the constructor opened, quietly. */
  private void closeAfterFailedStart() {
    draining.set(true);
    grpc.shutdownNow();
    admin.close();
    housekeeping.shutdownNow();
    timer.close();
    if (rls != null) {
      rls.close();
    }
    if (shares != null) {
      shares.close();
    }
    stores.close();
    closeQuietly(jvmMetrics);
    registry.close();
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception e) {
      LOG.debug("close: {}", e.toString());
    }
  }

  /**
   * One line naming what this process enforces: the policy (file or embedded, with its digest),
   * pools, classes, routes and the rate limit service's config state.
   */
  String policySummary() {
    SluiceConfig c = config();
    StringBuilder pools = new StringBuilder();
    for (var p : c.pools().values()) {
      pools.append(pools.length() == 0 ? "" : ", ").append(p.name()).append(" (");
      pools.append(p.capacityWorkUnits()).append(" work units");
      if (p.maxRequests() > 0) {
        pools.append(", ").append(p.maxRequests()).append(" requests");
      }
      pools.append(')');
    }
    return "policy "
        + (options.configFile() == null ? "embedded default" : options.configFile().toString())
        + " (sha256 "
        + policyFile.appliedDigest().substring(0, 12)
        + "): pools "
        + pools
        + "; classes "
        + String.join(", ", c.classes().keySet())
        + "; "
        + c.routes().size()
        + " routes; "
        + rlsState();
  }

  /** Whether the operator chose where the rate limit config lives (policy env or process env). */
  private boolean rlsConfigDirectoryConfigured() {
    return rlsEnv.containsKey("RUNTIME_ROOT")
        || rlsEnv.containsKey("RUNTIME_SUBDIRECTORY")
        || rlsEnv.containsKey("RUNTIME_APPDIRECTORY");
  }

  private boolean rlsConfigDirectoryMissing() {
    return rls != null && !Files.isDirectory(rls.settings().configDirectory());
  }

  /**
   * The rate limit service's config state: off; on with its store kind and config directory and how
   * many domains are loaded; or a directory that does not exist, configured or not.
   */
  String rlsState() {
    if (rls == null) {
      return "rate limit service off (rateLimit.enabled: false)";
    }
    RlsSettings st = rls.settings();
    String store = "store " + stores.settings().backendType();
    if (rlsConfigDirectoryMissing() && rls.health().domains() == 0) {
      return rlsConfigDirectoryConfigured()
          ? "rate limit service on, "
              + store
              + ", config directory "
              + st.configDirectory()
              + " does not exist (RUNTIME_ROOT, RUNTIME_SUBDIRECTORY, RUNTIME_APPDIRECTORY):"
              + " no limits loaded"
          : "rate limit service on, "
              + store
              + ", no config directory (RUNTIME_ROOT not set; "
              + st.configDirectory()
              + " absent): no limits, every descriptor is answered OK";
    }
    return "rate limit service on, "
        + store
        + ", config directory "
        + st.configDirectory()
        + " ("
        + rls.health().domains()
        + " domains)";
  }

  /** One WARN when the operator pointed the rate limit service at a directory that is not there. */
  private void warnMissingRlsConfigDirectory() {
    if (rlsConfigDirectoryConfigured() && rlsConfigDirectoryMissing()) {
      LOG.warn(
          "rate limit config directory {} does not exist: no rate limits apply until it appears"
              + " (checked every SLUICE_RLS_CONFIG_POLL_INTERVAL); fix RUNTIME_ROOT,"
              + " RUNTIME_SUBDIRECTORY or RUNTIME_APPDIRECTORY",
          redactor.scrub(rls.settings().configDirectory().toString()));
    }
  }

  /** Periodic: heap, rate limit store and service health, config file changes. */
  private void housekeep() {
    try {
      heap.check();
      if (!storeReady && !storeGaveUp && warm) {
        pollStore(config().server().warmup().storeTimeout(), 0);
      }
      updateHealth();
      if (rls != null && !draining.get()) {
        health.setStatus(
            RLS_HEALTH_SERVICE, rls.healthy() ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
      }
      if (options.configFile() != null) {
        reloadIfChanged();
      }
    } catch (RuntimeException e) {
      LOG.warn("housekeeping: {}", redactor.scrub(e.toString()));
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
    SluiceConfig current = config();
    if (!next.server().equals(current.server())) {
      LOG.warn("config reload: server settings changed; they apply at the next restart");
    }
    controller.reconfigure(next.pools().values(), next.classes().values());
    if (shares != null) {
      shares.reconfigure(next.replicas());
    }
    metrics.bindPools(controller);
    tokenCounts.resize(next.estimation().tokenCacheChars(), next.estimation().tokenCacheMinChars());
    reserves.reconfigure(next.estimation().learnedReserve());
    runtime.set(runtimeFor(next));
    warnUntrustedHeaders(next);
    policyFile.applied();
    LOG.info(
        "config reloaded: {} pools, {} classes, {} routes",
        next.pools().size(),
        next.classes().size(),
        next.routes().size());
  }

  private static void warnUntrustedHeaders(SluiceConfig config) {
    for (String w : io.sluice.config.TrustedHeaders.warnings(config)) {
      LOG.warn("config: {}", w);
    }
    for (String w : io.sluice.config.TenantSignals.warnings(config)) {
      LOG.warn("config: {}", w);
    }
  }

  /**
   * Runs the warm-up (unless {@code server.warmup.enabled: false}) on an isolated runtime: see
   * {@link WarmUp}. Never fails the start: a failed synthetic stream is logged and counted.
   */
  private void warmUp(SluiceConfig config) {
    try {
      warmupSummary =
          IsolatedWarmUp.run(
              config,
              options.clock(),
              ticker,
              timer,
              rls == null ? null : rlsEnv,
              registry,
              redactor);
    } finally {
      warm = true;
    }
  }

  /** Waits (bounded) for the rate limit store, so the common case is ready when start returns. */
  private void awaitStoreAtStart(SluiceConfig config) {
    storeWaitStartNanos = System.nanoTime();
    // at once in memory; Redis is usually connected during the warm-up; if not, housekeeping
    // flips readiness later
    pollStore(config.server().warmup().storeTimeout(), 1_000_000_000L);
    updateHealth();
  }

  /** Checks the store, blocking at most {@code maxBlockNanos}; gives up after storeTimeout. */
  private void pollStore(Duration storeTimeout, long maxBlockNanos) {
    long waited = System.nanoTime() - storeWaitStartNanos;
    long left = Math.max(0, Math.min(storeTimeout.toNanos() - waited, maxBlockNanos));
    try {
      storeWarm.toCompletableFuture().get(left, TimeUnit.NANOSECONDS);
      storeReady = true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (java.util.concurrent.ExecutionException e) {
      // the store's own warm-up gave up (SLUICE_RLS_WARMUP_TIMEOUT): it keeps reconnecting in
      // the background and limits follow their failure mode
      storeGaveUp = true;
      LOG.warn(
          "rate limit store not ready: {}; serving anyway, its failure mode applies",
          redactor.scrub(String.valueOf(e.getCause())));
    } catch (Exception e) {
      if (System.nanoTime() - storeWaitStartNanos >= storeTimeout.toNanos()) {
        storeGaveUp = true;
        LOG.warn(
            "rate limit store not ready after {}: serving anyway, its failure mode applies",
            storeTimeout);
      }
    }
  }

  /** Whether health says SERVING: warm, store ready (or given up on), heap fine, not draining. */
  public boolean serving() {
    return !draining.get()
        && warm
        && (storeReady || storeGaveUp)
        && learnedStateRead
        && !heap.exhausted();
  }

  private void updateHealth() {
    if (draining.get()) {
      return; // terminal: enterTerminalState already answered NOT_SERVING
    }
    ServingStatus st = serving() ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
    health.setStatus("", st);
    health.setStatus(HEALTH_SERVICE, st);
  }

  private String heapProblem() {
    return String.format(
        java.util.Locale.ROOT,
        "heap exhausted: %.0f%% of a heap pool still used after GC for %s (server.health"
            + ".maxHeapAfterGc %.2f)\n",
        heap.lastRatio() * 100,
        heap.window(),
        heap.maxRatio());
  }

  private AdminHttpServer.Reply liveness() {
    if (heap.exhausted()) {
      return AdminHttpServer.Reply.text(503, heapProblem());
    }
    return AdminHttpServer.Reply.text(200, "ok\n");
  }

  private AdminHttpServer.Reply readiness() {
    if (draining.get()) {
      return AdminHttpServer.Reply.text(503, "draining\n");
    }
    if (!warm) {
      return AdminHttpServer.Reply.text(503, "warming up\n");
    }
    if (heap.exhausted()) {
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
    if (shares != null) {
      sb.append(shares.readinessLines());
    }
    sb.append(responseEndLine());
    if (rls != null) {
      sb.append("ratelimit: ").append(rls.healthy() ? "ok" : rls.health().toString());
      if (rlsConfigDirectoryMissing() && rls.health().domains() == 0) {
        sb.append(
            rlsConfigDirectoryConfigured()
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
    return AdminHttpServer.Reply.text(200, redactor.scrub(sb.toString()));
  }

  /**
   * The {@code /readyz} detail on response-end accounting: a pool that saw a response whose end
   * Sluice cannot see (response_body_mode NONE) holds permits for a predicted tail; still ready.
   */
  private String responseEndLine() {
    java.util.Set<String> unseen = metrics.responseEndUnseenPools();
    if (unseen.isEmpty()) {
      return "response end: seen\n";
    }
    StringBuilder sb = new StringBuilder("response end: not seen in pool");
    sb.append(unseen.size() == 1 ? " " : "s ");
    sb.append(String.join(", ", new java.util.TreeSet<>(unseen)));
    sb.append(" (response_body_mode NONE; ").append(tails.size());
    sb.append(" permits held for a predicted tail now; STREAMED gives exact accounting)");
    List<String> guessed = new java.util.ArrayList<>();
    for (String name : new java.util.TreeSet<>(unseen)) {
      io.sluice.core.admission.PoolState pool = controller.pool(name);
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

  public int grpcPort() {
    return grpc.getPort();
  }

  public int adminPort() {
    return admin.port();
  }

  /** Where the admin HTTP server is bound (server.admin.host/port, or HOST/PORT). */
  public InetSocketAddress adminAddress() {
    return admin.address();
  }

  public PrometheusMeterRegistry registry() {
    return registry;
  }

  public AdmissionRuntime runtime() {
    return runtime.get();
  }

  public SluiceConfig config() {
    return runtime.get().config();
  }

  /**
   * This replica's share of each pool when the store is shared (by pool name), or an empty map when
   * it lives in this process (each pool's numbers are this replica's own).
   */
  public Map<String, io.sluice.core.share.ShareCoordinator.Status> replicaShares() {
    return shares == null ? Map.of() : shares.coordinator().statuses();
  }

  public RlsModule rateLimitService() {
    return rls;
  }

  /** Waits until the store is connected and warm (at once for memory), up to {@code max}. */
  public boolean awaitRateLimitStore(Duration max) {
    try {
      CompletableFuture<Void> f = storeWarm.toCompletableFuture();
      f.get(max.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (Exception e) {
      return false;
    }
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
   * (streams open, permits in flight; every {@value #DRAIN_LOG_EVERY_SECONDS} s) and its end.
   */
  public void shutdown(Duration grace, String cause) {
    stop(grace, cause, true);
  }

  /**
   * Stops at once as a crash would ({@code kill -9}), for benchmarks and tests of the lease path:
   * no drain (every open stream, queued or in flight, is cut), and the replica shares are not given
   * up: the store counts them until {@code replicas.leaseTtl} has passed, then the other replicas
   * take them.
   */
  public void halt() {
    stop(Duration.ZERO, "halt", false);
  }

  private void stop(Duration grace, String cause, boolean graceful) {
    if (!draining.compareAndSet(false, true)) {
      return;
    }
    long started = System.nanoTime();
    if (!graceful && shares != null) {
      shares.abandon(); // no more renewals, leases left to expire
    }
    health.enterTerminalState();
    int refused = graceful ? controller.refuseAllQueued(ticker.nanos()) : 0;
    int streamsAtStart = extProc.liveStreams();
    shutdownLog(
        String.format(
            java.util.Locale.ROOT,
            "shutdown (%s): health NOT_SERVING, new streams refused; draining for up to %s:"
                + " %d ext_proc streams open, %d permits in flight, %d queued requests answered"
                + " 503 shutting_down",
            cause,
            io.sluice.config.ConfigWriter.duration(grace),
            streamsAtStart,
            permitsInFlight(),
            refused));
    long deadline = started + grace.toNanos();
    long nextLog = started + TimeUnit.SECONDS.toNanos(DRAIN_LOG_EVERY_SECONDS);
    while (extProc.liveStreams() > 0 && System.nanoTime() - deadline < 0) {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      if (System.nanoTime() - nextLog >= 0) {
        nextLog += TimeUnit.SECONDS.toNanos(DRAIN_LOG_EVERY_SECONDS);
        shutdownLog(
            String.format(
                java.util.Locale.ROOT,
                "shutdown: draining, %d s of %s: %d ext_proc streams open, %d permits in flight",
                TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started),
                io.sluice.config.ConfigWriter.duration(grace),
                extProc.liveStreams(),
                permitsInFlight()));
      }
    }
    int cut = extProc.liveStreams();
    int permitsCut = permitsInFlight();
    extProc.shutdownStreams();
    int tailsReleased = tails.releaseAll(); // their answers run on: outcome completed
    grpc.shutdown();
    try {
      grpc.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    grpc.shutdownNow();
    housekeeping.shutdownNow();
    timer.close();
    if (rls != null) {
      rls.close();
    }
    if (shares != null && graceful) {
      shares.close(); // after the drain: this replica's leases go back to the others at once
    }
    if (reserveSharing != null) {
      reserveSharing.close(); // what it learned since the last exchange, for the next start
    }
    stores.close();
    admin.close();
    closeQuietly(jvmMetrics);
    registry.close();
    shutdownLog(
        String.format(
            java.util.Locale.ROOT,
            "shutdown complete in %d ms: %d of %d streams finished within the grace, %d cut"
                + " (%d permits released at the cut, %d of them held for a predicted tail)",
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
            Math.max(0, streamsAtStart - cut),
            streamsAtStart,
            cut,
            permitsCut,
            tailsReleased));
  }

  static final int DRAIN_LOG_EVERY_SECONDS = 5;

  /** The start-up line on how a permit's end is accounted (docs/envoy.md). */
  static final String RESPONSE_END_ACCOUNTING =
      "response end accounting: a permit is released at the response's end as the ext_proc stream"
          + " shows it (last body chunk, trailers, end of stream, the stream's close); exact with"
          + " the ext_proc filter's processing_mode.response_body_mode STREAMED (or BUFFERED) and"
          + " response_header_mode SEND, as the shipped Envoy configs set. With response_body_mode"
          + " NONE the end is not seen (Envoy 1.37+ closes the stream at the response headers):"
          + " the permit is then held for the pool's predicted service time (the median of the"
          + " ends seen, else the headers time plus the reserved output at the time per output"
          + " token learned on the pool's routes that stream, else defaultServiceTime: a guess),"
          + " see sluice_response_end_unseen_total and sluice_pool_service_time_source";

  /**
   * The start-up line on service times: every pool starts on a guess, its {@code
   * defaultServiceTime}, until it sees a response end.
   */
  static String serviceTimeStartLine(SluiceConfig config) {
    StringBuilder sb = new StringBuilder();
    for (var p : config.pools().values()) {
      sb.append(sb.length() == 0 ? "" : ", ")
          .append(p.name())
          .append(' ')
          .append(p.defaultServiceTime().toMillis())
          .append(" ms");
    }
    return "service times: every pool starts on a guess, its defaultServiceTime ("
        + sb
        + "), until it sees a response end; meanwhile deadline checks refuse nothing on it, and a"
        + " response whose end is not seen (response_body_mode NONE) is held for it. A pool"
        + " whose routes all have response_body_mode NONE never learns more than its response"
        + " headers: it stays on the guess (sluice_pool_service_time_source, /readyz)";
  }

  private final List<String> shutdownLines = new java.util.concurrent.CopyOnWriteArrayList<>();

  private void shutdownLog(String line) {
    shutdownLines.add(line);
    LOG.info("{}", line);
  }

  /** What shutdown logged, in order (tests). */
  List<String> shutdownLines() {
    return List.copyOf(shutdownLines);
  }

  private int permitsInFlight() {
    int n = 0;
    for (PoolState p : controller.pools()) {
      n += p.snapshot(ticker.nanos()).requestsInFlight();
    }
    return n;
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
