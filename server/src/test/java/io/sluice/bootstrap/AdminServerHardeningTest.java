package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The admin port under slow and wrong clients: half-sent requests hold no thread, so {@code
 * /healthz}, {@code /readyz} and {@code /metrics} answer beside them; every route answers only its
 * methods (405 with {@code Allow}; HEAD where GET is).
 */
class AdminServerHardeningTest {
  private static final HttpClient HTTP =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(5))
          .build();
  private static final Map<String, String> LOCAL =
      Map.of("GRPC_PORT", "0", "PORT", "0", "GRPC_HOST", "127.0.0.1", "HOST", "127.0.0.1");
  private static final String POLICY =
      ConfigLoader.embeddedDefaultYaml() + "\nserver: {warmup: {enabled: false}}\n";

  private static HttpResponse<String> send(int port, String method, String path) throws Exception {
    return HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(10))
            .method(method, HttpRequest.BodyPublishers.noBody())
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void twoHalfSentRequests_healthReadinessAndMetricsStillAnswerPromptly() throws Exception {
    try (SluiceServer server =
        SluiceServer.start(Main.withEnv(ConfigLoader.parse(POLICY), LOCAL))) {
      int port = server.adminPort();
      List<Socket> slow = new ArrayList<>();
      try {
        for (int i = 0; i < 2; i++) {
          Socket s = new Socket();
          s.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
          OutputStream out = s.getOutputStream();
          // request line and one header, never the blank line that ends the head
          out.write("GET /metrics HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
          out.flush();
          slow.add(s);
        }
        long worst = 0;
        for (int round = 0; round < 5; round++) {
          for (String path : List.of("/healthz", "/readyz", "/metrics")) {
            long t0 = System.nanoTime();
            HttpResponse<String> r = send(port, "GET", path);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            worst = Math.max(worst, ms);
            assertThat(r.statusCode()).as(path).isEqualTo(200);
          }
        }
        System.err.printf("admin beside two half-sent requests: slowest answer %d ms%n", worst);
        // 100 ms is the target (docs/operations.md has the figure); 1 s of slack on 2 shared cores
        assertThat(worst).as("slowest answer, ms").isLessThan(1_000);
      } finally {
        for (Socket s : slow) {
          s.close();
        }
      }
    }
  }

  @Test
  void wrongMethod_405WithAllow_headWhereGetIs() throws Exception {
    try (SluiceServer server =
        SluiceServer.start(Main.withEnv(ConfigLoader.parse(POLICY), LOCAL))) {
      int port = server.adminPort();
      for (String method : List.of("POST", "PUT", "DELETE", "PATCH")) {
        for (String path : List.of("/healthz", "/readyz", "/metrics", "/config", "/")) {
          HttpResponse<String> r = send(port, method, path);
          assertThat(r.statusCode()).as(method + " " + path).isEqualTo(405);
          assertThat(r.headers().firstValue("Allow")).hasValue("GET, HEAD");
        }
      }
      HttpResponse<String> head = send(port, "HEAD", "/metrics");
      assertThat(head.statusCode()).isEqualTo(200);
      assertThat(head.body()).isEmpty();
      assertThat(head.headers().firstValueAsLong("Content-Length").orElse(0)).isPositive();
      assertThat(send(port, "HEAD", "/healthz").statusCode()).isEqualTo(200);
      // the state-changing route answers POST only
      HttpResponse<String> json = send(port, "GET", "/json");
      assertThat(json.statusCode()).isEqualTo(405);
      assertThat(json.headers().firstValue("Allow")).hasValue("POST");
      assertThat(send(port, "GET", "/nope").statusCode()).isEqualTo(404);
    }
  }
}
