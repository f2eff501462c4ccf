package io.sluice.proxyless;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.google.protobuf.Any;
import com.google.protobuf.util.Durations;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.NameResolverRegistry;
import io.grpc.xds.XdsNameResolverProvider;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.core.v3.GrpcService;
import io.grpc.xds.shaded.io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.grpc.xds.shaded.io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor;
import io.grpc.xds.shaded.io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode;
import io.grpc.xds.shaded.io.envoyproxy.envoy.extensions.grpc_service.channel_credentials.insecure.v3.InsecureCredentials;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.admission.PoolState;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;

/**
 * Sluice behind grpc-java's own xDS ext_proc filter (gRFC A93), no Envoy anywhere: a grpc-java
 * channel {@code xds:///llm-N} resolved by an in-process {@link XdsControlPlane} whose listener
 * runs the ext_proc filter against a running {@link SluiceServer} (127.0.0.1, free ports), in front
 * of a {@link FakeModelServer}. One harness per test: a fresh Sluice, control plane, target name
 * and xDS client.
 */
final class ProxylessHarness implements AutoCloseable {
  static {
    // gRFC A93 is experimental: the filter registers as a client filter only with this flag
    // (GrpcUtil.getFlag reads the environment, then the system property). Also set by the pom.
    System.setProperty("GRPC_EXPERIMENTAL_XDS_EXT_PROC_ON_CLIENT", "true");
  }

  static final String POOL = "gpu";
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final AtomicInteger SEQ = new AtomicInteger();

  final SluiceServer sluice;
  final FakeModelServer model;
  final XdsControlPlane controlPlane;
  final ManagedChannel channel;
  final String target;
  private final String scheme;
  private final List<ManagedChannel> extraChannels = new CopyOnWriteArrayList<>();
  private boolean sluiceStopped;

  /** The filter config Sluice documents for proxyless gRPC (docs/envoy.md#proxyless-grpc). */
  static ExternalProcessor.Builder recommendedFilter(int sluicePort) {
    return ExternalProcessor.newBuilder()
        .setGrpcService(
            GrpcService.newBuilder()
                .setGoogleGrpc(
                    GrpcService.GoogleGrpc.newBuilder()
                        .setTargetUri("dns:///127.0.0.1:" + sluicePort)
                        .setStatPrefix("sluice")
                        .addChannelCredentialsPlugin(
                            Any.pack(InsecureCredentials.getDefaultInstance())))
                // the trusted signals: metadata of the ext_proc stream itself, set by the operator
                .addInitialMetadata(
                    HeaderValue.newBuilder().setKey("x-sluice-tenant").setValue("acme")))
        .setProcessingMode(
            ProcessingMode.newBuilder()
                .setRequestHeaderMode(ProcessingMode.HeaderSendMode.SEND)
                .setResponseHeaderMode(ProcessingMode.HeaderSendMode.SEND)
                .setResponseTrailerMode(ProcessingMode.HeaderSendMode.SEND)
                .setRequestBodyMode(ProcessingMode.BodySendMode.NONE)
                .setResponseBodyMode(ProcessingMode.BodySendMode.NONE))
        .addRequestAttributes("request.path")
        .addRequestAttributes("request.host")
        .setFailureModeAllow(false);
  }

  static ObjectNode policy() {
    try (InputStream in = ProxylessHarness.class.getResourceAsStream("/proxyless/policy.yaml")) {
      return (ObjectNode) YAML.readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Sets {@code dotted.key} of a policy to a YAML value. */
  static ObjectNode with(ObjectNode policy, String dottedPath, String yamlValue) {
    try {
      String[] keys = dottedPath.split("\\.");
      ObjectNode at = policy;
      for (int i = 0; i < keys.length - 1; i++) {
        at = at.get(keys[i]) instanceof ObjectNode o ? o : at.putObject(keys[i]);
      }
      at.set(keys[keys.length - 1], YAML.readTree(yamlValue));
      return policy;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static ProxylessHarness start(ObjectNode policy) {
    return start(policy, UnaryOperator.identity());
  }

  static ProxylessHarness start(
      ObjectNode policy, UnaryOperator<ExternalProcessor.Builder> filter) {
    try {
      return new ProxylessHarness(
          SluiceServer.start(ConfigLoader.parse(YAML.writeValueAsString(policy))), filter);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private ProxylessHarness(SluiceServer sluice, UnaryOperator<ExternalProcessor.Builder> filter) {
    this.sluice = sluice;
    this.model = new FakeModelServer();
    int n = SEQ.incrementAndGet();
    this.target = "llm-" + n;
    this.controlPlane =
        new XdsControlPlane(
            target, filter.apply(recommendedFilter(sluice.grpcPort())).build(), model.port());
    this.scheme = "xds-sluice-" + n;
    NameResolverRegistry.getDefaultRegistry()
        .register(XdsNameResolverProvider.createForTest(scheme, controlPlane.bootstrap()));
    this.channel =
        Grpc.newChannelBuilder(scheme + ":///" + target, InsecureChannelCredentials.create())
            .build();
  }

  /**
   * Another channel to the same target whose authority is {@code authority} ({@code
   * overrideAuthority}): what the filter sends as {@code request.host} is the channel's authority
   * ({@code Channel.authority()}), not a per-call {@code CallOptions.withAuthority}. Closed with
   * the harness.
   */
  ManagedChannel channel(String authority) {
    ManagedChannel c =
        Grpc.newChannelBuilder(scheme + ":///" + target, InsecureChannelCredentials.create())
            .overrideAuthority(authority)
            .build();
    extraChannels.add(c);
    return c;
  }

  /** A timeout for one call: every call in this suite is over in well under it. */
  static io.grpc.CallOptions options() {
    return io.grpc.CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  static com.google.protobuf.Duration seconds(long s) {
    return Durations.fromSeconds(s);
  }

  PoolState.Snapshot pool() {
    return sluice.runtime().controller().pool(POOL).snapshot(sluice.runtime().ticker().nanos());
  }

  /** Requests of class {@code cls} waiting in the pool's queue now. */
  int queueDepth(String cls) {
    return sluice.runtime().controller().pool(POOL).queueDepth(cls);
  }

  double counter(String name, String... tags) {
    return sluice.registry().find(name).tags(tags).counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  double gauge(String name, String... tags) {
    return sluice.registry().find(name).tags(tags).gauges().stream()
        .mapToDouble(Gauge::value)
        .sum();
  }

  double released(String outcome) {
    return counter("sluice.permits.released", "pool", POOL, "outcome", outcome);
  }

  double releasedAny() {
    return counter("sluice.permits.released", "pool", POOL);
  }

  double decisions(String decision, String reason) {
    return counter("sluice.decisions", "decision", decision, "reason", reason);
  }

  /** Waits until the pool holds no permit and Sluice has no open ext_proc stream. */
  void awaitNothingInFlight() {
    await()
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(
            () -> {
              PoolState.Snapshot p = pool();
              assertThat(p.requestsInFlight()).as("requests in flight").isZero();
              assertThat(p.workInFlight()).as("work in flight").isZero();
              assertThat(p.tenantsInFlight()).as("tenants in flight").isZero();
              assertThat(gauge("sluice.extproc.streams.open")).as("open streams").isZero();
            });
  }

  /** Stops Sluice (the client, control plane and model server stay up). */
  void stopSluice() {
    sluiceStopped = true;
    sluice.close();
  }

  /**
   * Starts Sluice's graceful shutdown with {@code grace} on another thread (it drains: new ext_proc
   * streams refused, open ones run on); done when Sluice has stopped.
   */
  CompletableFuture<Void> shutdownSluice(Duration grace) {
    sluiceStopped = true;
    return CompletableFuture.runAsync(() -> sluice.shutdown(grace, "test"));
  }

  @Override
  public void close() {
    try {
      assertThat(controlPlane.nacks()).as("configs the xDS client refused").isEmpty();
    } finally {
      extraChannels.forEach(ManagedChannel::shutdownNow);
      channel.shutdownNow();
      try {
        channel.awaitTermination(5, TimeUnit.SECONDS);
        for (ManagedChannel c : extraChannels) {
          c.awaitTermination(5, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      model.close();
      controlPlane.close();
      if (!sluiceStopped) {
        sluice.close();
      }
    }
  }
}
