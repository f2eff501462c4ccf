package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.MutableClock;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RlsModuleTest {
  @TempDir Path root;
  final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  final MutableClock clock = new MutableClock(RlsFixture.START);
  RlsModule module;
  final java.util.List<AutoCloseable> stores = new java.util.ArrayList<>();

  static final String GOOD =
      "domain: d\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 1}\n";

  private Path configDir() throws IOException {
    Path dir = root.resolve("ratelimit").resolve("config");
    Files.createDirectories(dir);
    return dir;
  }

  private RlsModule start(String... extra) {
    java.util.HashMap<String, String> env = new java.util.HashMap<>();
    env.put("RUNTIME_ROOT", root.toString());
    env.put("RUNTIME_SUBDIRECTORY", "ratelimit");
    env.put("RUNTIME_WATCH_ROOT", "false");
    env.put("SLUICE_RLS_CONFIG_POLL_INTERVAL", "0");
    for (int i = 0; i < extra.length; i += 2) {
      env.put(extra[i], extra[i + 1]);
    }
    module = WiredRls.create(env, registry, clock, new FakeTicker(), stores);
    return module;
  }

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

  private static String request(String user) {
    return "{\"domain\":\"d\",\"descriptors\":[{\"entries\":[{\"key\":\"user\",\"value\":\""
        + user
        + "\"}]}]}";
  }

  private HttpReply json(String body) {
    return module.json(body).toCompletableFuture().join();
  }

  @Test
  void json_okThenOverLimit_badBody400() throws IOException {
    Files.writeString(configDir().resolve("basic.yaml"), GOOD);
    start();
    HttpReply ok = json(request("a"));
    assertThat(ok.status()).isEqualTo(200);
    assertThat(ok.body()).contains("\"overallCode\": \"OK\"");
    HttpReply over = json(request("a"));
    assertThat(over.status()).isEqualTo(429);
    assertThat(over.body()).contains("OVER_LIMIT").contains("retry-after");
    assertThat(json("{not json").status()).isEqualTo(400);
    assertThat(json("{\"domain\":\"\",\"descriptors\":[]}"))
        .isEqualTo(HttpReply.text(500, "rate limit domain must not be empty"));
  }

  @Test
  void reload_badConfig_keepsLastGoodAndCounts() throws IOException {
    Path dir = configDir();
    Files.writeString(dir.resolve("basic.yaml"), GOOD);
    start();
    assertThat(module.health().domains()).isEqualTo(1);
    Files.writeString(dir.resolve("basic.yaml"), GOOD.replace("minute", "fortnight"));
    assertThat(module.reload()).isFalse();
    RlsHealth h = module.health();
    assertThat(h.configLoadErrors()).isEqualTo(1);
    assertThat(h.lastConfigError()).isEqualTo("basic.yaml: invalid rate limit unit 'fortnight'");
    assertThat(h.healthy()).isTrue();
    json(request("a"));
    assertThat(json(request("a")).status()).isEqualTo(429);
    assertThat(registry.counter(RlsMetrics.CONFIG_RELOADS, "result", "failure").count())
        .isEqualTo(1);
  }

  @Test
  void watcher_fileChange_reloads() throws IOException {
    Path dir = configDir();
    Files.writeString(dir.resolve("basic.yaml"), GOOD);
    start();
    module.pollOnce();
    assertThat(registry.counter(RlsMetrics.CONFIG_RELOADS, "result", "success").count())
        .isEqualTo(1);
    Files.writeString(dir.resolve("more.yaml"), "domain: other\n");
    module.pollOnce();
    assertThat(module.health().domains()).isEqualTo(2);
  }

  @Test
  void noConfig_callsFail_healthDependsOnSetting() {
    start("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", "true");
    assertThat(json(request("a")))
        .isEqualTo(HttpReply.text(500, "no rate limit configuration loaded"));
    assertThat(module.healthcheck().status()).isEqualTo(500);
    assertThat(module.health().configLoadErrors()).isEqualTo(1);
  }

  @Test
  void healthcheck_healthyWithConfig_ok() throws IOException {
    Files.writeString(configDir().resolve("basic.yaml"), GOOD);
    start("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", "true");
    assertThat(module.healthcheck()).isEqualTo(HttpReply.text(200, "OK"));
    assertThat(module.rlconfig().body()).contains("d.user: unit=MINUTE requests_per_unit=1");
  }
}
