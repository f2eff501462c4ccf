package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What an operator sees when the process starts, cannot start, and stops. */
class StartupShutdownTest {
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  @TempDir Path dir;

  private static String get(int port, String path) throws Exception {
    return HTTP.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
            HttpResponse.BodyHandlers.ofString())
        .body();
  }

  /** The embedded default on loopback, ports from the arguments, warm-up off. */
  private static SluiceConfig policy(int grpcPort, int adminPort, String extra) {
    return ConfigLoader.parse(
        ConfigLoader.embeddedDefaultYaml()
                .replace(
                    "grpc: {host: 0.0.0.0, port: 8081", "grpc: {host: 127.0.0.1, port: " + grpcPort)
                .replace(
                    "admin: {host: 0.0.0.0, port: 8080}",
                    "admin: {host: 127.0.0.1, port: " + adminPort + "}")
                .replace("shutdownGrace: 30s", "shutdownGrace: 30s\n  warmup: {enabled: false}")
            + extra);
  }

  private static ServerSocket occupied() throws Exception {
    return new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
  }

  @Test
  void grpcPortInUse_isOneErrorNamingThePortAndHowToChangeIt() throws Exception {
    try (ServerSocket taken = occupied()) {
      int port = taken.getLocalPort();
      assertThatThrownBy(() -> SluiceServer.start(policy(port, 0, "")))
          .isInstanceOfSatisfying(
              PortBindException.class, e -> assertThat(e.addressInUse()).isTrue())
          .hasMessage(
              "cannot listen on the gRPC port 127.0.0.1:"
                  + port
                  + ": address already in use (another process listens there); choose another"
                  + " with GRPC_HOST / GRPC_PORT or server.grpc.host / .port (0 = any free port)");
    }
  }

  @Test
  void adminPortInUse_isOneErrorNamingThePortAndHowToChangeIt() throws Exception {
    try (ServerSocket taken = occupied()) {
      int port = taken.getLocalPort();
      assertThatThrownBy(() -> SluiceServer.start(policy(0, port, "")))
          .isInstanceOf(PortBindException.class)
          .hasMessageStartingWith("cannot listen on the admin HTTP port 127.0.0.1:" + port + ": ")
          .hasMessageContaining("address already in use")
          .hasMessageContaining("HOST / PORT or server.admin.host / .port");
    }
  }

  @Test
  void serve_onAPortInUse_printsOneLineAndExitsWithThePortCode() throws Exception {
    try (ServerSocket taken = occupied()) {
      Path f = dir.resolve("p.yaml");
      Files.writeString(
          f,
          ConfigLoader.embeddedDefaultYaml()
              .replace(
                  "grpc: {host: 0.0.0.0, port: 8081",
                  "grpc: {host: 127.0.0.1, port: " + taken.getLocalPort())
              .replace("admin: {host: 0.0.0.0, port: 8080}", "admin: {host: 127.0.0.1, port: 0}"));
      // the bare command serves too
      assertThat(CommandLineTest.run("--config", f.toString()).err())
          .startsWith("sluice: cannot listen on the gRPC port");
      CommandLineTest.Run r = CommandLineTest.run("serve", "--config", f.toString());
      assertThat(r.code()).isEqualTo(Main.EXIT_PORT);
      assertThat(r.err().strip())
          .startsWith("sluice: cannot listen on the gRPC port 127.0.0.1:" + taken.getLocalPort())
          .contains("GRPC_PORT")
          .doesNotContain("\n")
          .doesNotContain("Exception");
    }
  }

  @Test
  void afterAFailedBind_thePortsAreFreeAgain() throws Exception {
    int adminPort;
    try (ServerSocket probe = occupied()) {
      adminPort = probe.getLocalPort();
    }
    try (ServerSocket taken = occupied()) {
      assertThatThrownBy(() -> SluiceServer.start(policy(taken.getLocalPort(), adminPort, "")))
          .isInstanceOf(PortBindException.class);
    }
    // the admin port the failed start had bound was let go: a new server binds it
    try (SluiceServer s = SluiceServer.start(policy(0, adminPort, ""))) {
      assertThat(s.adminPort()).isEqualTo(adminPort);
    }
  }

  @Test
  void startupLine_namesPolicyPoolsClassesAndRateLimitState_noConfigDirectory() throws Exception {
    try (SluiceServer s = SluiceServer.start(policy(0, 0, ""))) {
      assertThat(s.policySummary())
          .startsWith("policy embedded default (sha256 ")
          .contains("pools default (32768 work units, 64 requests)")
          .contains("classes interactive, agent, batch")
          .contains("5 routes")
          .contains(
              "rate limit service on, store memory, no config directory (RUNTIME_ROOT not set;");
      String ready = get(s.adminPort(), "/readyz");
      assertThat(ready).contains("ratelimit: ok; no config directory (RUNTIME_ROOT not set)");
      // nothing failed: no reload failure counted for a directory nobody configured
      assertThat(s.registry().find("sluice.rls.config.reloads").tag("result", "failure").counter())
          .isNull();
    }
  }

  @Test
  void startupLine_configuredRlsDirectoryThatDoesNotExist_isSaidInReadiness() throws Exception {
    Path missing = dir.resolve("nope");
    try (SluiceServer s =
        SluiceServer.start(
            policy(0, 0, "\nrateLimit: {env: {RUNTIME_ROOT: '" + missing + "'}}\n"))) {
      assertThat(s.policySummary())
          .contains("config directory " + missing.resolve("config") + " does not exist");
      assertThat(get(s.adminPort(), "/readyz"))
          .contains("ratelimit: ok; config directory " + missing.resolve("config"))
          .contains("does not exist (RUNTIME_ROOT): no limits loaded");
    }
  }

  @Test
  void startupLine_rlsDirectoryWithADomain_countsDomains_andFileAndOffAreNamed() throws Exception {
    Path rt = Files.createDirectories(dir.resolve("rt/config"));
    Files.writeString(
        rt.resolve("a.yaml"),
        "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 5}\n");
    Path file = dir.resolve("policy.yaml");
    SluiceConfig on =
        policy(0, 0, "\nrateLimit: {env: {RUNTIME_ROOT: '" + rt.getParent() + "'}}\n");
    Files.writeString(file, on.yaml());
    try (SluiceServer s =
        SluiceServer.start(
            on,
            new SluiceServer.Options(
                file,
                Map.of(),
                io.sluice.core.time.Ticker.system(),
                java.time.Clock.systemUTC()))) {
      assertThat(s.policySummary())
          .startsWith("policy " + file + " (sha256 ")
          .endsWith("rate limit service on, store memory, config directory " + rt + " (1 domains)");
      assertThat(get(s.adminPort(), "/readyz")).contains("ratelimit: ok; 1 domains");
    }
    try (SluiceServer s = SluiceServer.start(policy(0, 0, "\nrateLimit: {enabled: false}\n"))) {
      assertThat(s.policySummary()).endsWith("rate limit service off (rateLimit.enabled: false)");
    }
  }

  @Test
  void metrics_includeTheStandardJvmAndProcessMeters_andBuildInfo() throws Exception {
    try (SluiceServer s = SluiceServer.start(policy(0, 0, ""))) {
      String scrape = get(s.adminPort(), "/metrics");
      for (String m :
          new String[] {
            "jvm_memory_used_bytes",
            "jvm_gc_memory_allocated_bytes_total",
            "jvm_threads_live_threads",
            "jvm_threads_states_threads",
            "jvm_classes_loaded_classes",
            "process_cpu_usage",
            "system_cpus_available", // was system_cpu_count (promtool: a "_count" gauge)
            "process_cpu_seconds_total",
            "process_uptime_seconds",
            "process_start_time_seconds",
            "process_files_open_files",
            "process_files_max_files",
            "sluice_build_info{commit=\""
          }) {
        assertThat(scrape).as(m).contains(m);
      }
    }
  }

  @Test
  void shutdown_logsItsCauseTheDrainAndItsEnd() throws Exception {
    SluiceServer s = SluiceServer.start(policy(0, 0, ""));
    ManagedChannel ch =
        NettyChannelBuilder.forAddress("127.0.0.1", s.grpcPort()).usePlaintext().build();
    try {
      // one stream that opened and said nothing yet: open at shutdown, cut at the end of the grace
      StreamObserver<ProcessingRequest> stream =
          ExternalProcessorGrpc.newStub(ch)
              .process(
                  new StreamObserver<ProcessingResponse>() {
                    @Override
                    public void onNext(ProcessingResponse value) {}

                    @Override
                    public void onError(Throwable t) {}

                    @Override
                    public void onCompleted() {}
                  });
      assertThat(stream).isNotNull();
      await()
          .atMost(Duration.ofSeconds(20))
          .until(() -> s.registry().get("sluice.extproc.streams.open").gauge().value() == 1.0);
      s.shutdown(Duration.ofMillis(200), "test");
    } finally {
      ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    assertThat(s.shutdownLines()).hasSizeGreaterThanOrEqualTo(2);
    assertThat(s.shutdownLines().get(0))
        .startsWith("shutdown (test): health NOT_SERVING, new streams refused;")
        .contains("draining for up to 200ms: 1 ext_proc streams open, 0 permits in flight");
    assertThat(s.shutdownLines().get(s.shutdownLines().size() - 1))
        .startsWith("shutdown complete in ")
        .contains("0 of 1 streams finished within the grace, 1 cut");
  }
}
