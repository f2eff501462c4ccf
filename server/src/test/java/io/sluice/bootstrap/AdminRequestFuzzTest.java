package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.sluice.config.ConfigLoader;
import io.sluice.core.time.Ticker;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Coverage-guided: raw bytes as HTTP/1.1 on the admin port of a running server (every production
 * route: {@code /}, the probes, {@code /metrics}, {@code /config}, {@code /debug/*}, the rate limit
 * service's {@code /healthcheck}, {@code /rlconfig} and {@code POST /json} with descriptors
 * loaded), on one connection per input: request lines, methods, paths, query strings, headers,
 * chunked and sized bodies, pipelined requests, garbage.
 *
 * <p>Checked after every input: every answer is a parseable HTTP/1.1 response whose status is 2xx,
 * 3xx or 4xx, never 5xx (a route that threw, a query string that did not decode); every request the
 * server took is answered within the routes' 5 s bound (none left in flight: no hang); and the port
 * still answers {@code GET /healthz} 200 on a new connection. Seeds: {@code
 * AdminRequestFuzzTestInputs/adminRequests/}.
 */
class AdminRequestFuzzTest {
  private static Path root;
  private static SluiceServer server;

  @BeforeAll
  static void start() throws IOException {
    root = Files.createTempDirectory("sluice-admin-fuzz");
    Files.createDirectories(root.resolve("config"));
    Files.writeString(
        root.resolve("config/ratelimit.yaml"),
        """
        domain: sluice
        descriptors:
          - key: tenant
            rate_limit: {unit: minute, requests_per_unit: 1000000}
        """);
    String yaml =
        """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}, warmup: {enabled: false}}
        pools: {gpu: {capacity: 100}}
        classes: {interactive: {reservedShare: 1.0}}
        rateLimit:
          env: {RUNTIME_ROOT: %s, RUNTIME_WATCH_ROOT: "false"}
        """
            .formatted(root);
    server =
        SluiceServer.start(
            ConfigLoader.parse(yaml),
            new SluiceServer.Options(null, Map.of(), Ticker.system(), Clock.systemUTC()));
  }

  @AfterAll
  static void stop() throws IOException {
    server.close();
    try (var files = Files.walk(root)) {
      files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }

  @FuzzTest(maxDuration = "5m")
  void adminRequests(byte[] input) throws Exception {
    AdminHttpServer admin = server.admin();
    List<Integer> statuses = new ArrayList<>();
    byte[] answers;
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", server.adminPort()), 5_000);
      s.setSoTimeout(20);
      OutputStream out = s.getOutputStream();
      InputStream in = s.getInputStream();
      ByteArrayOutputStream got = new ByteArrayOutputStream();
      try {
        out.write(input);
        out.flush();
      } catch (IOException e) {
        // the server closed the connection (a bad request, then close): what it said is read below
      }
      // every request the server took is answered within the routes' bound (5 s) plus slack
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(8);
      boolean eof = false;
      int quietReads = 0;
      while (!eof) {
        try {
          int n = in.read();
          if (n < 0) {
            eof = true;
          } else {
            got.write(n);
            byte[] more = new byte[Math.max(0, Math.min(in.available(), 1 << 16))];
            int m = in.read(more);
            if (m > 0) {
              got.write(more, 0, m);
            }
            quietReads = 0;
          }
        } catch (SocketTimeoutException e) {
          quietReads++;
        } catch (IOException e) {
          eof = true; // reset by the server
        }
        if (admin.inFlight() == 0 && quietReads >= 3) {
          break; // nothing in flight and nothing more arrived for 60 ms
        }
        assertThat(System.nanoTime() - deadline < 0)
            .as(
                "every request the admin port took is answered within 8 s (in flight: %d); input:"
                    + " %s",
                admin.inFlight(), printable(input))
            .isTrue();
      }
      answers = got.toByteArray();
    }
    parse(answers, statuses, input);
    for (int status : statuses) {
      assertThat(status)
          .as("status of an answer to %s%nanswers:%n%s", printable(input), printable(answers))
          .isBetween(200, 499);
    }
    assertThat(healthz()).as("GET /healthz after the input").isEqualTo(200);
  }

  private static int healthz() throws Exception {
    return java.net.http.HttpClient.newHttpClient()
        .send(
            java.net.http.HttpRequest.newBuilder(
                    java.net.URI.create("http://127.0.0.1:" + server.adminPort() + "/healthz"))
                .timeout(java.time.Duration.ofSeconds(5))
                .build(),
            java.net.http.HttpResponse.BodyHandlers.discarding())
        .statusCode();
  }

  /**
   * The responses in {@code bytes}: status line, headers, then {@code Content-Length} bytes of body
   * (none when the next response starts right after the head: the answer to a HEAD).
   */
  static void parse(byte[] bytes, List<Integer> statuses, byte[] input) {
    String all = new String(bytes, StandardCharsets.ISO_8859_1);
    int at = 0;
    while (at < all.length()) {
      assertThat(all.startsWith("HTTP/1.1 ", at))
          .as(
              "an answer starts with a status line at %d:%n%s%ninput: %s",
              at, all, printable(input))
          .isTrue();
      int headEnd = all.indexOf("\r\n\r\n", at);
      assertThat(headEnd).as("a whole head:%n%s", all).isPositive();
      statuses.add(Integer.parseInt(all.substring(at + 9, at + 12)));
      long length = 0;
      for (String line : all.substring(at, headEnd).split("\r\n")) {
        int colon = line.indexOf(':');
        if (colon > 0 && line.substring(0, colon).trim().equalsIgnoreCase("content-length")) {
          length = Long.parseLong(line.substring(colon + 1).trim());
        }
      }
      at = headEnd + 4;
      if (!all.startsWith("HTTP/1.1 ", at)) {
        at = (int) Math.min(all.length(), at + length);
      }
    }
  }

  private static String printable(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < Math.min(b.length, 2_000); i++) {
      int c = b[i] & 0xff;
      if (c == '\r') {
        sb.append("\\r");
      } else if (c == '\n') {
        sb.append("\\n\n");
      } else if (c < 0x20 || c >= 0x7f) {
        sb.append(String.format(java.util.Locale.ROOT, "\\x%02x", c));
      } else {
        sb.append((char) c);
      }
    }
    return sb.toString();
  }
}
