package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.time.Ticker;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Finding 7 of issue 13: readiness only after the request path is warm, and the warm-up leaves no
 * trace in live accounting (tenant budgets, permits, decision metrics, decision log, RLS counters).
 */
class WarmUpTest {
  @TempDir Path dir;

  private static final HttpClient HTTP = HttpClient.newHttpClient();

  private static String get(int port, String path) throws Exception {
    return HTTP.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
            HttpResponse.BodyHandlers.ofString())
        .body();
  }

  /** Sum of every sample of {@code metric} in a Prometheus scrape. */
  static double sum(String scrape, String metric) {
    Matcher m =
        Pattern.compile("(?m)^" + Pattern.quote(metric) + "(\\{[^}]*\\})? ([0-9.eE+-]+)$")
            .matcher(scrape);
    double s = 0;
    while (m.find()) {
      s += Double.parseDouble(m.group(2));
    }
    return s;
  }

  private SluiceConfig policy(Path root, boolean warmup) {
    String yaml =
        ConfigLoader.embeddedDefaultYaml()
                .replace("port: 8081", "port: 0")
                .replace("port: 8080", "port: 0")
                .replace("host: 0.0.0.0", "host: 127.0.0.1")
                // a tight per-tenant budget: 24 warm-up streams would exhaust it if they were real
                .replace(
                    "free: {weight: 1, maxInFlight: 4}",
                    "free: {weight: 1, maxInFlight: 4, rpm: 3}")
                .replace("  level: debug\n", "  level: info\n")
                .replace(
                    "shutdownGrace: 30s", "shutdownGrace: 0s\n  warmup: {enabled: " + warmup + "}")
            + "rateLimit:\n  env: {RUNTIME_ROOT: "
            + root
            + ", RUNTIME_WATCH_ROOT: \"false\"}\n";
    return ConfigLoader.parse(yaml);
  }

  private Path rlsConfig() throws Exception {
    Path root = dir.resolve("runtime");
    Files.createDirectories(root.resolve("config"));
    Files.writeString(
        root.resolve("config/ratelimit.yaml"),
        """
        domain: sluice
        descriptors:
          - key: tenant
            rate_limit: {unit: minute, requests_per_unit: 3}
        """);
    return root;
  }

  @Test
  void start_warmsThroughTheRealHandlers_thenServes_leavingLiveAccountingUntouched()
      throws Exception {
    Path root = rlsConfig();
    PrintStream err = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    SluiceServer server;
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      server =
          SluiceServer.start(
              policy(root, true),
              new SluiceServer.Options(null, Map.of(), Ticker.system(), Clock.systemUTC()));
    } finally {
      System.setErr(err);
    }
    try (server) {
      String ready = get(server.adminPort(), "/readyz");
      assertThat(ready)
          .startsWith("ready\n")
          .contains("warm-up: done in")
          .contains("(24 ext_proc streams, 0 failed; 16 rate limit calls, 0 failed;")
          .contains("left: 0 permits, 0 streams)");
      assertThat(server.serving()).isTrue();

      String scrape = server.registry().scrape();
      assertThat(sum(scrape, "sluice_warmup_calls_total")).isEqualTo(40.0);
      assertThat(scrape).contains("sluice_warmup_duration_seconds").contains("sluice_ready 1.0");
      // Nothing of the warm-up in the live server's decision, stream, token or RLS counters ...
      for (String live :
          new String[] {
            "sluice_decisions_total",
            "sluice_extproc_streams_total",
            "sluice_tokens_estimated_total",
            "sluice_rls_total_hits_total",
            "sluice_rls_calls_total",
            "sluice_estimate_token_cache_lookups_total"
          }) {
        assertThat(sum(scrape, live)).as(live).isZero();
      }
      // ... nor in its decision log (level info: every decision would be printed).
      assertThat(captured.toString(StandardCharsets.UTF_8))
          .doesNotContain(SyntheticStreams.WARMUP_TENANT);

      ManagedChannel ch =
          NettyChannelBuilder.forAddress("127.0.0.1", server.grpcPort()).usePlaintext().build();
      try {
        assertThat(
                HealthGrpc.newBlockingStub(ch)
                    .withDeadlineAfter(5, TimeUnit.SECONDS)
                    .check(HealthCheckRequest.newBuilder().setService("sluice").build())
                    .getStatus())
            .isEqualTo(ServingStatus.SERVING);
        // The warm-up tenant's budgets are untouched: rpm 3 in the tier, 3/minute in RLS, while
        // the warm-up sent 24 streams and 16 calls for it.
        for (int i = 0; i < 3; i++) {
          SyntheticStreams.Result r =
              SyntheticStreams.run(
                  ch,
                  SyntheticStreams.warmupMetadata(),
                  SyntheticStreams.forConfig(server.config()).get(0),
                  Duration.ofSeconds(5));
          assertThat(r.ok()).as(r.toString()).isTrue();
          assertThat(r.admitted()).as("real stream %d of the warm-up tenant", i).isTrue();
          RateLimitResponse rl =
              RateLimitServiceGrpc.newBlockingStub(ch)
                  .withDeadlineAfter(5, TimeUnit.SECONDS)
                  .shouldRateLimit(
                      RateLimitRequest.newBuilder()
                          .setDomain("sluice")
                          .addDescriptors(
                              RateLimitDescriptor.newBuilder()
                                  .addEntries(
                                      RateLimitDescriptor.Entry.newBuilder()
                                          .setKey("tenant")
                                          .setValue(SyntheticStreams.WARMUP_TENANT)))
                          .build());
          assertThat(rl.getOverallCode()).isEqualTo(RateLimitResponse.Code.OK);
        }
      } finally {
        ch.shutdownNow();
      }
      // Real traffic is counted (the zero checks above are not vacuous).
      String after = server.registry().scrape();
      assertThat(sum(after, "sluice_decisions_total")).isEqualTo(3.0);
      assertThat(sum(after, "sluice_rls_total_hits_total")).isEqualTo(3.0);
    }
  }

  @Test
  void warmupOff_servesAtOnce_andSaysSo() throws Exception {
    try (SluiceServer server =
        SluiceServer.start(
            policy(rlsConfig(), false),
            new SluiceServer.Options(null, Map.of(), Ticker.system(), Clock.systemUTC()))) {
      assertThat(get(server.adminPort(), "/readyz"))
          .contains("warm-up: off (server.warmup.enabled: false)");
      assertThat(sum(server.registry().scrape(), "sluice_warmup_calls_total")).isZero();
    }
  }
}
