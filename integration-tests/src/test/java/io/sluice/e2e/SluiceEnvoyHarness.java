package io.sluice.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.admission.PoolState;
import io.sluice.emulator.EnvoyExtProcEmulator;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.emulator.Stats;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamRequest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;

/**
 * One in-process Sluice server, the Envoy ext_proc emulator in front of a {@link
 * ControlledUpstream}, and the assertions every end-to-end test shares. {@link #close()} checks
 * that, while Sluice was up, the emulator never had to continue a request unprocessed: no exchange
 * bypassed ext_proc (which is what a stream ended OK before its answer looks like), no failed
 * stream, no spurious message, no message timeout.
 */
final class SluiceEnvoyHarness implements AutoCloseable {
  static final String POOL = "gpu";
  static final String CHAT = "/v1/chat/completions";

  /**
   * Envoy's recommended filter (docs/envoy.md): BUFFERED request, STREAMED response, fail closed.
   */
  static FilterConfig.Builder recommendedFilter() {
    return FilterConfig.builder()
        .requestBodyMode(FilterConfig.BodyMode.BUFFERED)
        .responseBodyMode(FilterConfig.BodyMode.STREAMED)
        .responseHeaderMode(FilterConfig.HeaderMode.SEND)
        .messageTimeout(Duration.ofSeconds(2))
        .failureModeAllow(false)
        .receivingNamespaces("sluice")
        .grpcAuthority("sluice");
  }

  final SluiceServer server;
  final ControlledUpstream upstream;
  final EnvoyExtProcEmulator envoy;
  private final List<CompletableFuture<HttpResult>> exchanges = new ArrayList<>();
  private boolean sluiceStopped;
  private boolean bypassExpected;

  private SluiceEnvoyHarness(
      SluiceServer server,
      FilterConfig filter,
      Upstream served,
      ScheduledExecutorService timers,
      LongSupplier nanoTime) {
    this.server = server;
    this.upstream = new ControlledUpstream();
    this.envoy =
        EnvoyExtProcEmulator.connect(
            "127.0.0.1:" + server.grpcPort(),
            filter,
            served != null ? served : upstream,
            timers,
            nanoTime);
  }

  private SluiceEnvoyHarness(
      SluiceServer server,
      FilterConfig filter,
      java.util.function.Function<ControlledUpstream, io.sluice.emulator.RouteTable> routes) {
    this.server = server;
    this.upstream = new ControlledUpstream();
    this.envoy =
        EnvoyExtProcEmulator.connect(
            "127.0.0.1:" + server.grpcPort(), filter, routes.apply(upstream), null, null);
  }

  /**
   * A harness whose emulator routes by the table {@code routes} builds around {@link #upstream}
   * (e.g. a header route to another upstream before a catch-all to it).
   */
  static SluiceEnvoyHarness startRouted(
      Policy policy,
      FilterConfig filter,
      java.util.function.Function<ControlledUpstream, io.sluice.emulator.RouteTable> routes) {
    try {
      return new SluiceEnvoyHarness(
          SluiceServer.start(ConfigLoader.parse(policy.yaml())), filter, routes);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static SluiceEnvoyHarness start(Policy policy) {
    return start(policy, recommendedFilter().build());
  }

  static SluiceEnvoyHarness start(Policy policy, FilterConfig filter) {
    return start(policy, filter, null, null, null);
  }

  /**
   * A harness whose emulator sends to {@code served} instead of {@link #upstream} (which then stays
   * idle), with the emulator's timers (message timeouts, the client's cancel delay) on {@code
   * timers} and its clock {@code nanoTime} (null: its own timer thread, the system clock).
   */
  static SluiceEnvoyHarness start(
      Policy policy,
      FilterConfig filter,
      Upstream served,
      ScheduledExecutorService timers,
      LongSupplier nanoTime) {
    try {
      return new SluiceEnvoyHarness(
          SluiceServer.start(ConfigLoader.parse(policy.yaml())), filter, served, timers, nanoTime);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A harness around a Sluice the test started itself (e.g. with its own environment), its emulator
   * configured by {@code filter} and sending to {@code served} (null: {@link #upstream}).
   */
  static SluiceEnvoyHarness around(SluiceServer server, FilterConfig filter, Upstream served) {
    return new SluiceEnvoyHarness(server, filter, served, null, null);
  }

  /** A harness whose Sluice reads its monotonic time from {@code ticker} (retry windows). */
  static SluiceEnvoyHarness start(Policy policy, io.sluice.core.time.Ticker ticker) {
    try {
      return new SluiceEnvoyHarness(
          SluiceServer.start(
              ConfigLoader.parse(policy.yaml()), ticker, java.time.Clock.systemUTC()),
          recommendedFilter().build(),
          null,
          null,
          null);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A chat completion request on the {@code chat} route for tenant {@code acme}. */
  static HttpRequest.Builder chat(String json) {
    return HttpRequest.post(CHAT, json).routeGrpcInitialMetadata("x-sluice-tenant", "acme");
  }

  static String chatBody(int maxTokens, boolean stream) {
    return "{\"model\":\"gpt-4o\",\"max_tokens\":"
        + maxTokens
        + ",\"stream\":"
        + stream
        + (stream ? ",\"stream_options\":{\"include_usage\":true}" : "")
        + ",\"messages\":[{\"role\":\"user\",\"content\":\"Say hello to the integration test.\"}]}";
  }

  /** Sends and waits (at most 10 s: every exchange in these tests is over in well under that). */
  HttpResult send(HttpRequest request) {
    try {
      return sendAsync(request).get(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("exchange did not finish: " + request, e);
    }
  }

  /** Waits for an exchange started with {@link #sendAsync} (at most 10 s). */
  static HttpResult result(CompletableFuture<HttpResult> exchange) {
    try {
      return exchange.get(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("exchange did not finish", e);
    }
  }

  CompletableFuture<HttpResult> sendAsync(HttpRequest request) {
    CompletableFuture<HttpResult> f = envoy.sendAsync(request);
    synchronized (exchanges) {
      exchanges.add(f);
    }
    return f;
  }

  Stats stats() {
    return envoy.stats();
  }

  PrometheusMeterRegistry registry() {
    return server.registry();
  }

  PoolState.Snapshot pool() {
    return server.runtime().controller().pool(POOL).snapshot(server.runtime().ticker().nanos());
  }

  /** Sum of every counter {@code name} carrying the given tags (0 when none exists yet). */
  double counter(String name, String... tags) {
    return registry().find(name).tags(tags).counters().stream().mapToDouble(Counter::count).sum();
  }

  long summaryCount(String name, String... tags) {
    return registry().find(name).tags(tags).summaries().stream()
        .mapToLong(DistributionSummary::count)
        .sum();
  }

  double summaryTotal(String name, String... tags) {
    return registry().find(name).tags(tags).summaries().stream()
        .mapToDouble(DistributionSummary::totalAmount)
        .sum();
  }

  double gauge(String name, String... tags) {
    return registry().find(name).tags(tags).gauges().stream().mapToDouble(Gauge::value).sum();
  }

  double released(String outcome) {
    return counter("sluice.permits.released", "pool", POOL, "outcome", outcome);
  }

  double releasedAny() {
    return counter("sluice.permits.released", "pool", POOL);
  }

  /** Waits until the pool holds no permit and Sluice has no open ext_proc stream. */
  void awaitNothingInFlight() {
    awaitNoPermits();
    await()
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(
            () -> assertThat(gauge("sluice.extproc.streams.open")).as("open streams").isZero());
  }

  /** Waits until the pool holds no permit (ext_proc streams may still be open). */
  void awaitNoPermits() {
    await()
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(
            () -> {
              PoolState.Snapshot p = pool();
              assertThat(p.requestsInFlight()).as("requests in flight").isZero();
              assertThat(p.workInFlight()).as("work in flight").isZero();
              assertThat(p.tenantsInFlight()).as("tenants in flight").isZero();
            });
  }

  /** Waits until {@code n} requests reached the upstream. */
  List<UpstreamRequest> awaitUpstreamRequests(int n) {
    await().atMost(Duration.ofSeconds(5)).until(() -> upstream.received().size() >= n);
    return upstream.received();
  }

  /** Stops Sluice (the emulator and upstream stay up); ext_proc errors are expected from now on. */
  void stopSluice() {
    sluiceStopped = true;
    server.close();
  }

  /**
   * Starts Sluice's graceful shutdown with {@code grace} on another thread (it drains: new ext_proc
   * streams refused, open ones run on); done when Sluice has stopped.
   */
  CompletableFuture<Void> shutdownSluice(Duration grace) {
    sluiceStopped = true;
    return CompletableFuture.runAsync(() -> server.shutdown(grace, "test"));
  }

  /** The test provokes bypasses on purpose (failure_mode_allow tests). */
  void expectBypass() {
    bypassExpected = true;
  }

  static Struct sluiceMetadata(HttpResult r) {
    Value v = r.dynamicMetadata().getFieldsMap().get("sluice");
    assertThat(v).as("dynamic metadata namespace sluice in %s", r.dynamicMetadata()).isNotNull();
    return v.getStructValue();
  }

  static String str(Struct s, String key) {
    assertThat(s.getFieldsMap()).containsKey(key);
    return s.getFieldsOrThrow(key).getStringValue();
  }

  static double num(Struct s, String key) {
    assertThat(s.getFieldsMap()).containsKey(key);
    return s.getFieldsOrThrow(key).getNumberValue();
  }

  /** Asserts that Sluice answered every message of every exchange so far (nothing bypassed). */
  void assertExtProcNeverBypassed() {
    List<HttpResult> results = new ArrayList<>();
    synchronized (exchanges) {
      for (CompletableFuture<HttpResult> f : exchanges) {
        if (f.isDone() && !f.isCompletedExceptionally()) {
          results.add(f.join());
        }
      }
    }
    for (HttpResult r : results) {
      assertThat(r.extProcBypassed())
          .as("exchange bypassed ext_proc (stream ended early): %s", r)
          .isFalse();
    }
    Stats s = stats();
    assertThat(s.failureModeAllowed()).as("failure_mode_allowed %s", s).isZero();
    assertThat(s.streamsFailed()).as("streams_failed %s", s).isZero();
    assertThat(s.spuriousMsgsReceived()).as("spurious_msgs_received %s", s).isZero();
    assertThat(s.messageTimeouts()).as("message_timeouts %s", s).isZero();
  }

  @Override
  public void close() {
    try {
      if (!sluiceStopped && !bypassExpected) {
        assertExtProcNeverBypassed();
      }
    } finally {
      upstream.releaseHeld();
      upstream.finishStreams();
      envoy.close();
      upstream.close();
      if (!sluiceStopped) {
        server.close();
      }
    }
  }
}
