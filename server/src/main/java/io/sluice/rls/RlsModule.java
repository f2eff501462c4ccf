package io.sluice.rls;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.grpc.BindableService;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.sluice.core.store.KeyValueStore;
import io.sluice.core.store.StoreHealth;
import io.sluice.core.time.Ticker;
import io.sluice.rls.config.FailureMode;
import io.sluice.rls.config.RateLimitConfig;
import io.sluice.rls.config.RateLimitConfigException;
import io.sluice.rls.config.RateLimitConfigLoader;
import io.sluice.rls.config.RlsSettings;
import java.io.IOException;
import java.nio.file.FileVisitOption;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rate limit service as one unit for the bootstrap: config (loaded from {@link
 * RlsSettings#configDirectory()} and hot-reloaded), evaluator, gRPC service, health and the admin
 * HTTP handlers ({@code /healthcheck}, {@code /json}, {@code /rlconfig}), on the store ports the
 * bootstrap built (the same store the tenant quotas use; the bootstrap owns and closes it).
 *
 * <p>Concurrency: the active config is one {@link AtomicReference} to an immutable snapshot;
 * reloads run on one watcher thread (or the caller of {@link #reload()}) and are serialized by a
 * lock; request threads only read the reference.
 */
public final class RlsModule implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(RlsModule.class);

  private final RlsSettings settings;
  private final RlsMetrics metrics;
  private final KeyValueStore store;
  private final CompletionStage<Void> storeReady;
  private final RateLimitEvaluator evaluator;
  private final RateLimitServiceAdapter adapter;
  private final AtomicReference<RateLimitConfig> config = new AtomicReference<>();
  private final AtomicLong configErrors = new AtomicLong();
  private volatile String lastConfigError = "";
  private final Object reloadLock = new Object();
  private final @Nullable ScheduledExecutorService watcher;
  private volatile String fingerprint = "";

  private RlsModule(
      RlsSettings settings,
      KeyValueStore store,
      KeyValueStore local,
      MeterRegistry registry,
      Clock clock,
      Ticker ticker) {
    this.settings = settings;
    this.metrics = new RlsMetrics(registry);
    this.store = store;
    // an in-process store cannot fail, so failure mode local never applies to it
    this.storeReady =
        store.inProcess()
            ? CompletableFuture.completedFuture(null)
            : warmUp(store, local, settings, clock, ticker);
    this.evaluator =
        new RateLimitEvaluator(
            settings,
            config::get,
            store,
            store,
            local,
            store.commandTimeout(),
            clock,
            ticker,
            metrics);
    this.adapter = new RateLimitServiceAdapter(evaluator);
    Gauge.builder("sluice.rls.store.healthy", this, m -> m.store.health().healthy() ? 1 : 0)
        .description("1 while the store answers, 0 after a failed call until the next success")
        .register(registry);
    Gauge.builder("sluice.rls.config.loaded", this, m -> m.config.get() == null ? 0 : 1)
        .register(registry);
    reload();
    if (settings.files().pollInterval().isZero()) {
      watcher = null;
    } else {
      watcher =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "sluice-rls-config-watcher");
                t.setDaemon(true);
                return t;
              });
      long every = settings.files().pollInterval().toMillis();
      var unused =
          watcher.scheduleWithFixedDelay(this::pollOnce, every, every, TimeUnit.MILLISECONDS);
    }
  }

  /**
   * @param store the process's store (memory or Redis), built once by the bootstrap and shared with
   *     the tenant quotas; this module does not close it
   * @param local the in-process store of failure mode {@code local} (the store itself when it is in
   *     process)
   */
  public static RlsModule create(
      RlsSettings settings,
      KeyValueStore store,
      KeyValueStore local,
      MeterRegistry registry,
      Clock clock,
      Ticker ticker) {
    return new RlsModule(settings, store, local, registry, clock, ticker);
  }

  /** The gRPC service {@code envoy.service.ratelimit.v3.RateLimitService}. */
  public BindableService service() {
    return adapter;
  }

  /**
   * Completes when the store is warm (at once for memory): for Redis, connected, the token-bucket
   * script loaded and {@value #WARMUP_ROUNDS} rounds of increments and bucket takes answered on
   * throwaway keys, then {@value #WARMUP_ROUNDS} synthetic calls decided by a private evaluator on
   * the same store (request reader and answer encoder included), so the first real calls do not
   * overrun {@code REDIS_COMMAND_TIMEOUT} and deny spuriously in {@code closed} mode. A failed
   * attempt is retried every {@code REDIS_RECONNECT_INTERVAL}; after {@code
   * SLUICE_RLS_WARMUP_TIMEOUT} without success the stage fails (the store keeps reconnecting in the
   * background and limits follow their failure mode). Counted in {@code
   * sluice.rls.store.warmup{result}}. The bootstrap waits on it before reporting ready, as the
   * reference waits for Redis at start-up.
   */
  public CompletionStage<Void> ready() {
    return storeReady;
  }

  static final int WARMUP_ROUNDS = 20;

  private CompletionStage<Void> warmUp(
      KeyValueStore store, KeyValueStore local, RlsSettings settings, Clock clock, Ticker ticker) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    long deadline = ticker.nanos() + settings.warmupTimeout().toNanos();
    long started = ticker.nanos();
    Runnable[] attempt = new Runnable[1];
    attempt[0] =
        () ->
            store
                .warmUp(settings.cacheKeyPrefix(), WARMUP_ROUNDS)
                .thenCompose(v -> warmUpEvaluator(store, local, settings, clock, ticker))
                .whenComplete(
                    (v, e) -> {
                      if (e == null) {
                        metrics
                            .registry()
                            .counter(RlsMetrics.STORE_WARMUP, "result", "success")
                            .increment();
                        log.info(
                            "rate limit store warm ({} ms)",
                            (ticker.nanos() - started) / 1_000_000);
                        done.complete(null);
                      } else if (ticker.nanos() - deadline >= 0) {
                        metrics
                            .registry()
                            .counter(RlsMetrics.STORE_WARMUP, "result", "timeout")
                            .increment();
                        log.warn(
                            "rate limit store not warm after {}: {}; limits follow their failure"
                                + " mode until it answers",
                            settings.warmupTimeout(),
                            String.valueOf(e));
                        done.completeExceptionally(e);
                      } else {
                        metrics
                            .registry()
                            .counter(RlsMetrics.STORE_WARMUP, "result", "retry")
                            .increment();
                        CompletableFuture.delayedExecutor(
                                Math.max(50, store.retryInterval().toMillis()),
                                TimeUnit.MILLISECONDS)
                            .execute(attempt[0]);
                      }
                    });
    attempt[0].run();
    return done;
  }

  /**
   * Synthetic calls through a private evaluator (own config and meter registry, warm-up domain) on
   * the real store: real counters, metrics and limits are untouched.
   */
  private static CompletionStage<Void> warmUpEvaluator(
      KeyValueStore store, KeyValueStore local, RlsSettings settings, Clock clock, Ticker ticker) {
    RateLimitConfig cfg;
    try {
      cfg =
          RateLimitConfigLoader.build(
              java.util.List.of(
                  new RateLimitConfigLoader.ConfigFile(
                      "warmup",
                      "domain: sluice_warmup\n"
                          + "descriptors:\n"
                          + "  - key: w\n"
                          + "    rate_limit: {unit: second, requests_per_unit: 1000000}\n"
                          + "  - key: b\n"
                          + "    rate_limit: {unit: second, requests_per_unit: 1000000,"
                          + " algorithm: token_bucket}\n")),
              false);
    } catch (RateLimitConfigException e) {
      return CompletableFuture.failedFuture(e);
    }
    RlsMetrics throwaway =
        new RlsMetrics(new io.micrometer.core.instrument.simple.SimpleMeterRegistry());
    RateLimitEvaluator ev =
        new RateLimitEvaluator(
            settings,
            () -> cfg,
            store,
            store,
            local,
            store.commandTimeout(),
            clock,
            ticker,
            throwaway);
    String id = Long.toHexString(System.nanoTime());
    CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
    for (int i = 0; i < WARMUP_ROUNDS; i++) {
      RateLimitRequest proto =
          RateLimitRequest.newBuilder()
              .setDomain("sluice_warmup")
              .addDescriptors(
                  io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor
                      .newBuilder()
                      .addEntries(
                          io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor
                              .Entry.newBuilder()
                              .setKey("w")
                              .setValue(id)))
              .addDescriptors(
                  io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor
                      .newBuilder()
                      .addEntries(
                          io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor
                              .Entry.newBuilder()
                              .setKey("b")
                              .setValue(id)))
              .build();
      chain =
          chain.thenCompose(
              v -> {
                RlsRequest request;
                try {
                  request = RlsRequestReader.read(proto.toByteArray());
                } catch (InvalidProtocolBufferException e) {
                  return CompletableFuture.failedFuture(e);
                }
                return ev.evaluate(request)
                    .thenCompose(
                        d -> {
                          if (d instanceof RlsDecision.Decided decided) {
                            RlsAnswer.of(decided);
                            return CompletableFuture.completedFuture((Void) null);
                          }
                          // a store failure is decided by the failure mode: not warm yet
                          return CompletableFuture.<Void>failedFuture(
                              new io.sluice.core.store.StoreException(
                                  "warm-up call not decided: " + d));
                        })
                    .toCompletableFuture();
              });
    }
    return chain.thenCompose(
        v ->
            throwaway.registry().find(RlsMetrics.STORE_ERRORS).counter() != null
                    && throwaway.registry().find(RlsMetrics.STORE_ERRORS).counter().count() > 0
                ? CompletableFuture.failedFuture(
                    new io.sluice.core.store.StoreException("warm-up calls hit store errors"))
                : CompletableFuture.completedFuture(null));
  }

  /** The settings it was created with (config directory, store kind, ...). */
  public RlsSettings settings() {
    return settings;
  }

  public RateLimitEvaluator evaluator() {
    return evaluator;
  }

  /**
   * Re-reads the whole config directory and swaps it in atomically. On error the last good config
   * stays active, the error is counted ({@code sluice.rls.config.reloads{result=failure}}) and
   * shown in {@link #health()}.
   *
   * @return whether the new config is active
   */
  public boolean reload() {
    synchronized (reloadLock) {
      fingerprint = fingerprint();
      try {
        RateLimitConfig next =
            RateLimitConfigLoader.loadDirectory(
                settings.configDirectory(),
                settings.files().ignoreDotFiles(),
                settings.files().mergeDomainConfig());
        config.set(next);
        metrics.configReload("success");
        log.info("loaded rate limit config: domains {}", next.domains());
        return true;
      } catch (RateLimitConfigException e) {
        if (config.get() == null && !Files.isDirectory(settings.configDirectory())) {
          // No directory yet (none mounted, or RUNTIME_ROOT not set): no limits. Health says so;
          // no WARN and no failed reload counted: the bootstrap reports it once (startup line,
          // /readyz) and the watcher loads it when it appears. A directory that disappears after
          // a load is a failed reload (below).
          configErrors.incrementAndGet();
          lastConfigError = e.getMessage();
          log.debug("no rate limit config directory {}", settings.configDirectory());
          return false;
        }
        configErrors.incrementAndGet();
        lastConfigError = e.getMessage();
        metrics.configReload("failure");
        log.warn("Error loading new configuration: {}", e.getMessage());
        return false;
      }
    }
  }

  /** Loads a config given directly (e.g. from Sluice's own config) instead of the directory. */
  public void use(RateLimitConfig next) {
    config.set(next);
    metrics.configReload("success");
  }

  void pollOnce() {
    try {
      if (!fingerprint().equals(fingerprint)) {
        reload();
      }
    } catch (RuntimeException e) {
      log.warn("config watcher: {}", e.toString());
    }
  }

  /**
   * What a change looks like: with {@code RUNTIME_WATCH_ROOT=true} the resolved target of {@code
   * RUNTIME_ROOT} (Lyft's symlink swap), else every file's path, size and mtime in the config dir.
   */
  private String fingerprint() {
    try {
      if (settings.files().watchRoot()) {
        return settings.files().root().toRealPath().toString();
      }
      Path dir = settings.configDirectory();
      if (!Files.isDirectory(dir)) {
        return "";
      }
      StringBuilder sb = new StringBuilder();
      try (Stream<Path> paths = Files.walk(dir, FileVisitOption.FOLLOW_LINKS)) {
        paths
            .sorted()
            .forEach(
                p -> {
                  try {
                    sb.append(p)
                        .append(':')
                        .append(Files.size(p))
                        .append(':')
                        .append(Files.getLastModifiedTime(p).toMillis())
                        .append(':')
                        .append(p.toRealPath())
                        .append('\n');
                  } catch (IOException e) {
                    sb.append(p).append(":gone\n");
                  }
                });
      }
      return sb.toString();
    } catch (IOException | RuntimeException e) {
      return "error:" + e.getMessage();
    }
  }

  public RlsHealth health() {
    RateLimitConfig c = config.get();
    StoreHealth store = this.store.health();
    boolean configOk =
        !settings.healthyWithAtLeastOneConfigLoaded() || (c != null && !c.domains().isEmpty());
    boolean storeOk = store.healthy() || settings.failureMode() != FailureMode.ERROR;
    return new RlsHealth(
        configOk && storeOk,
        c != null,
        c == null ? 0 : c.domains().size(),
        configErrors.get(),
        lastConfigError,
        store);
  }

  public boolean healthy() {
    return health().healthy();
  }

  /** {@code GET /healthcheck}: 200 {@code OK} when healthy, else 500 with the reason. */
  public HttpReply healthcheck() {
    RlsHealth h = health();
    return h.healthy() ? HttpReply.text(200, "OK") : HttpReply.text(500, h.toString());
  }

  /**
   * {@code POST /json}: a RateLimitRequest in proto3 JSON; 200 (OK), 429 (OVER_LIMIT), 500
   * (failure), 400 (bad body); the body is the RateLimitResponse in JSON, or the error text.
   */
  public CompletionStage<HttpReply> json(String body) {
    RateLimitRequest.Builder request = RateLimitRequest.newBuilder();
    try {
      JsonFormat.parser().merge(body, request);
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      return CompletableFuture.completedFuture(
          HttpReply.text(400, "bad request: " + e.getMessage()));
    }
    return evaluator
        .evaluate(RlsProtoMapper.toRequest(request.build()))
        .handle(
            (d, e) -> {
              if (e != null) {
                return HttpReply.text(500, "internal error");
              }
              if (d instanceof RlsDecision.Failed f) {
                return HttpReply.text(500, f.message());
              }
              if (d instanceof RlsDecision.Invalid i) {
                return HttpReply.text(400, i.message());
              }
              RlsDecision.Decided decided = (RlsDecision.Decided) d;
              try {
                String json = JsonFormat.printer().print(RlsProtoMapper.toResponse(decided));
                return HttpReply.json(decided.overall() == RlsDecision.Code.OK ? 200 : 429, json);
              } catch (InvalidProtocolBufferException ex) {
                return HttpReply.text(500, ex.getMessage());
              }
            });
  }

  /** {@code GET /rlconfig}: the loaded limits. */
  public HttpReply rlconfig() {
    RateLimitConfig c = config.get();
    return HttpReply.text(200, c == null ? "" : c.dump());
  }

  @Override
  public void close() {
    if (watcher != null) {
      watcher.shutdownNow();
    }
  }
}
