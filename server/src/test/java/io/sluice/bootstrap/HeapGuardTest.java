package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.time.FakeTicker;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * Issue 13 (an OutOfMemoryError never takes the process down silently): health fails while the heap
 * stays nearly full after GC, so the kubelet restarts a JVM in a GC death spiral; it clears when
 * the heap recovers.
 */
class HeapGuardTest {
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  @Test
  void exhaustedOnlyAfterTheWholeWindowAboveTheRatio_clearsOnTheFirstCheckBelow() {
    FakeTicker t = new FakeTicker();
    double[] ratio = {0.5};
    HeapGuard g = new HeapGuard(0.9, Duration.ofSeconds(30), t, () -> ratio[0]);
    assertThat(g.check()).isFalse();
    ratio[0] = 0.95;
    assertThat(g.check()).isFalse();
    t.advance(Duration.ofSeconds(29));
    assertThat(g.check()).isFalse();
    ratio[0] = 0.89; // one collection that freed enough restarts the window
    assertThat(g.check()).isFalse();
    ratio[0] = 0.97;
    t.advance(Duration.ofSeconds(1));
    assertThat(g.check()).isFalse();
    t.advance(Duration.ofSeconds(30));
    assertThat(g.check()).isTrue();
    assertThat(g.exhausted()).isTrue();
    assertThat(g.lastRatio()).isEqualTo(0.97);
    ratio[0] = 0.4;
    assertThat(g.check()).isFalse();
  }

  @Test
  void ratioZero_turnsTheCheckOff() {
    FakeTicker t = new FakeTicker();
    HeapGuard g = new HeapGuard(0, Duration.ZERO, t, () -> 1.0);
    t.advance(Duration.ofHours(1));
    assertThat(g.check()).isFalse();
  }

  @Test
  void thisJvm_setsCollectionUsageThresholdsOnHeapPools_andReadsARatio() {
    HeapGuard g = HeapGuard.forThisJvm(0.9, Duration.ofSeconds(30), new FakeTicker());
    g.check();
    assertThat(g.lastRatio()).isBetween(0.0, 1.0);
    boolean any = false;
    for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
      if (p.getType() == MemoryType.HEAP
          && p.isCollectionUsageThresholdSupported()
          && p.getUsage().getMax() > 0) {
        assertThat(p.getCollectionUsageThreshold())
            .as(p.getName())
            .isEqualTo((long) (p.getUsage().getMax() * 0.9));
        any = true;
      }
    }
    assertThat(any).as("a heap pool with collection usage thresholds").isTrue();
  }

  @Test
  void server_heapExhausted_failsLivenessReadinessAndGrpcHealth_thenRecovers() throws Exception {
    SluiceConfig c =
        ConfigLoader.parse(
            ConfigLoader.embeddedDefaultYaml()
                .replace("port: 8081", "port: 0")
                .replace("port: 8080", "port: 0")
                .replace("host: 0.0.0.0", "host: 127.0.0.1")
                .replace(
                    "shutdownGrace: 30s",
                    "shutdownGrace: 0s\n  reloadInterval: 100ms\n"
                        + "  health: {maxHeapAfterGc: 0.9, heapAfterGcFor: 0s}\n"
                        + "  warmup: {enabled: false}"));
    AtomicReference<Double> ratio = new AtomicReference<>(0.3);
    try (SluiceServer s =
        SluiceServer.start(
            c,
            new SluiceServer.Options(
                null, Map.of(), io.sluice.core.time.Ticker.system(), Clock.systemUTC()),
            ratio::get)) {
      ManagedChannel ch =
          NettyChannelBuilder.forAddress("127.0.0.1", s.grpcPort()).usePlaintext().build();
      try {
        assertThat(status(s.adminPort(), "/healthz")).isEqualTo(200);
        assertThat(grpcHealth(ch)).isEqualTo(ServingStatus.SERVING);

        ratio.set(0.97);
        Awaitility.await()
            .atMost(Duration.ofSeconds(10))
            .until(() -> status(s.adminPort(), "/healthz") == 503);
        assertThat(body(s.adminPort(), "/healthz")).startsWith("heap exhausted: 97%");
        assertThat(status(s.adminPort(), "/readyz")).isEqualTo(503);
        assertThat(grpcHealth(ch)).isEqualTo(ServingStatus.NOT_SERVING);
        assertThat(s.registry().scrape()).contains("sluice_health_heap_exhausted 1.0");

        ratio.set(0.5);
        Awaitility.await()
            .atMost(Duration.ofSeconds(10))
            .until(() -> status(s.adminPort(), "/healthz") == 200);
        Awaitility.await()
            .atMost(Duration.ofSeconds(10))
            .until(() -> grpcHealth(ch) == ServingStatus.SERVING);
        assertThat(status(s.adminPort(), "/readyz")).isEqualTo(200);
      } finally {
        ch.shutdownNow();
      }
    }
  }

  private static ServingStatus grpcHealth(ManagedChannel ch) {
    return HealthGrpc.newBlockingStub(ch)
        .withDeadlineAfter(5, TimeUnit.SECONDS)
        .check(HealthCheckRequest.newBuilder().setService("sluice").build())
        .getStatus();
  }

  private static int status(int port, String path) throws Exception {
    return HTTP.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
            HttpResponse.BodyHandlers.ofString())
        .statusCode();
  }

  private static String body(int port, String path) throws Exception {
    return HTTP.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
            HttpResponse.BodyHandlers.ofString())
        .body();
  }
}
