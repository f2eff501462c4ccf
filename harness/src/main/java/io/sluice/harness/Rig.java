package io.sluice.harness;

import io.sluice.emulator.EnvoyExtProcEmulator;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.upstream.ResponseBody;
import io.sluice.upstream.SimulatedLlmUpstream;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * One system under test: an emulated Envoy in front of a fresh {@link SimulatedLlmUpstream}, with
 * ext_proc pointing at an admission server, or with ext_proc disabled on the route (no admission).
 * Every request that reaches the upstream is reported to the load generator through a tap (by its
 * {@code x-request-id}), which is how "admitted" and "queued" are counted client-side.
 */
public final class Rig implements AutoCloseable {
  private final String name;
  private final boolean admission;
  private final SimulatedLlmUpstream upstream;
  private final List<EnvoyExtProcEmulator> envoys;
  private final LeastRequestBalancer balancer;
  private final Map<String, String> routeMetadata;
  private final SimulatedLlmUpstream.Settings settings;
  private volatile Listener listener = Listener.NONE;

  /** What the load generator learns from the upstream side, by {@code x-request-id}. */
  interface Listener {
    Listener NONE =
        new Listener() {
          @Override
          public void admitted(String requestId) {}

          @Override
          public void tokens(String requestId, long tokens) {}
        };

    /** The request reached the upstream (it was admitted). */
    void admitted(String requestId);

    /** The upstream spent tokens on it: its prompt at the start, then one per streamed chunk. */
    void tokens(String requestId, long tokens);
  }

  private Rig(
      String name,
      boolean admission,
      List<String> targets,
      FilterConfig config,
      SimulatedLlmUpstream.Settings settings,
      Map<String, String> routeMetadata) {
    this.name = name;
    this.admission = admission;
    this.upstream = SimulatedLlmUpstream.create(settings);
    this.routeMetadata = Map.copyOf(new LinkedHashMap<>(routeMetadata));
    this.settings = settings;
    Upstream tap =
        new Upstream() {
          @Override
          public CompletableFuture<UpstreamResponse> send(UpstreamRequest request) {
            String id = request.headers().first("x-request-id").orElse(null);
            if (id == null) {
              return upstream.send(request);
            }
            listener.admitted(id);
            int prompt = SimulatedLlmUpstream.promptTokens(request.body().length, settings);
            return upstream.send(request).thenApply(r -> counted(id, prompt, r));
          }
        };
    List<EnvoyExtProcEmulator> emulators = new ArrayList<>();
    for (String target : targets) {
      emulators.add(EnvoyExtProcEmulator.connect(target, config, tap));
    }
    this.envoys = List.copyOf(emulators);
    this.balancer =
        new LeastRequestBalancer(
            envoys.stream()
                .<Function<HttpRequest, CompletableFuture<HttpResult>>>map(e -> e::sendAsync)
                .toList(),
            2);
  }

  /**
   * Envoy with ext_proc to {@code target} ({@code host:port}); {@code routeMetadata} is added to
   * every request's per-route gRPC initial metadata (e.g. {@code x-sluice-max-message-timeout-ms}).
   */
  public static Rig extProc(
      String name,
      String target,
      FilterConfig config,
      SimulatedLlmUpstream.Settings settings,
      Map<String, String> routeMetadata) {
    return new Rig(name, true, List.of(target), config, settings, routeMetadata);
  }

  /**
   * Envoy with ext_proc to a cluster of several admission servers ({@code host:port} each, one
   * emulated Envoy per replica, all in front of the one upstream): each request opens its ext_proc
   * stream on the replica that Envoy's {@code LEAST_REQUEST} picks ({@link #balancer()}: two
   * choices, fewest open requests).
   */
  public static Rig extProcReplicas(
      String name,
      List<String> targets,
      FilterConfig config,
      SimulatedLlmUpstream.Settings settings,
      Map<String, String> routeMetadata) {
    if (targets.isEmpty()) {
      throw new IllegalArgumentException("targets: empty (expected: at least one replica)");
    }
    return new Rig(name, true, targets, config, settings, routeMetadata);
  }

  /** Envoy with ext_proc disabled on the route: every request goes straight to the upstream. */
  public static Rig noAdmission(String name, SimulatedLlmUpstream.Settings settings) {
    // The channel is never used (no stream is opened for a disabled route); grpc connects lazily.
    return new Rig(name, false, List.of("127.0.0.1:9"), defaultFilter(), settings, Map.of());
  }

  /**
   * The filter settings the benchmarks use: request headers and BUFFERED body (so Sluice estimates
   * from the body), response headers, STREAMED response body (so Sluice sees the end of the answer
   * and the usage), {@code message_timeout} 1 s.
   */
  public static FilterConfig.Builder benchFilter() {
    return FilterConfig.builder()
        .requestHeaderMode(FilterConfig.HeaderMode.SEND)
        .requestBodyMode(FilterConfig.BodyMode.BUFFERED)
        .responseHeaderMode(FilterConfig.HeaderMode.SEND)
        .responseBodyMode(FilterConfig.BodyMode.STREAMED)
        .messageTimeout(java.time.Duration.ofSeconds(1))
        .receivingNamespaces("sluice")
        .grpcAuthority("sluice");
  }

  private static FilterConfig defaultFilter() {
    return benchFilter().build();
  }

  public String name() {
    return name;
  }

  /** False when ext_proc is disabled on the route. */
  public boolean admission() {
    return admission;
  }

  public SimulatedLlmUpstream upstream() {
    return upstream;
  }

  /** The (first) emulated Envoy. */
  public EnvoyExtProcEmulator envoy() {
    return envoys.get(0);
  }

  /** One emulated Envoy per admission server, in the order of the targets. */
  public List<EnvoyExtProcEmulator> envoys() {
    return envoys;
  }

  /** Spreads requests over {@link #envoys()} (a single one: always that one). */
  public LeastRequestBalancer balancer() {
    return balancer;
  }

  /** Sends one HTTP request through the replica the balancer picks. */
  public CompletableFuture<HttpResult> sendAsync(HttpRequest request) {
    return balancer.sendAsync(request);
  }

  public Map<String, String> routeMetadata() {
    return routeMetadata;
  }

  void listener(Listener listener) {
    this.listener = listener;
  }

  private UpstreamResponse counted(String id, int promptTokens, UpstreamResponse r) {
    if (r.status() != 200 || r.body().isEmpty()) {
      return r;
    }
    ResponseBody body = r.body();
    return new UpstreamResponse(
        r.status(),
        r.headers(),
        new ResponseBody() {
          @Override
          public Runnable subscribe(Sink sink) {
            listener.tokens(id, promptTokens);
            return body.subscribe(
                (data, eos) -> {
                  listener.tokens(id, 1);
                  sink.onData(data, eos);
                });
          }
        });
  }

  @Override
  public void close() {
    envoys.forEach(EnvoyExtProcEmulator::close);
    upstream.close();
  }
}
