package io.sluice.bootstrap;

import static io.sluice.bootstrap.AdminGet.get;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.core.time.Ticker;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an operator reads in the log when nothing is wrong: nothing at WARN. Logging is slf4j-simple
 * (runtime dependency of {@code server}), which writes to whatever {@code System.err} is at each
 * line; the tests run it at WARN (root pom's Surefire properties), so every WARN of the server, of
 * Micrometer (a meter registered twice) or of any library reaches the captured stream. Each test
 * also shows the capture sees a WARN when there is one, so "no WARN" is not a blind capture.
 *
 * <p>Seen to fail: with {@code AdmissionMetrics.bindPools} no longer removing the gauges it bound
 * before, the good reload logs Micrometer's "This Gauge has been already registered" WARN.
 * Micrometer logs that WARN once per JVM (then at DEBUG), so in a run where an earlier test class
 * triggered it this test would not see it again.
 */
class QuietLogsTest {
  @TempDir Path dir;

  /** Runs {@code body} with {@code System.err} captured; returns the lines that were logged. */
  private interface Body {
    void run() throws Exception;
  }

  private static List<String> captured(Body body) throws Exception {
    PrintStream err = System.err;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    System.setErr(new PrintStream(out, true, StandardCharsets.UTF_8));
    try {
      body.run();
    } finally {
      System.setErr(err);
    }
    return out.toString(StandardCharsets.UTF_8).lines().toList();
  }

  private static List<String> warnings(List<String> lines) {
    // slf4j-simple: "[date] [thread] LEVEL logger - message" (date and thread as configured)
    return lines.stream().filter(l -> l.matches("(.*\\s)?WARN\\s.*")).toList();
  }

  private static String policy(String pool, long capacity) {
    return """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}, reloadInterval: 1h, warmup: {enabled: false}}
        pools: {%s: {capacity: %d}}
        classes:
          interactive: {rank: 0, reservedShare: 0.5}
          batch: {rank: 1, reservedShare: 0.2}
        """
        .formatted(pool, capacity);
  }

  @Test
  void startWithoutARateLimitConfigDirectory_logsNoWarn() throws Exception {
    // the embedded default, as `sluice-server serve` without a file: the rate limit service on,
    // RUNTIME_ROOT not set (its default directory does not exist here), the warm-up on
    String[] readyz = new String[1];
    List<String> lines =
        captured(
            () -> {
              try (SluiceServer s =
                  SluiceServer.start(
                      Main.withEnv(
                          ConfigLoader.embeddedDefault(),
                          Map.of(
                              "GRPC_PORT",
                              "0",
                              "PORT",
                              "0",
                              "GRPC_HOST",
                              "127.0.0.1",
                              "HOST",
                              "127.0.0.1")))) {
                readyz[0] = get(s.adminPort(), "/readyz");
              }
            });
    assertThat(readyz[0]).contains("no config directory (RUNTIME_ROOT not set)");
    assertThat(warnings(lines)).as(String.join("\n", lines)).isEmpty();

    // the same start with a directory the operator named that is not there: one WARN, seen
    Path missing = dir.resolve("no-such-runtime");
    List<String> named =
        captured(
            () -> {
              try (SluiceServer s =
                  SluiceServer.start(
                      ConfigLoader.parse(
                          policy("gpu", 1000)
                              + "rateLimit: {env: {RUNTIME_ROOT: '"
                              + missing
                              + "'}}\n"))) {
                assertThat(s.grpcPort()).isPositive();
              }
            });
    assertThat(warnings(named))
        .singleElement()
        .asString()
        .contains("rate limit config directory")
        .contains("does not exist");
  }

  @Test
  void goodHotReloads_logNoWarn() throws Exception {
    Path file = dir.resolve("sluice.yaml");
    Files.writeString(file, policy("gpu", 1000));
    try (SluiceServer s =
        SluiceServer.start(
            ConfigLoader.load(file),
            new SluiceServer.Options(file, Map.of(), Ticker.system(), Clock.systemUTC()))) {
      // meters of the pool exist before the reload, as on a server that has served requests
      s.runtime()
          .metrics()
          .decision("gpu", "interactive", "default", "reject", "pool_saturated", "body", 1000);
      List<String> lines =
          captured(
              () -> {
                Files.writeString(file, policy("gpu", 2000)); // same pool, new capacity
                assertThat(s.reloadIfChanged()).isTrue();
                Files.writeString(file, policy("gpu-b", 2000)); // the pool renamed
                assertThat(s.reloadIfChanged()).isTrue();
                Files.writeString(file, policy("gpu-b", 2000) + "# a comment\n"); // same policy
                assertThat(s.reloadIfChanged()).isTrue();
                get(s.adminPort(), "/metrics"); // a scrape after the reloads
              });
      assertThat(s.config().pools()).containsOnlyKeys("gpu-b");
      assertThat(warnings(lines)).as(String.join("\n", lines)).isEmpty();

      // a bad reload is a WARN, and the capture sees it
      List<String> bad =
          captured(
              () -> {
                Files.writeString(file, "pools: {gpu: {capacity: -1}}\n");
                assertThat(s.reloadIfChanged()).isFalse();
              });
      assertThat(warnings(bad)).hasSize(1);
    }
  }

  @Test
  void tenantSourcesNoShippedEnvoySets_oneWarnAtStart() throws Exception {
    List<String> lines =
        captured(
            () -> {
              try (SluiceServer s =
                  SluiceServer.start(
                      ConfigLoader.parse(
                          policy("gpu", 1000)
                              + "signals: {tenant: [{metadata: x-sluice-tenant}]}\n"))) {
                assertThat(s.grpcPort()).isPositive();
              }
            });
    assertThat(warnings(lines))
        .singleElement()
        .asString()
        .contains("config: signals.tenant: metadata x-sluice-tenant is set by none of the shipped")
        .contains("every request is the anonymous tenant");
  }
}
