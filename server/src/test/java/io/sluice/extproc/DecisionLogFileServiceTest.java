package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.micrometer.core.instrument.FunctionCounter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code decisionLog.file} through the server: a file that cannot be written (its directory is a
 * regular file) costs records, counted in {@code sluice_decision_log_file_failures_total}, and
 * never a request: it is admitted, answered and its permit released as without the file.
 */
class DecisionLogFileServiceTest extends ExtProcServerTestBase {
  @TempDir Path dir;

  @Override
  protected String policy() {
    Path blocker = dir.resolve("blocker");
    try {
      Files.writeString(blocker, "a file where the log's directory should be");
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
        pools: {gpu: {capacity: 100000}}
        classes: {interactive: {reservedShare: 1.0, defaultOutputTokens: 100, maxOutputTokens: 1000}}
        routes:
          - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
        decisionLog: {enabled: true, level: trace, maxAdmittedPerSecond: 0, maxRefusedPerSecond: 0,
                      file: {path: '%s', maxBytes: 1MiB, maxAge: 1h, maxFiles: 2}}
        """
        .formatted(blocker.resolve("decisions.jsonl"));
  }

  private double failures() {
    FunctionCounter c =
        server.registry().find("sluice.decision_log.file_failures").functionCounter();
    return c == null ? -1 : c.count();
  }

  private int inFlight() {
    return server
        .runtime()
        .controller()
        .pool("gpu")
        .snapshot(server.runtime().ticker().nanos())
        .requestsInFlight();
  }

  @Test
  void aFileThatCannotBeWritten_countsEachLostRecord_andEveryRequestStillCompletes()
      throws Exception {
    assertThat(failures()).isZero();
    for (int i = 1; i <= 3; i++) {
      ExtProcTestClient.Call call = client.open(Map.of());
      call.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
      assertThat(
              call.send(
                      body(
                          "{\"model\":\"m\",\"max_tokens\":50,"
                              + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
                  .hasRequestBody())
          .as("admitted though its record cannot be written")
          .isTrue();
      assertThat(call.send(responseHeaders(200, "text/event-stream", false)).hasResponseHeaders())
          .isTrue();
      assertThat(call.send(responseBody("data: [DONE]\n\n", true)).hasResponseBody()).isTrue();
      call.reset();
      int n = i;
      await().atMost(Duration.ofSeconds(5)).until(() -> failures() == n && inFlight() == 0);
    }
    assertThat(
            ExtProcTestClient.adminGet(server.adminPort(), "/metrics")
                .lines()
                .filter(l -> l.startsWith("sluice_decision_log_file_failures_total"))
                .findFirst())
        .hasValueSatisfying(l -> assertThat(l).endsWith(" 3.0"));
  }
}
