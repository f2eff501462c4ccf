package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The embedded default serves gRPC health and the admin endpoints. */
class SluiceServerTest {
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  private static HttpResponse<String> get(int port, String path) throws Exception {
    return HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void embeddedDefault_servesHealthMetricsReadinessAndConfig() throws Exception {
    SluiceConfig c =
        Main.withEnv(
            ConfigLoader.embeddedDefault(),
            Map.of("GRPC_PORT", "0", "PORT", "0", "GRPC_HOST", "127.0.0.1", "HOST", "127.0.0.1"));
    try (SluiceServer server = SluiceServer.start(c)) {
      assertThat(get(server.adminPort(), "/healthz").statusCode()).isEqualTo(200);
      assertThat(get(server.adminPort(), "/readyz").statusCode()).isEqualTo(200);
      HttpResponse<String> metrics = get(server.adminPort(), "/metrics");
      assertThat(metrics.statusCode()).isEqualTo(200);
      assertThat(metrics.body())
          .contains("sluice_pool_capacity{pool=\"default\"} 32768.0")
          .contains("sluice_pool_work_in_flight{class=\"interactive\",pool=\"default\"}")
          .contains("sluice_extproc_streams_open")
          .contains("sluice_estimate_token_cache_lookups_total{result=\"hit\"}")
          .contains("sluice_estimate_token_cache_chars");
      HttpResponse<String> config = get(server.adminPort(), "/config");
      assertThat(config.body()).contains("\"interactive\"").contains("\"port\" : 0");
      assertThat(get(server.adminPort(), "/nope").statusCode()).isEqualTo(404);

      ManagedChannel ch =
          NettyChannelBuilder.forAddress("127.0.0.1", server.grpcPort()).usePlaintext().build();
      try {
        for (String service : new String[] {"", SluiceServer.HEALTH_SERVICE}) {
          HealthCheckResponse h =
              HealthGrpc.newBlockingStub(ch)
                  .withDeadlineAfter(5, TimeUnit.SECONDS)
                  .check(HealthCheckRequest.newBuilder().setService(service).build());
          assertThat(h.getStatus()).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
        }
        server.shutdown(Duration.ZERO);
        assertThat(server.draining()).isTrue();
      } finally {
        ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void rateLimitServiceOff_tenantBucketsStillUseTheProcessStore_observed() throws Exception {
    SluiceConfig c =
        Main.withEnv(
            ConfigLoader.parse(
                ConfigLoader.embeddedDefault().yaml() + "\nrateLimit: {enabled: false}\n"),
            Map.of("GRPC_PORT", "0", "PORT", "0", "GRPC_HOST", "127.0.0.1", "HOST", "127.0.0.1"));
    assertThat(c.rateLimit().enabled()).isFalse();
    try (SluiceServer server = SluiceServer.start(c)) {
      assertThat(get(server.adminPort(), "/metrics").body())
          .contains("sluice_rls_store_memory_bytes{store=\"memory\"}")
          .contains("sluice_rls_store_memory_max_bytes{store=\"memory\"}")
          .contains("sluice_rls_store_memory_evictions_total{state=\"live\",store=\"memory\"}")
          .doesNotContain("store=\"quota\"");
      server.shutdown(Duration.ZERO);
    }
  }
}
