package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.sluice.core.time.FakeTicker;
import io.sluice.core.time.Ticker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Late requests on the wire (in-memory store, the server's own fake ticker): a Responses request of
 * a class with {@code intake.whenLate: accept} held in the pool's queue past its wait is answered,
 * instead of {@code 503 queue_timeout}, with an ImmediateResponse carrying the queued object
 * (decision {@code answer}, reason {@code accepted}); its status route then reads it from the
 * store.
 */
class LateIntakeServiceTest extends ExtProcServerTestBase {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}, warmup: {enabled: false}}
      estimation: {learnedReserve: {enabled: false}}
      pools:
        gpu: {capacity: 1000, maxMessageTimeout: 3s, holdMargin: 200ms, defaultServiceTime: 1s,
              retryAfter: {min: 1s, max: 30s, jitter: 0.0}}
      classes:
        batch: {rank: 0, reservedShare: 1.0, maxQueueWait: 1s, deadline: 30s, queue: {tenantShare: 1.0},
                defaultOutputTokens: 100, maxOutputTokens: 1000}
      signals:
        tenant: [{metadata: x-sluice-tenant}]
      routes:
        - {name: responses, match: {pathPrefix: /v1/responses}, class: batch, format: openai-responses}
      intake: {enabled: true, whenLate: {batch: accept}}
      """;

  private final FakeTicker ticker = new FakeTicker();

  @Override
  protected String policy() {
    return CONFIG;
  }

  @Override
  protected Ticker ticker() {
    return ticker;
  }

  private static Map<String, String> req(String method, String path) {
    Map<String, String> h = chat();
    h.put(":method", method);
    h.put(":path", path);
    return h;
  }

  private static String responses(int maxTokens) {
    return "{\"model\":\"m1\",\"input\":\"summarise\",\"max_output_tokens\":" + maxTokens + "}";
  }

  private ExtProcTestClient.Call open(String path) throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of("x-sluice-tenant", "acme"));
    c.sendOnly(headers(req("POST", path), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ProcessingResponse h = c.responses.poll(30, TimeUnit.SECONDS); // a cold server on a busy box
    assertThat(h).as("the request headers answered").isNotNull();
    assertThat(h.hasRequestHeaders()).isTrue();
    return c;
  }

  @Test
  void heldPastItsWait_answeredQueued_insteadOfQueueTimeout() throws Exception {
    ExtProcTestClient.Call first = open("/v1/responses");
    assertThat(first.send(body(responses(990))).hasRequestBody()).isTrue(); // the whole pool
    ExtProcTestClient.Call second = open("/v1/responses");
    ProcessingResponse hold = second.send(body(responses(500)));
    assertThat(hold.hasOverrideMessageTimeout()).as(hold.toString()).isTrue();
    long holdMs =
        hold.getOverrideMessageTimeout().getSeconds() * 1000
            + hold.getOverrideMessageTimeout().getNanos() / 1_000_000;

    ticker.advance(Duration.ofMillis(holdMs - 1)); // past its wait, before Envoy's hold ends
    ExtProcTestClient.Call third = open("/v1/responses"); // a decision expires what is due
    third.send(body(responses(500)));
    ProcessingResponse r = second.responses.poll(5, TimeUnit.SECONDS);

    assertThat(r).as("answered by the end of the hold").isNotNull();
    ImmediateResponse ir = r.getImmediateResponse();
    assertThat(ir.getStatus().getCodeValue()).isEqualTo(200);
    assertThat(headersOf(ir))
        .containsEntry("x-sluice-reason", "accepted")
        .containsKeys("x-sluice-position", "x-sluice-start-after", "x-sluice-start-before");
    JsonNode queued = JSON.readTree(ir.getBody().toString(StandardCharsets.UTF_8));
    assertThat(queued.get("status").asText()).isEqualTo("queued");
    assertThat(queued.get("model").asText()).isEqualTo("m1");
    String id = queued.get("id").asText();
    var md = r.getDynamicMetadata().getFieldsOrThrow("sluice").getStructValue();
    assertThat(md.getFieldsOrThrow("decision").getStringValue()).isEqualTo("answer");
    assertThat(md.getFieldsOrThrow("reason").getStringValue()).isEqualTo("accepted");

    ExtProcTestClient.Call read = client.open(Map.of("x-sluice-tenant", "acme"));
    ImmediateResponse status =
        read.send(headers(req("GET", "/v1/responses/" + id), true, null, null))
            .getImmediateResponse();
    assertThat(status.getStatus().getCodeValue()).isEqualTo(200);
    assertThat(
            JSON.readTree(status.getBody().toString(StandardCharsets.UTF_8)).get("status").asText())
        .isEqualTo("queued");
    first.reset();
    third.reset();
  }
}
