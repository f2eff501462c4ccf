package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Background intake on the wire (in-memory store): a Responses request with {@code background:
 * true} is answered with an ImmediateResponse carrying the queued object; its status and cancel
 * routes are answered the same way; the metadata says decision {@code answer}.
 */
class IntakeServiceTest extends ExtProcServerTestBase {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}, warmup: {enabled: false}}
      pools: {gpu: {capacity: 1000000}}
      classes:
        interactive: {rank: 0, reservedShare: 0.8, defaultOutputTokens: 10, maxOutputTokens: 100}
        batch: {rank: 1, borrow: true, defaultOutputTokens: 10, maxOutputTokens: 100}
      signals: {tenant: [{header: x-tenant-id}]}
      routes:
        - {name: responses, match: {pathPrefix: /v1/responses}, class: batch, format: openai-responses}
      intake: {enabled: true, classes: [batch]}
      """;

  @Override
  protected String policy() {
    return CONFIG;
  }

  private static Map<String, String> req(String method, String path, String tenant) {
    Map<String, String> h = chat("x-tenant-id", tenant);
    h.put(":method", method);
    h.put(":path", path);
    return h;
  }

  private ProcessingResponse post(String tenant, String json) throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    ProcessingResponse h =
        c.send(
            headers(
                req("POST", "/v1/responses", tenant),
                false,
                BodySendMode.BUFFERED,
                BodySendMode.STREAMED));
    assertThat(h.hasRequestHeaders()).isTrue();
    return c.send(body(json));
  }

  private ProcessingResponse headersOnly(String method, String path, String tenant)
      throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    return c.send(headers(req(method, path, tenant), true, null, null));
  }

  private static JsonNode json(ImmediateResponse ir) throws Exception {
    return JSON.readTree(ir.getBody().toString(StandardCharsets.UTF_8));
  }

  @Test
  void backgroundResponse_answeredQueued_thenReadAndCancelled_byItsTenantOnly() throws Exception {
    ProcessingResponse r =
        post("acme", "{\"model\":\"m1\",\"input\":\"write a report\",\"background\":true}");
    assertThat(r.hasImmediateResponse()).isTrue();
    ImmediateResponse ir = r.getImmediateResponse();
    assertThat(ir.getStatus().getCodeValue()).isEqualTo(200);
    Map<String, String> h = headersOf(ir);
    assertThat(h)
        .containsEntry("content-type", "application/json")
        .containsEntry("x-sluice-reason", "accepted")
        .containsEntry("x-sluice-position", "0")
        .containsKeys("x-sluice-start-after", "x-sluice-start-before");
    JsonNode queued = json(ir);
    assertThat(queued.get("object").asText()).isEqualTo("response");
    assertThat(queued.get("status").asText()).isEqualTo("queued");
    String id = queued.get("id").asText();
    var md = r.getDynamicMetadata().getFieldsOrThrow("sluice").getStructValue();
    assertThat(md.getFieldsOrThrow("decision").getStringValue()).isEqualTo("answer");
    assertThat(md.getFieldsOrThrow("reason").getStringValue()).isEqualTo("accepted");

    ImmediateResponse read =
        headersOnly("GET", "/v1/responses/" + id, "acme").getImmediateResponse();
    assertThat(read.getStatus().getCodeValue()).isEqualTo(200);
    assertThat(json(read).get("status").asText()).isEqualTo("queued");
    assertThat(headersOf(read)).containsEntry("x-sluice-reason", "operation_status");

    ImmediateResponse other =
        headersOnly("GET", "/v1/responses/" + id, "globex").getImmediateResponse();
    assertThat(other.getStatus().getCodeValue()).isEqualTo(404);
    assertThat(headersOf(other)).containsEntry("x-sluice-reason", "unknown_operation");
    assertThat(other.getBody().toString(StandardCharsets.UTF_8)).doesNotContain(id);

    ImmediateResponse bad =
        headersOnly("GET", "/v1/responses/resp_nope", "acme").getImmediateResponse();
    assertThat(bad.getStatus().getCodeValue()).isEqualTo(400);
    assertThat(headersOf(bad)).containsEntry("x-sluice-reason", "invalid_request");

    ImmediateResponse cancel =
        headersOnly("POST", "/v1/responses/" + id + "/cancel", "acme").getImmediateResponse();
    assertThat(cancel.getStatus().getCodeValue()).isEqualTo(200);
    assertThat(json(cancel).get("status").asText()).isEqualTo("cancelled");
  }

  @Test
  void notBackground_runsAsUsual() throws Exception {
    ProcessingResponse r = post("acme", "{\"model\":\"m1\",\"input\":\"hi\"}");
    assertThat(r.hasRequestBody()).isTrue();
    assertThat(r.hasImmediateResponse()).isFalse();
  }
}
