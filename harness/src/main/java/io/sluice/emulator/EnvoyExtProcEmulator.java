package io.sluice.emulator;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sluice.upstream.Upstream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Plays Envoy's HTTP ext_proc filter ({@code envoy.filters.http.ext_proc}) as a gRPC client of
 * {@code envoy.service.ext_proc.v3.ExternalProcessor/Process}, in front of in-process {@link
 * Upstream}s chosen by a {@link RouteTable} (route cache, {@code clear_route_cache}, router
 * timeouts). One gRPC stream per HTTP request, opened lazily and ended by a reset (the server sees
 * CANCELLED). Per-message timers, {@code override_message_timeout}, {@code mutation_rules}, failure
 * handling and counters follow Envoy 1.35–1.36 (see docs/emulator.md).
 *
 * <p>Non-blocking inside: every request is a small state machine driven by gRPC callbacks, timers
 * on one scheduler thread and upstream callbacks; {@link #sendAsync} never blocks, so thousands of
 * requests may be in flight. {@link #send} is the blocking convenience for tests.
 */
public final class EnvoyExtProcEmulator implements AutoCloseable {
  private final Channel channel;
  private final @Nullable ManagedChannel ownedChannel;
  private final FilterConfig config;
  private final RouteTable routes;
  private final Stats stats = new Stats();
  private final ScheduledExecutorService scheduler;
  private final boolean ownsScheduler;
  private final LongSupplier nanoTime;

  private EnvoyExtProcEmulator(
      Channel channel,
      @Nullable ManagedChannel ownedChannel,
      FilterConfig config,
      RouteTable routes,
      @Nullable ScheduledExecutorService timers,
      @Nullable LongSupplier nanoTime) {
    this.channel = channel;
    this.ownedChannel = ownedChannel;
    this.config = config;
    this.routes = routes;
    this.ownsScheduler = timers == null;
    this.scheduler = timers != null ? timers : defaultScheduler();
    this.nanoTime = nanoTime != null ? nanoTime : System::nanoTime;
  }

  private static ScheduledExecutorService defaultScheduler() {
    ScheduledThreadPoolExecutor s =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "envoy-emulator-timers");
              t.setDaemon(true);
              return t;
            });
    s.setRemoveOnCancelPolicy(true);
    return s;
  }

  /**
   * Connects to an ext_proc server at {@code target} (e.g. {@code localhost:50051}) over plaintext
   * HTTP/2 with a channel of its own, closed by {@link #close()}. Every request goes to {@code
   * upstream} ({@link RouteTable#single}: one catch-all route, no route timeout).
   */
  public static EnvoyExtProcEmulator connect(
      String target, FilterConfig config, Upstream upstream) {
    return connect(target, config, RouteTable.single(upstream), null, null);
  }

  /** As {@link #connect(String, FilterConfig, Upstream)}, routing by {@code routes}. */
  public static EnvoyExtProcEmulator connect(
      String target, FilterConfig config, RouteTable routes) {
    return connect(target, config, routes, null, null);
  }

  /**
   * As {@link #connect(String, FilterConfig, Upstream)}, with the per-message timers (and the
   * client's cancel timer) run by {@code timers} and the result durations read from {@code
   * nanoTime}: tests pass a virtual-time scheduler and its clock, so timer behaviour is checked on
   * a fake clock. Null for either keeps the default (a timer thread of its own, {@link
   * System#nanoTime}); a scheduler passed in is not shut down by {@link #close()}.
   */
  public static EnvoyExtProcEmulator connect(
      String target,
      FilterConfig config,
      Upstream upstream,
      @Nullable ScheduledExecutorService timers,
      @Nullable LongSupplier nanoTime) {
    return connect(target, config, RouteTable.single(upstream), timers, nanoTime);
  }

  /**
   * As {@link #connect(String, FilterConfig, Upstream, ScheduledExecutorService, LongSupplier)},
   * routing by {@code routes}; the router's timeouts also run on {@code timers}.
   */
  public static EnvoyExtProcEmulator connect(
      String target,
      FilterConfig config,
      RouteTable routes,
      @Nullable ScheduledExecutorService timers,
      @Nullable LongSupplier nanoTime) {
    ManagedChannel channel =
        NettyChannelBuilder.forTarget(target)
            .usePlaintext()
            .overrideAuthority(config.grpcAuthority())
            .directExecutor()
            .flowControlWindow(1 << 20)
            .build();
    return new EnvoyExtProcEmulator(channel, channel, config, routes, timers, nanoTime);
  }

  /** Uses a channel owned by the caller; {@code :authority} is set per call. */
  public static EnvoyExtProcEmulator using(
      Channel channel, FilterConfig config, Upstream upstream) {
    return using(channel, config, RouteTable.single(upstream));
  }

  /** As {@link #using(Channel, FilterConfig, Upstream)}, routing by {@code routes}. */
  public static EnvoyExtProcEmulator using(
      Channel channel, FilterConfig config, RouteTable routes) {
    return new EnvoyExtProcEmulator(channel, null, config, routes, null, null);
  }

  /** Runs one HTTP request through the filter; the future never completes exceptionally. */
  public CompletableFuture<HttpResult> sendAsync(HttpRequest request) {
    return new Exchange(this, request).start();
  }

  /** Blocking helper for tests (at most 60 s). */
  public HttpResult send(HttpRequest request) {
    try {
      return sendAsync(request).get(60, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (ExecutionException e) {
      throw new CompletionException(e.getCause());
    } catch (TimeoutException e) {
      throw new IllegalStateException("request did not finish within 60 s: " + request, e);
    }
  }

  public Stats stats() {
    return stats;
  }

  public FilterConfig config() {
    return config;
  }

  /** The route table and router options requests are forwarded by. */
  public RouteTable routes() {
    return routes;
  }

  ScheduledExecutorService scheduler() {
    return scheduler;
  }

  long nanoTime() {
    return nanoTime.getAsLong();
  }

  ClientCall<ProcessingRequest, ProcessingResponse> newCall() {
    CallOptions options = CallOptions.DEFAULT;
    if (ownedChannel == null) {
      options = options.withAuthority(config.grpcAuthority());
    }
    return channel.newCall(ExternalProcessorGrpc.getProcessMethod(), options);
  }

  @Override
  public void close() {
    if (ownsScheduler) {
      scheduler.shutdownNow();
    }
    if (ownedChannel != null) {
      ownedChannel.shutdownNow();
      try {
        ownedChannel.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
