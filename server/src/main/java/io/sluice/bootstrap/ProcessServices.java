package io.sluice.bootstrap;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.sluice.config.ConfigException;
import io.sluice.config.Secrets;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdaptiveCoordinator;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.TokenCountCache;
import io.sluice.core.quota.SharedWorkflowBudget;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.WorkflowBudget;
import io.sluice.core.session.TailHolds;
import io.sluice.core.time.Ticker;
import io.sluice.extproc.QueueTimer;
import io.sluice.feature.intake.Dispatcher;
import io.sluice.feature.intake.IntakeFeature;
import io.sluice.observability.AdmissionMetrics;
import io.sluice.observability.DecisionLog;
import io.sluice.observability.DecisionLogBudget;
import io.sluice.observability.IntakeMetrics;
import io.sluice.observability.MetricNames;
import io.sluice.observability.TelemetryExport;
import io.sluice.rls.RlsModule;
import io.sluice.rls.config.RlsSettings;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What lives as long as the process, whatever the config snapshot: the meter registry, the pools'
 * controller, the stores, the rate limit service, the replica shares, the learned reserve, the
 * workflows' places, the held tails, the heap guard, the adaptive pools' driver and the
 * housekeeping thread. A reload reconfigures these; it never rebuilds them. The per-snapshot part
 * is built from them by {@link #runtimes()}.
 */
final class ProcessServices {
  private static final Logger LOG = LoggerFactory.getLogger(SluiceServer.class);

  /** How often the adaptive pools' limits are stepped (their rules run once per interval). */
  static final Duration ADAPT_TICK = Duration.ofMillis(100);

  final SluiceServer.Options options;
  // the process's ticker, whose reads also keep the registry's coarse wall clock fresh
  final Ticker ticker;
  final PrometheusMeterRegistry registry;
  // process-wide bindings, let go of on every close path: JVM meters, grpc's abuse log lines
  final AutoCloseable jvmMetrics;
  final AdmissionMetrics metrics;
  final AdmissionController controller;
  final QueueTimer timer = new QueueTimer();
  // permits held for a predicted tail (response end not seen), across reloads; released at shutdown
  final TailHolds tails = new TailHolds();
  // the workflows' places in their pools' budgets: one per process, it outlives reloads
  final WorkflowBudget workflows = new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS);

  /** Scrubs credentials (policy rateLimit.env and process env) from everything shown or logged. */
  final Secrets.Redactor redactor;

  final Map<String, String> rlsEnv;
  // the OpenTelemetry SDK (telemetry.enabled): the live one, the features' snapshots open it
  final TelemetryExport telemetry;
  final StoreServices store; // the stores and the services on them
  final TokenCountCache tokenCounts;
  // the learned output reserve: one per process, so a reload keeps what it learned
  final OutputReserves reserves;
  final HeapGuard heap;
  final AdaptiveCoordinator adaptive;
  final ScheduledExecutorService housekeeping;
  // runs accepted background jobs when their pool has idle room (intake.dispatch)
  final Dispatcher dispatcher;
  private final RuntimeFactory runtimes;

  /**
   * @param current the config in force (reserve sharing reads its pools at every exchange)
   * @param heapSampler the used-after-GC ratio to read instead of this JVM's (tests), or null
   */
  ProcessServices(
      SluiceConfig config,
      SluiceServer.Options options,
      Supplier<SluiceConfig> current,
      @Nullable DoubleSupplier heapSampler) {
    this.options = options;
    MeterClock meterClock = MeterClock.system(); // the registry's (AdminRoutes refreshes it)
    this.ticker = meterClock.feeding(options.ticker());
    this.registry =
        new PrometheusMeterRegistry(PrometheusConfig.DEFAULT, new PrometheusRegistry(), meterClock);
    io.sluice.observability.MetricHelp.install(registry); // before any meter is bound
    AutoCloseable jvm = JvmProcessMetrics.bindTo(registry);
    GrpcTransportLog transportLog = GrpcTransportLog.register(registry);
    io.sluice.observability.RotatingFile.Holder decisionFiles =
        new io.sluice.observability.RotatingFile.Holder(ticker::nanos);
    io.sluice.observability.RecordLogs recordLogs =
        new io.sluice.observability.RecordLogs(
            options.env(), io.sluice.observability.RecordLogs.QUEUE);
    recordLogs.bindTo(registry);
    this.jvmMetrics =
        () -> {
          transportLog.close();
          jvm.close();
          decisionFiles.close();
          recordLogs.close();
        };
    FunctionCounter.builder(
            MetricNames.DECISION_LOG_FILE_FAILED,
            decisionFiles,
            io.sluice.observability.RotatingFile.Holder::failed)
        .description("decision records not written to decisionLog.file (the file failed)")
        .register(registry);
    DecisionLogBudget decisionBudget = new DecisionLogBudget(ticker::nanos);
    for (boolean refused : new boolean[] {false, true}) {
      FunctionCounter.builder(
              MetricNames.DECISION_LOG_DROPPED, decisionBudget, b -> b.dropped(refused))
          .tag("kind", refused ? "refused" : "admitted")
          .description(
              "decision records not written: over decisionLog.maxAdmittedPerSecond or"
                  + " maxRefusedPerSecond")
          .register(registry);
    }
    this.metrics = new AdmissionMetrics(registry, ticker::nanos);
    this.controller = Controllers.forPolicy(config, Math::random);
    metrics.bindWorkflows(workflows);
    metrics.bindPools(controller);
    metrics.seedAlertSeries(controller, config.tenants().anonymousTier());
    Map<String, String> env = new HashMap<>(config.rateLimit().env());
    env.putAll(options.env());
    this.redactor = Secrets.redactor(env);
    this.rlsEnv = Map.copyOf(env);
    this.telemetry =
        metrics.part(TelemetryExport.class, (r, t) -> TelemetryExport.live(options.env()));
    Stores stores;
    RlsModule rls;
    ReplicaShares shares;
    CompletionStage<Void> storeWarm;
    try {
      // One store for the process (memory or Redis, from BACKEND_TYPE): the rate limit service and
      // the tenant quotas count in it, so tenant budgets are shared across replicas exactly when
      // the store is.
      RlsSettings rlsSettings = config.rateLimit().enabled() ? rlsSettings(rlsEnv) : null;
      stores = stores(rlsEnv);
      rls =
          rlsSettings == null
              ? null
              : RlsModule.create(
                  rlsSettings, stores.shared(), stores.local(), registry, options.clock(), ticker);
      shares =
          ReplicaShares.create(
              stores.shares(),
              stores.tenantSlots(),
              stores.workflowPlaces(),
              workflows,
              config.quotas().keyPrefix(),
              config.replicas(),
              controller,
              ticker,
              registry,
              this.rlsEnv);
      storeWarm =
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
    List<ReserveSharing> sharing =
        ReserveSharing.all(
            stores,
            reserves,
            config.quotas().keyPrefix(),
            ticker,
            () -> current.get().pools().keySet());
    sharing.forEach(s -> s.bindTo(registry));
    this.store = new StoreServices(stores, rls, shares, sharing, storeWarm);
    this.runtimes =
        new RuntimeFactory(
            controller,
            metrics,
            tokenCounts,
            c ->
                new DecisionLog(c.decisionLog(), null, decisionBudget)
                    .toFile(decisionFiles.file(c.decisionLog().file()))
                    .toOtlp(recordLogs.sink(c)),
            ticker,
            options.clock(),
            timer,
            stores,
            shares == null ? TenantCaps.none() : shares.caps(),
            reserves,
            shares == null ? SharedWorkflowBudget.local(workflows) : shares.workflows(),
            tails,
            rlsEnv);
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
    // adaptive pools share one learned limit through the store the replicas share (Redis)
    this.adaptive =
        new AdaptiveCoordinator(controller, stores.limits(), config.quotas().keyPrefix(), ticker);
    this.housekeeping =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "sluice-housekeeping");
              t.setDaemon(true);
              return t;
            });
    this.dispatcher =
        new Dispatcher(
            stores.port(IntakeFeature.JOBS),
            controller,
            current,
            rlsEnv,
            options.clock(),
            housekeeping,
            metrics.part(IntakeMetrics.class, IntakeMetrics::new),
            consumerName(rlsEnv));
  }

  /** This replica's name among the dispatchers of the store's consumer group. */
  private static String consumerName(Map<String, String> env) {
    String host = env.get("HOSTNAME");
    String id = java.util.UUID.randomUUID().toString().substring(0, 8);
    return host == null || host.isBlank() ? "replica-" + id : host + "-" + id;
  }

  /** Builds the runtime of each config snapshot on these services. */
  RuntimeFactory runtimes() {
    return runtimes;
  }

  /**
   * A reload's part for what lives on: pools and classes matched by name, shares, token cache and
   * learned reserve resized. Permits in flight and queued requests keep counting.
   */
  void reconfigure(SluiceConfig next) {
    controller.reconfigure(next.pools().values(), next.classes().values());
    ReplicaShares shares = store.shares;
    if (shares != null) {
      shares.reconfigure(next.replicas());
    }
    metrics.bindPools(controller);
    metrics.seedAlertSeries(controller, next.tenants().anonymousTier());
    tokenCounts.resize(next.estimation().tokenCacheChars(), next.estimation().tokenCacheMinChars());
    reserves.reconfigure(next.estimation().learnedReserve());
  }

  /**
   * The start's reads of the shared store, each bounded by {@code timeout}: the adaptive pools'
   * learned limits, the learned reserves, this replica's first share grant. Then the adaptive
   * pools' steps run every {@link #ADAPT_TICK}.
   */
  void readLearnedState(Duration timeout) {
    adaptAtStart(timeout);
    for (ReserveSharing learned : store.learnedSharing) { // a new replica does not start cold
      learned.start(housekeeping, timeout);
    }
    ReplicaShares shares = store.shares;
    if (shares != null) {
      shares.start(timeout);
    }
  }

  /** Steps the adaptive pools every {@link #ADAPT_TICK}: cheap when none is adaptive. */
  void scheduleAdaptiveSteps() {
    var unused =
        housekeeping.scheduleWithFixedDelay(
            this::adaptTick, ADAPT_TICK.toMillis(), ADAPT_TICK.toMillis(), TimeUnit.MILLISECONDS);
  }

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

  /** Waits until the store is connected and warm (at once for memory), up to {@code max}. */
  boolean awaitStore(Duration max) {
    try {
      store.warm.toCompletableFuture().get(max.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (Exception e) {
      return false;
    }
  }

  /** Permits held now, over every pool. */
  int permitsInFlight() {
    int n = 0;
    for (PoolState p : controller.pools()) {
      n += p.snapshot(ticker.nanos()).requestsInFlight();
    }
    return n;
  }

  /** After a failed start: let go of everything these services opened, quietly. */
  void closeAfterFailedStart() {
    dispatcher.close();
    housekeeping.shutdownNow();
    timer.close();
    RlsModule rls = store.rls;
    if (rls != null) {
      rls.close();
    }
    ReplicaShares shares = store.shares;
    if (shares != null) {
      shares.close();
    }
    store.stores.close();
    closeQuietly(jvmMetrics);
    registry.close();
  }

  static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception e) {
      LOG.debug("close: {}", e.toString());
    }
  }

  /**
   * The rate limit service's settings from the merged environment; a bad setting is a config error
   * naming it, with every credential redacted.
   */
  private RlsSettings rlsSettings(Map<String, String> env) {
    try {
      return RlsSettings.fromEnv(env);
    } catch (IllegalArgumentException e) {
      throw badEnv(e);
    }
  }

  /** The process's stores from the merged environment (a bad setting: a config error, redacted). */
  private Stores stores(Map<String, String> env) {
    try {
      return Stores.fromEnv(env, options.clock(), ticker, registry);
    } catch (IllegalArgumentException e) {
      // drivers' messages echo their input, e.g. a REDIS_URL
      throw badEnv(e);
    }
  }

  private ConfigException badEnv(IllegalArgumentException e) {
    return new ConfigException(
        List.of("rateLimit.env or environment variable " + redactor.scrubOrNull(e.getMessage())));
  }
}
