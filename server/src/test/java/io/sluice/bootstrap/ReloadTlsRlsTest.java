package io.sluice.bootstrap;

import static io.sluice.bootstrap.AdminGet.get;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.policy.Tenant;
import io.sluice.core.time.Ticker;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Hot reload of the policy, TLS/mTLS on the gRPC port, and the rate limit service wiring. */
class ReloadTlsRlsTest {
  @TempDir Path dir;

  private static String policy(long capacity, String extraClass) {
    return """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}, reloadInterval: 1h}
        pools: {gpu: {capacity: %d}}
        classes:
          interactive: {rank: 0, reservedShare: 0.5}
          %s
        """
        .formatted(capacity, extraClass);
  }

  @Test
  void reload_appliesNewPolicy_keepsInFlightPermits_andKeepsLastGoodOnError() throws Exception {
    Path file = dir.resolve("sluice.yaml");
    Files.writeString(file, policy(1000, ""));
    SluiceConfig c = ConfigLoader.load(file);
    try (SluiceServer s =
        SluiceServer.start(
            c, new SluiceServer.Options(file, Map.of(), Ticker.system(), Clock.systemUTC()))) {
      var rt = s.runtime();
      Permit p =
          ((Decision.Admit)
                  rt.controller()
                      .decide(
                          new AdmissionRequest(
                              c.pools().get("gpu"),
                              c.classes().get("interactive"),
                              new Tenant("t", c.tiers().values().iterator().next()),
                              800,
                              0,
                              Long.MAX_VALUE / 2,
                              -1,
                              -1),
                          Ask.now(0)))
              .permit();

      Files.writeString(file, policy(500, "batch: {rank: 1, reservedShare: 0.2}"));
      assertThat(s.reloadIfChanged()).isTrue();
      assertThat(s.config().pools().get("gpu").capacityWorkUnits()).isEqualTo(500);
      assertThat(s.config().classes()).containsKey("batch");
      var pool = s.runtime().controller().pool("gpu");
      assertThat(pool.snapshot(0).workInFlight()).isEqualTo(800); // survived the reload
      // the shrunk pool admits nothing new until the old work drains
      Decision d =
          s.runtime()
              .controller()
              .decide(
                  new AdmissionRequest(
                      s.config().pools().get("gpu"),
                      s.config().classes().get("batch"),
                      new Tenant("u", s.config().tiers().values().iterator().next()),
                      10,
                      0,
                      Long.MAX_VALUE / 2,
                      -1,
                      -1),
                  Ask.now(0));
      assertThat(d).isInstanceOf(Decision.Reject.class);
      assertThat(p.release(Outcome.COMPLETED, 1)).isTrue();
      assertThat(pool.snapshot(1).workInFlight()).isZero();
      assertThat(s.reloadIfChanged()).isFalse(); // unchanged content

      Files.writeString(file, "pools: {gpu: {capacity: -1}}\n");
      assertThat(s.reloadIfChanged()).isFalse();
      assertThat(s.config().pools().get("gpu").capacityWorkUnits()).isEqualTo(500);
      assertThat(
              s.registry().find("sluice.config.reloads").tag("result", "failure").counter().count())
          .isEqualTo(1.0);
      assertThat(get(s.adminPort(), "/readyz"))
          .contains("last reload failed")
          .contains("pools.gpu.capacity");
    }
  }

  @Test
  void reload_seesKubernetesConfigMapSymlinkSwap() throws Exception {
    Path v1 = Files.createDirectory(dir.resolve("..2026_11_30_v1"));
    Files.writeString(v1.resolve("sluice.yaml"), policy(1000, ""));
    Path data = dir.resolve("..data");
    Files.createSymbolicLink(data, v1.getFileName());
    Path file = dir.resolve("sluice.yaml");
    Files.createSymbolicLink(file, Path.of("..data", "sluice.yaml"));
    try (SluiceServer s =
        SluiceServer.start(
            ConfigLoader.load(file),
            new SluiceServer.Options(file, Map.of(), Ticker.system(), Clock.systemUTC()))) {
      Path v2 = Files.createDirectory(dir.resolve("..2026_11_30_v2"));
      Files.writeString(v2.resolve("sluice.yaml"), policy(2000, ""));
      Path tmp = dir.resolve("..data_tmp");
      Files.createSymbolicLink(tmp, v2.getFileName());
      Files.move(tmp, data, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      assertThat(s.reloadIfChanged()).isTrue();
      assertThat(s.config().pools().get("gpu").capacityWorkUnits()).isEqualTo(2000);
    }
  }

  private Path cert(String name) throws Exception {
    Path out = dir.resolve(name);
    try (InputStream in = getClass().getResourceAsStream("/certs/" + name)) {
      Files.copy(in, out);
    }
    return out;
  }

  @Test
  void mtls_acceptsClientWithCertificate_refusesClientWithout() throws Exception {
    String yaml =
        """
        server:
          grpc:
            host: 127.0.0.1
            port: 0
            tls: {certFile: %s, keyFile: %s, clientCaFile: %s}
          admin: {host: 127.0.0.1, port: 0}
        pools: {gpu: {capacity: 100}}
        classes: {interactive: {reservedShare: 1.0}}
        """
            .formatted(cert("server1.pem"), cert("server1.key"), cert("ca.pem"));
    try (SluiceServer s = SluiceServer.start(ConfigLoader.parse(yaml))) {
      ChannelCredentials withCert =
          TlsChannelCredentials.newBuilder()
              .trustManager(dir.resolve("ca.pem").toFile())
              .keyManager(cert("client.pem").toFile(), cert("client.key").toFile())
              .build();
      ManagedChannel ok =
          Grpc.newChannelBuilderForAddress("localhost", s.grpcPort(), withCert)
              .overrideAuthority("foo.test.google.fr")
              .build();
      try {
        HealthCheckResponse h =
            HealthGrpc.newBlockingStub(ok)
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .check(HealthCheckRequest.newBuilder().setService("sluice").build());
        assertThat(h.getStatus()).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
      } finally {
        ok.shutdownNow();
      }
      ChannelCredentials noCert =
          TlsChannelCredentials.newBuilder().trustManager(dir.resolve("ca.pem").toFile()).build();
      ManagedChannel bad =
          Grpc.newChannelBuilderForAddress("localhost", s.grpcPort(), noCert)
              .overrideAuthority("foo.test.google.fr")
              .build();
      try {
        assertThatThrownBy(
                () ->
                    HealthGrpc.newBlockingStub(bad)
                        .withDeadlineAfter(5, TimeUnit.SECONDS)
                        .check(HealthCheckRequest.getDefaultInstance()))
            .isInstanceOf(StatusRuntimeException.class);
      } finally {
        bad.shutdownNow();
      }
    }
  }

  @Test
  void rateLimitService_servedOnTheGrpcPort_withHealthAndHttpEndpoints() throws Exception {
    Path root = dir.resolve("runtime");
    Files.createDirectories(root.resolve("config"));
    Files.writeString(
        root.resolve("config/ratelimit.yaml"),
        """
        domain: sluice
        descriptors:
          - key: tenant
            rate_limit: {unit: minute, requests_per_unit: 2}
        """);
    String yaml =
        """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
        pools: {gpu: {capacity: 100}}
        classes: {interactive: {reservedShare: 1.0}}
        rateLimit:
          env: {RUNTIME_ROOT: %s, RUNTIME_WATCH_ROOT: "false"}
        """
            .formatted(root);
    try (SluiceServer s =
        SluiceServer.start(
            ConfigLoader.parse(yaml),
            new SluiceServer.Options(null, Map.of(), Ticker.system(), Clock.systemUTC()))) {
      ManagedChannel ch =
          NettyChannelBuilder.forAddress("127.0.0.1", s.grpcPort()).usePlaintext().build();
      try {
        RateLimitRequest req =
            RateLimitRequest.newBuilder()
                .setDomain("sluice")
                .addDescriptors(
                    RateLimitDescriptor.newBuilder()
                        .addEntries(
                            RateLimitDescriptor.Entry.newBuilder()
                                .setKey("tenant")
                                .setValue("acme")))
                .build();
        var stub = RateLimitServiceGrpc.newBlockingStub(ch).withDeadlineAfter(5, TimeUnit.SECONDS);
        assertThat(stub.shouldRateLimit(req).getOverallCode()).isEqualTo(RateLimitResponse.Code.OK);
        assertThat(stub.shouldRateLimit(req).getOverallCode()).isEqualTo(RateLimitResponse.Code.OK);
        RateLimitResponse over = stub.shouldRateLimit(req);
        assertThat(over.getOverallCode()).isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
        assertThat(over.getResponseHeadersToAddList())
            .anyMatch(h -> h.getKey().equalsIgnoreCase("retry-after"));
        HealthCheckResponse h =
            HealthGrpc.newBlockingStub(ch)
                .withDeadlineAfter(5, TimeUnit.SECONDS)
                .check(
                    HealthCheckRequest.newBuilder()
                        .setService(SluiceServer.RLS_HEALTH_SERVICE)
                        .build());
        assertThat(h.getStatus()).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
      } finally {
        ch.shutdownNow();
      }
      assertThat(get(s.adminPort(), "/healthcheck")).isEqualTo("OK");
      HttpResponse<String> json =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.adminPort() + "/json"))
                      .POST(
                          HttpRequest.BodyPublishers.ofString(
                              "{\"domain\":\"sluice\",\"descriptors\":[{\"entries\":[{\"key\":\"tenant\",\"value\":\"other\"}]}]}"))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
      assertThat(json.statusCode()).isEqualTo(200);
      assertThat(json.body()).contains("OK");
    }
  }
}
