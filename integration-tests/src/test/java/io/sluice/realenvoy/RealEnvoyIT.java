package io.sluice.realenvoy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.images.builder.Transferable;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.utility.DockerImageName;

/**
 * The real {@code envoyproxy/envoy} image running {@code envoy-config/envoy.yaml} in front of
 * Sluice (the shaded jar, as a subprocess) and a loopback OpenAI-style upstream. Skipped where
 * there is no Docker engine. Run it with {@code mvn -B verify -pl integration-tests -am
 * -Dit.test=RealEnvoyIT}.
 */
@Testcontainers(disabledWithoutDocker = true)
@org.junit.jupiter.api.TestMethodOrder(org.junit.jupiter.api.MethodOrderer.OrderAnnotation.class)
class RealEnvoyIT {

  static final DockerImageName ENVOY_IMAGE = DockerImageName.parse("envoyproxy/envoy:v1.34-latest");
  static final String DOCKER_HOST = "host.testcontainers.internal";
  static final Path MODULE_DIR = Path.of(System.getProperty("user.dir"));
  static final Path ENVOY_YAML = MODULE_DIR.resolve("../envoy-config/envoy.yaml").normalize();
  static final Path SLUICE_JAR =
      MODULE_DIR.resolve("../server/target/sluice-server.jar").normalize();
  static final String CHAT_RESPONSE =
      """
      {"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"tiny",\
      "choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],\
      "usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}""";

  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  static final ConcurrentLinkedQueue<Map<String, List<String>>> UPSTREAM_REQUEST_HEADERS =
      new ConcurrentLinkedQueue<>();

  static HttpServer upstream;
  static Process sluice;
  static int sluiceAdminPort;
  static GenericContainer<?> envoy;

  @BeforeAll
  static void startEverything() throws Exception {
    assertThat(SLUICE_JAR)
        .as("build the server first: mvn -B package -pl server -am -DskipTests")
        .exists();

    upstream = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    upstream.createContext(
        "/",
        exchange -> {
          try (InputStream body = exchange.getRequestBody()) {
            body.readAllBytes();
          }
          UPSTREAM_REQUEST_HEADERS.add(Map.copyOf(exchange.getRequestHeaders()));
          String delay = exchange.getRequestHeaders().getFirst("x-test-delay-ms");
          if (delay != null) {
            try {
              Thread.sleep(Long.parseLong(delay));
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
          byte[] response = CHAT_RESPONSE.getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().set("content-type", "application/json");
          exchange.sendResponseHeaders(200, response.length);
          exchange.getResponseBody().write(response);
          exchange.close();
        });
    upstream.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
    upstream.start();
    int upstreamPort = upstream.getAddress().getPort();

    int sluiceGrpcPort = freePort();
    sluiceAdminPort = freePort();
    Path sluiceLog = MODULE_DIR.resolve("target/real-envoy-sluice.log");
    ProcessBuilder builder =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar",
                SLUICE_JAR.toString(),
                "serve",
                "--config",
                writePolicy().toString())
            .redirectErrorStream(true)
            .redirectOutput(sluiceLog.toFile());
    builder.environment().put("GRPC_HOST", "127.0.0.1");
    builder.environment().put("GRPC_PORT", Integer.toString(sluiceGrpcPort));
    builder.environment().put("HOST", "127.0.0.1");
    builder.environment().put("PORT", Integer.toString(sluiceAdminPort));
    builder.environment().put("RUNTIME_ROOT", writeRateLimitConfig().toString());
    builder.environment().put("RUNTIME_WATCH_ROOT", "false");
    sluice = builder.start();
    await("Sluice /readyz (log: " + sluiceLog + ")")
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(250))
        .ignoreExceptions()
        .until(() -> get(URI.create(adminUrl("/readyz"))).statusCode() == 200);

    org.testcontainers.Testcontainers.exposeHostPorts(upstreamPort, sluiceGrpcPort);
    envoy =
        new GenericContainer<>(ENVOY_IMAGE)
            .withAccessToHost(true)
            .withCopyToContainer(
                Transferable.of(envoyYamlFor(upstreamPort, sluiceGrpcPort)),
                "/etc/envoy/envoy.yaml")
            .withCommand("-c", "/etc/envoy/envoy.yaml", "--log-level", "warn")
            .withExposedPorts(10000, 9901)
            .waitingFor(Wait.forHttp("/ready").forPort(9901).forStatusCode(200))
            .withStartupTimeout(Duration.ofSeconds(90));
    envoy.start();
  }

  @AfterAll
  static void stopEverything() {
    if (envoy != null) {
      envoy.stop();
    }
    if (sluice != null) {
      sluice.destroy();
    }
    if (upstream != null) {
      upstream.stop(0);
    }
  }

  /**
   * A small pool (20,000 work units) so a few large requests fill it; interactive may queue for 5 s
   * (Envoy's max_message_timeout in envoy.yaml is 30 s and is passed to Sluice per stream); batch
   * never queues, so it is refused at once when interactive holds the pool.
   */
  static Path writePolicy() throws IOException {
    Path p = MODULE_DIR.resolve("target/real-envoy-policy.yaml");
    Files.createDirectories(p.getParent());
    Files.writeString(
        p,
        """
        pools:
          default: {capacity: 20000, maxMessageTimeout: 30s, defaultServiceTime: 1s,
                    retryAfter: {min: 1s, max: 30s}}
        classes:
          interactive: {rank: 0, reservedShare: 1.0, lendableShare: 1.0, maxQueueWait: 5s,
                        deadline: 60s, defaultOutputTokens: 16, maxOutputTokens: 16000}
          agent: {rank: 1, maxQueueWait: 0s, defaultOutputTokens: 16, maxOutputTokens: 16000}
          batch: {rank: 2, maxQueueWait: 0s, defaultOutputTokens: 16, maxOutputTokens: 16000}
        signals:
          tenant: [{metadata: x-sluice-tenant}, {header: x-tenant-id}]
          class: [{metadata: x-sluice-class}]
          pool: [{metadata: x-sluice-pool}]
          route: [{metadata: x-sluice-route}]
          format: [{metadata: x-sluice-format}]
          maxMessageTimeoutMs: [{metadata: x-sluice-max-message-timeout-ms}]
        routes:
          - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
          - {name: completions, match: {pathPrefix: /v1/completions}, class: batch, format: openai-completions}
        unmatched: {action: admit, pool: default, class: batch}
        """);
    return p;
  }

  /** envoyproxy/ratelimit-format budget: 60,000 work units per minute per tenant. */
  static Path writeRateLimitConfig() throws IOException {
    Path root = MODULE_DIR.resolve("target/real-envoy-runtime");
    Files.createDirectories(root.resolve("config"));
    Files.writeString(
        root.resolve("config/sluice.yaml"),
        """
        domain: sluice
        descriptors:
          - key: tenant
            rate_limit: {unit: minute, requests_per_unit: 60000}
            descriptors:
              - key: model
                rate_limit: {unit: minute, requests_per_unit: 100000000}
        """);
    return root;
  }

  private static HttpRequest chat(String path, int maxTokens, long delayMs) {
    String body =
        "{\"model\":\"tiny\",\"max_tokens\":"
            + maxTokens
            + (path.contains("chat")
                ? ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
                : ",\"prompt\":\"hi\"}");
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(envoyUrl(path)))
            .timeout(Duration.ofSeconds(60))
            .header("content-type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body));
    if (delayMs > 0) {
      b.header("x-test-delay-ms", Long.toString(delayMs));
    }
    return b.build();
  }

  @Test
  @org.junit.jupiter.api.Order(3)
  void poolHeldByInteractive_batchRefused503WithRetryAfterAndJsonBody() throws Exception {
    var longOne =
        HTTP.sendAsync(
            chat("/v1/chat/completions", 15000, 3000), HttpResponse.BodyHandlers.ofString());
    await().atMost(Duration.ofSeconds(10)).until(() -> UPSTREAM_REQUEST_HEADERS.size() >= 2);
    HttpResponse<String> r =
        HTTP.send(chat("/v1/completions", 15000, 0), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.headers().firstValue("retry-after")).isPresent();
    assertThat(r.headers().firstValue("x-sluice-reason")).contains("pool_saturated");
    assertThat(r.headers().firstValue("content-type"))
        .hasValueSatisfying(v -> assertThat(v).startsWith("application/json"));
    assertThat(JSON.readTree(r.body()).path("error").path("code").asText())
        .isEqualTo("pool_saturated");
    assertThat(longOne.get(60, java.util.concurrent.TimeUnit.SECONDS).statusCode()).isEqualTo(200);
  }

  @Test
  @org.junit.jupiter.api.Order(4)
  void poolFull_interactiveHeldWithOverride_thenAdmitted() throws Exception {
    int before = UPSTREAM_REQUEST_HEADERS.size();
    var longOne =
        HTTP.sendAsync(
            chat("/v1/chat/completions", 15000, 1500), HttpResponse.BodyHandlers.ofString());
    await().atMost(Duration.ofSeconds(10)).until(() -> UPSTREAM_REQUEST_HEADERS.size() > before);
    long t0 = System.nanoTime();
    HttpResponse<String> held =
        HTTP.send(chat("/v1/chat/completions", 15000, 0), HttpResponse.BodyHandlers.ofString());
    long waitedMs = (System.nanoTime() - t0) / 1_000_000;
    assertThat(held.statusCode()).as(held.body()).isEqualTo(200);
    assertThat(waitedMs).isGreaterThan(500); // it waited for the first one to finish
    assertThat(longOne.get(60, java.util.concurrent.TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    String stats = get(URI.create(envoyAdminUrl("/stats?filter=override_message_timeout"))).body();
    assertThat(stats).containsPattern("override_message_timeout_received: [1-9]");
  }

  @Test
  @org.junit.jupiter.api.Order(5)
  void tenantWorkBudgetExhausted_rateLimitServiceAnswersOverLimit() throws Exception {
    HttpResponse<String> last = null;
    for (int i = 0; i < 10; i++) {
      last =
          HTTP.send(chat("/v1/chat/completions", 15000, 0), HttpResponse.BodyHandlers.ofString());
      if (last.statusCode() == 429) {
        break;
      }
    }
    assertThat(last.statusCode()).isEqualTo(429);
    assertThat(last.headers().firstValue("x-envoy-ratelimited")).contains("true");
    assertThat(last.headers().firstValue("retry-after")).isPresent();
  }

  @Test
  @org.junit.jupiter.api.Order(1)
  void sluiceCluster_passesGrpcHealthCheck() {
    await("sluice cluster healthy in Envoy")
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(500))
        .untilAsserted(
            () -> {
              String clusters = get(URI.create(envoyAdminUrl("/clusters"))).body();
              assertThat(clusters).contains("sluice::").contains("health_flags::healthy");
              assertThat(clusters).doesNotContainPattern("sluice::[^\\n]*health_flags::/failed");
            });
  }

  @Test
  @org.junit.jupiter.api.Order(2)
  void chatCompletion_isAdmittedAndCarriesSluiceMetadata() throws Exception {
    String body =
        """
        {"model":"tiny","max_tokens":16,"messages":[{"role":"user","content":"hello"}]}""";
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(envoyUrl("/v1/chat/completions")))
            .timeout(Duration.ofSeconds(30))
            .header("content-type", "application/json")
            .header("x-sluice-class", "forged-by-client")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build();

    HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    assertThat(JSON.readTree(response.body()).path("usage").path("total_tokens").asInt())
        .isEqualTo(10);
    Map<String, List<String>> upstreamHeaders = UPSTREAM_REQUEST_HEADERS.peek();
    assertThat(upstreamHeaders).isNotNull();
    assertThat(upstreamHeaders.get("X-sluice-class")).as("client copy stripped").isNull();

    await("access log line with Sluice's decision")
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () -> {
              boolean decisionHeader = upstreamHeaders.containsKey("X-sluice-decision");
              assertThat(decisionHeader || accessLogDecision("chat") != null)
                  .as("x-sluice-decision upstream or sluice:decision in the access log")
                  .isTrue();
            });
  }

  /** The sluice_decision of the latest access log line for {@code route}, or null. */
  private static String accessLogDecision(String route) throws IOException {
    String decision = null;
    for (String line : envoy.getLogs().split("\n")) {
      if (!line.startsWith("{")) {
        continue;
      }
      JsonNode entry = JSON.readTree(line);
      if (route.equals(entry.path("route").asText()) && entry.path("sluice_decision").isTextual()) {
        decision = entry.path("sluice_decision").asText();
      }
    }
    return decision;
  }

  /** envoy.yaml with the admin on all interfaces and both clusters pointed at the host. */
  private static String envoyYamlFor(int upstreamPort, int sluiceGrpcPort) throws IOException {
    YAMLMapper yaml = new YAMLMapper();
    JsonNode root = yaml.readTree(Files.readString(ENVOY_YAML));
    ((ObjectNode) root.path("admin").path("address").path("socket_address"))
        .put("address", "0.0.0.0");
    for (JsonNode cluster : root.path("static_resources").path("clusters")) {
      int port =
          switch (cluster.path("name").asText()) {
            case "sluice" -> sluiceGrpcPort;
            case "llm_upstream" -> upstreamPort;
            default -> throw new IllegalStateException("unexpected cluster " + cluster);
          };
      for (JsonNode endpoints : cluster.path("load_assignment").path("endpoints")) {
        for (JsonNode lbEndpoint : endpoints.path("lb_endpoints")) {
          ObjectNode socket =
              (ObjectNode) lbEndpoint.path("endpoint").path("address").path("socket_address");
          socket.put("address", DOCKER_HOST).put("port_value", port);
        }
      }
    }
    return yaml.writeValueAsString(root);
  }

  private static HttpResponse<String> get(URI uri) throws IOException, InterruptedException {
    return HTTP.send(
        HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String adminUrl(String path) {
    return "http://127.0.0.1:" + sluiceAdminPort + path;
  }

  private static String envoyUrl(String path) {
    return "http://" + envoy.getHost() + ":" + envoy.getMappedPort(10000) + path;
  }

  private static String envoyAdminUrl(String path) {
    return "http://" + envoy.getHost() + ":" + envoy.getMappedPort(9901) + path;
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }
}
