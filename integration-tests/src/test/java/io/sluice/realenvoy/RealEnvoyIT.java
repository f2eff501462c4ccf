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
          byte[] response = CHAT_RESPONSE.getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().set("content-type", "application/json");
          exchange.sendResponseHeaders(200, response.length);
          exchange.getResponseBody().write(response);
          exchange.close();
        });
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
                "serve")
            .redirectErrorStream(true)
            .redirectOutput(sluiceLog.toFile());
    builder.environment().put("GRPC_HOST", "127.0.0.1");
    builder.environment().put("GRPC_PORT", Integer.toString(sluiceGrpcPort));
    builder.environment().put("HOST", "127.0.0.1");
    builder.environment().put("PORT", Integer.toString(sluiceAdminPort));
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

  @Test
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
