package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.bootstrap.StoreEnv;
import io.sluice.core.time.FakeTicker;
import io.sluice.rls.config.RlsSettings;
import io.sluice.store.MutableClock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Finding 2 at the service level: unique large descriptor values (as Envoy copies them from request
 * headers) against the memory backend with a small bound. The store stays within its bound, says so
 * in its gauges, counts its evictions, and a client already at its limit stays limited.
 */
class RlsMemoryBoundTest {
  @TempDir Path root;
  final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  final MutableClock clock = new MutableClock(RlsFixture.START);
  RlsModule module;
  final java.util.List<AutoCloseable> stores = new java.util.ArrayList<>();

  @AfterEach
  void close() {
    if (module != null) {
      module.close();
    }
    for (AutoCloseable c : stores) {
      try {
        c.close();
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }
  }

  private RlsModule start(String... extra) throws Exception {
    Path dir = root.resolve("config");
    Files.createDirectories(dir);
    Files.writeString(
        dir.resolve("limits.yaml"),
        """
        domain: d
        descriptors:
          - key: user
            rate_limit: {unit: hour, requests_per_unit: 5}
          - key: header
            rate_limit: {unit: hour, requests_per_unit: 100}
        """);
    Map<String, String> env = new HashMap<>();
    env.put("RUNTIME_ROOT", root.toString());
    env.put("RUNTIME_WATCH_ROOT", "false");
    env.put("SLUICE_RLS_CONFIG_POLL_INTERVAL", "0");
    for (int i = 0; i < extra.length; i += 2) {
      env.put(extra[i], extra[i + 1]);
    }
    module = WiredRls.create(env, registry, clock, new FakeTicker(), stores);
    return module;
  }

  private RlsDecision.Decided call(String key, String value) {
    return (RlsDecision.Decided)
        module
            .evaluator()
            .evaluate(new RlsRequest("d", List.of(RlsRequest.Descriptor.of(key, value)), 0))
            .toCompletableFuture()
            .join();
  }

  private double gauge(String name) {
    Gauge g = registry.find(name).tag("store", "memory").gauge();
    assertThat(g).as(name).isNotNull();
    return g.value();
  }

  private double evictions(String state) {
    FunctionCounter c =
        registry
            .find(RlsMetrics.MEMORY_EVICTIONS)
            .tags("store", "memory", "state", state)
            .functionCounter();
    assertThat(c).as("evictions " + state).isNotNull();
    return c.count();
  }

  @Test
  void uniqueLargeDescriptorValues_stayWithinTheBound_andTheLimitedClientStaysLimited()
      throws Exception {
    start("SLUICE_RLS_MEMORY_MAX_BYTES", "1MiB");
    for (int i = 0; i < 6; i++) {
      call("user", "alice");
    }
    assertThat(call("user", "alice").overall()).isEqualTo(RlsDecision.Code.OVER_LIMIT);
    String pad = "h".repeat(8 * 1024);
    for (int i = 0; i < 1024; i++) { // 8 MiB of keys
      assertThat(call("header", i + pad).overall()).isEqualTo(RlsDecision.Code.OK);
      assertThat(gauge(RlsMetrics.MEMORY_BYTES)).isLessThanOrEqualTo(1 << 20);
    }
    assertThat(gauge(RlsMetrics.MEMORY_MAX_BYTES)).isEqualTo(1 << 20);
    assertThat(gauge(RlsMetrics.MEMORY_ENTRIES)).isPositive();
    assertThat(evictions("live")).isPositive();
    FunctionCounter lost =
        registry.find(RlsMetrics.MEMORY_EVICTED_HITS).tag("store", "memory").functionCounter();
    assertThat(lost.count()).isEqualTo(evictions("live")); // one hit per flooded key
    assertThat(call("user", "alice").overall())
        .as("alice's counter survived the flood")
        .isEqualTo(RlsDecision.Code.OVER_LIMIT);
  }

  @Test
  void defaultBound_is64MiB_andSizesAreParsed() throws Exception {
    assertThat(StoreEnv.settings(Map.of()).memoryBounds().maxBytes()).isEqualTo(64L << 20);
    assertThat(
            StoreEnv.settings(Map.of("SLUICE_RLS_MEMORY_MAX_BYTES", "128MiB"))
                .memoryBounds()
                .maxBytes())
        .isEqualTo(128L << 20);
    assertThat(
            StoreEnv.settings(Map.of("SLUICE_RLS_MEMORY_MAX_BYTES", "1048576"))
                .memoryBounds()
                .maxBytes())
        .isEqualTo(1L << 20);
    assertThat(
            StoreEnv.settings(Map.of("SLUICE_RLS_MEMORY_MAX_BYTES", "2 GiB"))
                .memoryBounds()
                .maxBytes())
        .isEqualTo(2L << 30);
    assertThatThrownBy(() -> StoreEnv.settings(Map.of("SLUICE_RLS_MEMORY_MAX_BYTES", "lots")))
        .hasMessageContaining("SLUICE_RLS_MEMORY_MAX_BYTES: lots (expected:");
    assertThatThrownBy(() -> StoreEnv.settings(Map.of("SLUICE_RLS_MEMORY_MAX_BYTES", "1KiB")))
        .hasMessageContaining("SLUICE_RLS_MEMORY_MAX_BYTES: 1024 (expected: >= 65536)");
    assertThatThrownBy(() -> StoreEnv.settings(Map.of("SLUICE_RLS_MEMORY_MAX_ENTRIES", "-3")))
        .hasMessageContaining("SLUICE_RLS_MEMORY_MAX_ENTRIES: -3");
    assertThatThrownBy(() -> RlsSettings.fromEnv(Map.of("SLUICE_RLS_WARMUP_TIMEOUT", "0s")))
        .hasMessageContaining("SLUICE_RLS_WARMUP_TIMEOUT");
    start();
    assertThat(gauge(RlsMetrics.MEMORY_MAX_BYTES)).isEqualTo(64L << 20);
  }

  @Test
  void hitsAddendOutOfRange_overJson_is400() throws Exception {
    start();
    HttpReply r =
        module
            .json(
                "{\"domain\":\"d\",\"descriptors\":[{\"entries\":[{\"key\":\"user\",\"value\":\"x\"}],"
                    + "\"hitsAddend\":\"18446744073709551615\"}]}")
            .toCompletableFuture()
            .join();
    assertThat(r.status()).isEqualTo(400);
    assertThat(r.body()).contains("hits_addend: 18446744073709551615 (expected: at most");
  }
}
