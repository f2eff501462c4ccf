package io.sluice.bootstrap;

import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.estimate.EstimatorSettings;
import io.sluice.core.estimate.TokenEstimator;
import io.sluice.core.time.Ticker;
import io.sluice.extproc.AdmissionRuntime;
import io.sluice.extproc.ExtProcService;
import io.sluice.extproc.InitialMetadata;
import io.sluice.extproc.QueueTimer;
import io.sluice.observability.AdmissionMetrics;
import io.sluice.observability.DecisionLog;
import io.sluice.routing.RequestResolver;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wires one Sluice process: gRPC (ext_proc, health, reflection) on Netty with the direct executor,
 * the admin HTTP port, metrics, and graceful shutdown. The only class that knows every module.
 */
public final class SluiceServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SluiceServer.class);

  /** gRPC health service name Envoy and Kubernetes probe (besides the server-wide ""). */
  public static final String HEALTH_SERVICE = "sluice";

  private final SluiceConfig config;
  private final Server grpc;
  private final AdminHttpServer admin;
  private final HealthStatusManager health = new HealthStatusManager();
  private final PrometheusMeterRegistry registry;
  private final AtomicReference<AdmissionRuntime> runtime = new AtomicReference<>();
  private final AtomicBoolean draining = new AtomicBoolean();
  private final ExtProcService extProc;
  private final QueueTimer timer = new QueueTimer();
  private final Ticker ticker;

  private SluiceServer(SluiceConfig config, Ticker ticker, Clock clock) throws IOException {
    this.config = config;
    this.ticker = ticker;
    this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    new io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics().bindTo(registry);
    new io.micrometer.core.instrument.binder.jvm.JvmGcMetrics().bindTo(registry);
    new io.micrometer.core.instrument.binder.system.ProcessorMetrics().bindTo(registry);
    AdmissionMetrics metrics = new AdmissionMetrics(registry, ticker::nanos);
    AdmissionController controller =
        new AdmissionController(
            config.pools().values(),
            config.classes().values(),
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE);
    metrics.bindPools(controller);
    runtime.set(
        new AdmissionRuntime(
            config,
            new RequestResolver(config),
            controller,
            new TokenEstimator(estimatorSettings(config)),
            metrics,
            new DecisionLog(config.decisionLog()),
            ticker,
            clock,
            timer));
    this.extProc = new ExtProcService(runtime::get, draining::get);

    SluiceConfig.Server s = config.server();
    this.grpc =
        NettyServerBuilder.forAddress(new InetSocketAddress(s.grpcHost(), s.grpcPort()))
            .directExecutor()
            .maxInboundMessageSize((int) Math.min(Integer.MAX_VALUE, s.maxInboundMessageBytes()))
            // Envoy's HTTP/2 keepalive pings must not earn a GOAWAY too_many_pings.
            .permitKeepAliveTime(10, TimeUnit.SECONDS)
            .permitKeepAliveWithoutCalls(true)
            .addService(ServerInterceptors.intercept(extProc, new InitialMetadata()))
            .addService(health.getHealthService())
            .addService(ProtoReflectionServiceV1.newInstance())
            .build();
    this.admin = new AdminHttpServer(s.adminHost(), s.adminPort());
    admin
        .route(
            "/metrics",
            () ->
                new AdminHttpServer.Reply(
                    200, "text/plain; version=0.0.4; charset=utf-8", registry.scrape()))
        .route("/healthz", () -> AdminHttpServer.Reply.text(200, "ok\n"))
        .route(
            "/readyz",
            () ->
                draining.get()
                    ? AdminHttpServer.Reply.text(503, "draining\n")
                    : AdminHttpServer.Reply.text(200, "ready\n"))
        .route("/config", () -> AdminHttpServer.Reply.json(200, ConfigJson.render(config)))
        .route(
            "/debug/queues",
            () ->
                AdminHttpServer.Reply.json(
                    200, DebugQueues.render(runtime.get().controller(), ticker.nanos())));
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

  /** Builds and starts a server; ports 0 pick free ports (tests). */
  public static SluiceServer start(SluiceConfig config) throws IOException {
    return start(config, Ticker.system(), Clock.systemUTC());
  }

  public static SluiceServer start(SluiceConfig config, Ticker ticker, Clock clock)
      throws IOException {
    SluiceServer server = new SluiceServer(config, ticker, clock);
    server.grpc.start();
    server.admin.start();
    server.health.setStatus("", ServingStatus.SERVING);
    server.health.setStatus(HEALTH_SERVICE, ServingStatus.SERVING);
    LOG.info(
        "sluice serving gRPC on {}:{} and admin HTTP on {}:{}",
        config.server().grpcHost(),
        server.grpcPort(),
        config.server().adminHost(),
        server.adminPort());
    return server;
  }

  public int grpcPort() {
    return grpc.getPort();
  }

  public int adminPort() {
    return admin.port();
  }

  public PrometheusMeterRegistry registry() {
    return registry;
  }

  public AdmissionRuntime runtime() {
    return runtime.get();
  }

  public SluiceConfig config() {
    return config;
  }

  /**
   * Graceful shutdown: health NOT_SERVING first (Envoy and Kubernetes stop sending), new streams
   * refused with UNAVAILABLE, in-flight streams finish within {@code grace}, then whatever remains
   * is released (outcome shutdown) and ended non-OK.
   */
  public void shutdown(Duration grace) {
    if (!draining.compareAndSet(false, true)) {
      return;
    }
    health.enterTerminalState();
    int refused = runtime.get().controller().refuseAllQueued(ticker.nanos());
    if (refused > 0) {
      LOG.info("shutdown: answered {} queued requests with 503 shutting_down", refused);
    }
    long deadline = System.nanoTime() + grace.toNanos();
    while (extProc.liveStreams() > 0 && System.nanoTime() - deadline < 0) {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    extProc.shutdownStreams();
    grpc.shutdown();
    try {
      grpc.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    grpc.shutdownNow();
    timer.close();
    admin.close();
    registry.close();
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
