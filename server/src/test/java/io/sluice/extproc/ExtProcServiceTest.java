package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.Status;
import io.sluice.core.admission.PoolState;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The ext_proc adapter over a real Netty gRPC server on a random port. */
class ExtProcServiceTest extends ExtProcServerTestBase {
  private static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      # the reserve is the client's cap (the old rule): these tests size requests by it
      estimation: {learnedReserve: {enabled: false}}
      limits: {maxBodyBytes: 4KiB}
      pools:
        gpu: {capacity: 1000, retryAfter: {min: 2s, max: 30s}}
      classes:
        interactive: {rank: 0, reservedShare: 0.6, borrow: true, defaultOutputTokens: 100, maxOutputTokens: 400}
        batch: {rank: 1, reservedShare: 0.2, borrow: false, defaultOutputTokens: 100, maxOutputTokens: 400}
      tiers:
        free: {weight: 1, maxInFlight: 2}
      tenants: {anonymousTier: free, unknown: admit, unknownTier: free, known: {acme: {tier: free}}}
      signals:
        tenant: [{metadata: x-sluice-tenant}, {header: x-tenant-id}]
        class: [{metadata: x-sluice-class}]
        pool: [{metadata: x-sluice-pool}]
        route: [{metadata: x-sluice-route}]
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
        - {name: batch, match: {route: offline}, class: batch, format: openai-chat}
      unmatched: {action: reject}
      responses: {decisionHeader: true, estimateHeader: true}
      """;

  @Override
  protected String policy() {
    return CONFIG;
  }

  private static String chatBody(int maxTokens) {
    return "{\"model\":\"gpt-4o\",\"max_tokens\":"
        + maxTokens
        + ",\"messages\":[{\"role\":\"user\",\"content\":\"hello world\"}]}";
  }

  private PoolState.Snapshot pool() {
    return server.runtime().controller().pool("gpu").snapshot(server.runtime().ticker().nanos());
  }

  @Test
  void bufferedRequest_admittedThenReleasedAtEndOfStreamedResponse() throws Exception {
    ExtProcTestClient.Call call = client.open(Map.of("x-sluice-tenant", "acme"));
    ProcessingResponse h =
        call.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(h.hasRequestHeaders()).isTrue();
    ProcessingResponse b = call.send(body(chatBody(50)));
    assertThat(b.hasRequestBody()).isTrue();
    var setHeaders = b.getRequestBody().getResponse().getHeaderMutation().getSetHeadersList();
    assertThat(setHeaders)
        .extracting(o -> o.getHeader().getKey())
        .contains("x-sluice-decision", "x-sluice-estimate");
    var md = b.getDynamicMetadata().getFieldsOrThrow("sluice").getStructValue();
    assertThat(md.getFieldsOrThrow("tenant").getStringValue()).isEqualTo("acme");
    assertThat(md.getFieldsOrThrow("class").getStringValue()).isEqualTo("interactive");
    assertThat(md.getFieldsOrThrow("pool").getStringValue()).isEqualTo("gpu");
    assertThat(md.getFieldsOrThrow("decision").getStringValue()).isEqualTo("admit");
    assertThat(md.getFieldsOrThrow("est_output_tokens").getNumberValue()).isEqualTo(50);
    assertThat(pool().requestsInFlight()).isEqualTo(1);

    assertThat(call.send(responseHeaders(200, "text/event-stream", false)).hasResponseHeaders())
        .isTrue();
    assertThat(call.send(responseBody("data: {\"choices\":[]}\n\n", false)).hasResponseBody())
        .isTrue();
    assertThat(pool().requestsInFlight()).isEqualTo(1);
    assertThat(call.send(responseBody("data: [DONE]\n\n", true)).hasResponseBody()).isTrue();
    assertThat(pool().requestsInFlight()).isZero();
    call.reset();
    assertThat(call.awaitClose().getCode()).isEqualTo(Status.Code.CANCELLED);
    assertThat(pool().workInFlight()).isZero();
  }

  @Test
  void cancelMidResponse_releasesPermitOnce() throws Exception {
    ExtProcTestClient.Call call = client.open(Map.of());
    call.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    call.send(body(chatBody(10)));
    call.send(responseHeaders(200, "text/event-stream", false));
    call.send(responseBody("data: {}\n\n", false));
    assertThat(pool().requestsInFlight()).isEqualTo(1);
    call.reset();
    await().atMost(Duration.ofSeconds(5)).until(() -> pool().requestsInFlight() == 0);
    assertThat(pool().workInFlight()).isZero();
    assertThat(
            server
                .registry()
                .find("sluice.permits.released")
                .tag("outcome", "cancelled")
                .counter()
                .count())
        .isEqualTo(1.0);
  }

  @Test
  void poolFull_rejects503WithRetryAfterReasonAndJsonBody() throws Exception {
    // each request: ~10 input + 400 output; interactive may borrow up to 1000 - 200 (batch's
    // guarantee)
    ExtProcTestClient.Call a = client.open(Map.of("x-sluice-tenant", "t1"));
    a.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(a.send(body(chatBody(400))).hasRequestBody()).isTrue();
    ExtProcTestClient.Call b = client.open(Map.of("x-sluice-tenant", "t2"));
    b.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ProcessingResponse r = b.send(body(chatBody(400)));
    assertThat(r.hasImmediateResponse()).isTrue();
    ImmediateResponse ir = r.getImmediateResponse();
    assertThat(ir.getStatus().getCodeValue()).isEqualTo(503);
    Map<String, String> h = headersOf(ir);
    assertThat(h).containsEntry("x-sluice-reason", "pool_saturated");
    assertThat(h).containsEntry("content-type", "application/json");
    assertThat(Long.parseLong(h.get("retry-after"))).isBetween(2L, 30L);
    JsonNode json = new ObjectMapper().readTree(ir.getBody().toByteArray());
    assertThat(json.at("/error/type").asText()).isEqualTo("overloaded");
    assertThat(json.at("/error/code").asText()).isEqualTo("pool_saturated");
    assertThat(json.at("/error/retry_after_seconds").asLong())
        .isEqualTo(Long.parseLong(h.get("retry-after")));
    assertThat(
            r.getDynamicMetadata()
                .getFieldsOrThrow("sluice")
                .getStructValue()
                .getFieldsOrThrow("reason")
                .getStringValue())
        .isEqualTo("pool_saturated");
    a.reset();
    b.reset();
  }

  @Test
  void tenantAtCap_rejects429TenantConcurrency() throws Exception {
    for (int i = 0; i < 2; i++) {
      ExtProcTestClient.Call c = client.open(Map.of("x-sluice-tenant", "acme"));
      c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
      assertThat(c.send(body(chatBody(1))).hasRequestBody()).isTrue();
    }
    ExtProcTestClient.Call c = client.open(Map.of("x-sluice-tenant", "acme"));
    c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ImmediateResponse ir = c.send(body(chatBody(1))).getImmediateResponse();
    assertThat(ir.getStatus().getCodeValue()).isEqualTo(429);
    assertThat(headersOf(ir))
        .containsEntry("x-sluice-reason", "tenant_concurrency")
        .containsKey("retry-after");
    assertThat(new ObjectMapper().readTree(ir.getBody().toByteArray()).at("/error/type").asText())
        .isEqualTo("rate_limited");
  }

  @Test
  void clientClaimedPriorityHeader_isIgnored_trustedMetadataIsUsed() throws Exception {
    // a client header claiming the batch route or class changes nothing
    ExtProcTestClient.Call c = client.open(Map.of());
    c.send(
        headers(
            chat("x-sluice-class", "batch", "x-sluice-route", "offline", "priority", "high"),
            false,
            BodySendMode.BUFFERED,
            BodySendMode.STREAMED));
    ProcessingResponse r = c.send(body(chatBody(1)));
    assertThat(
            r.getDynamicMetadata()
                .getFieldsOrThrow("sluice")
                .getStructValue()
                .getFieldsOrThrow("class")
                .getStringValue())
        .isEqualTo("interactive");
    // trusted per-route metadata does route it
    ExtProcTestClient.Call t = client.open(Map.of("x-sluice-route", "offline"));
    Map<String, String> h = chat();
    h.put(":path", "/internal/offline");
    t.send(headers(h, false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ProcessingResponse r2 = t.send(body(chatBody(1)));
    assertThat(
            r2.getDynamicMetadata()
                .getFieldsOrThrow("sluice")
                .getStructValue()
                .getFieldsOrThrow("class")
                .getStringValue())
        .isEqualTo("batch");
  }

  @Test
  void unknownRoute_rejectedAtHeadersWhenConfigured() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    Map<String, String> h = chat();
    h.put(":path", "/v2/other");
    ProcessingResponse r = c.send(headers(h, false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(404);
    assertThat(headersOf(r.getImmediateResponse()))
        .containsEntry("x-sluice-reason", "unknown_route");
  }

  /**
   * A gRPC request through Envoy (content-type application/grpc): the refusal carries grpc_status
   * (Envoy would otherwise map 404 to UNIMPLEMENTED and 429 to UNAVAILABLE itself) and no
   * content-type (Envoy's trailers-only reply is application/grpc); plain HTTP gets neither.
   */
  @Test
  void grpcRequestThroughEnvoy_refusalCarriesGrpcStatus_httpRequestDoesNot() throws Exception {
    Map<String, String> grpc = chat();
    grpc.put(":path", "/v2/other");
    grpc.put("content-type", "application/grpc+proto");
    ImmediateResponse g =
        client
            .open(Map.of())
            .send(headers(grpc, false, BodySendMode.BUFFERED, BodySendMode.STREAMED))
            .getImmediateResponse();
    assertThat(g.hasGrpcStatus()).isTrue();
    assertThat(g.getGrpcStatus().getStatus()).isEqualTo(io.grpc.Status.Code.UNIMPLEMENTED.value());
    assertThat(headersOf(g))
        .containsEntry("x-sluice-reason", "unknown_route")
        .doesNotContainKey("content-type");

    Map<String, String> http = chat();
    http.put(":path", "/v2/other");
    ImmediateResponse p =
        client
            .open(Map.of())
            .send(headers(http, false, BodySendMode.BUFFERED, BodySendMode.STREAMED))
            .getImmediateResponse();
    assertThat(p.hasGrpcStatus()).isFalse();
    assertThat(headersOf(p)).containsEntry("content-type", "application/json");
  }

  @Test
  void bodyOverLimit_rejected413_atHeadersByContentLengthOrAtBody() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    ProcessingResponse r =
        c.send(
            headers(
                chat("content-length", "999999"),
                false,
                BodySendMode.BUFFERED,
                BodySendMode.STREAMED));
    assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(413);
    assertThat(headersOf(r.getImmediateResponse()))
        .containsEntry("x-sluice-reason", "body_too_large");

    ExtProcTestClient.Call d = client.open(Map.of());
    d.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ProcessingResponse r2 = d.send(body("x".repeat(5000)));
    assertThat(r2.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(413);
    assertThat(pool().requestsInFlight()).isZero();
  }

  @Test
  void headersOnlyRequest_decidedAtHeaders_heldForItsPredictedTailWhenBodyModeNone()
      throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    ProcessingResponse r =
        c.send(headers(chat("content-length", "400"), false, BodySendMode.NONE, BodySendMode.NONE));
    assertThat(r.hasRequestHeaders()).isTrue();
    assertThat(
            r.getDynamicMetadata()
                .getFieldsOrThrow("sluice")
                .getStructValue()
                .getFieldsOrThrow("decision")
                .getStringValue())
        .isEqualTo("admit");
    assertThat(pool().requestsInFlight()).isEqualTo(1);
    c.send(responseHeaders(200, "application/json", false));
    // the answer's end will not be seen (Envoy 1.37+ closes the stream here): the permit is held
    // for the pool's predicted service time (its defaultServiceTime, 2 s: nothing measured yet)
    assertThat(pool().requestsInFlight()).isEqualTo(1);
    assertThat(server.runtime().controller().pool("gpu").tailsHeld()).isEqualTo(1);
    c.reset();
    assertThat(pool().requestsInFlight()).isEqualTo(1);
    await().atMost(Duration.ofSeconds(10)).until(() -> pool().requestsInFlight() == 0);
    assertThat(server.runtime().controller().pool("gpu").tailsHeld()).isZero();
  }

  @Test
  void outOfPhaseMessage_endsStreamNonOk_andReleases() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    c.sendOnly(responseBody("x", true));
    Status s = c.awaitClose();
    assertThat(s.isOk()).isFalse();
    assertThat(s.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
  }

  @Test
  void localReplyOfAnEarlierFilter_firstMessageResponseHeaders_isContinuedAndCounted()
      throws Exception {
    // jwt_authn answered 401 before the request reached ext_proc: Envoy opens the stream at the
    // response; ending it out of phase would turn the 401 into a 500
    ExtProcTestClient.Call c = client.open(Map.of());
    assertThat(c.send(responseHeaders(401, "application/json", false)).hasResponseHeaders())
        .isTrue();
    assertThat(c.send(responseBody("{\"error\":\"unauthorized\"}", true)).hasResponseBody())
        .isTrue();
    c.halfClose();
    assertThat(c.awaitClose().isOk()).isTrue();
    assertThat(
            server
                .registry()
                .find("sluice.extproc.local.replies")
                .tag("status", "4xx")
                .counter()
                .count())
        .isEqualTo(1.0);
    assertThat(server.registry().find("sluice.extproc.streams.undecided").counters()).isEmpty();
    assertThat(server.registry().find("sluice.extproc.stream.errors").counters())
        .allSatisfy(e -> assertThat(e.count()).isZero()); // seeded at zero, none counted
    assertThat(pool().requestsInFlight()).isZero();
  }

  @Test
  void localReply_thenRequestHeaders_isOutOfPhase() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    c.send(responseHeaders(429, "application/json", true));
    c.sendOnly(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(c.awaitClose().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(pool().requestsInFlight()).isZero();
  }

  @Test
  void emptyMessage_endsStreamNonOk() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    c.sendOnly(ProcessingRequest.getDefaultInstance());
    assertThat(c.awaitClose().isOk()).isFalse();
  }

  @Test
  void secondRequestHeadersOnSameStream_isProtocolError_andReleasesPermit() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    c.send(body(chatBody(1)));
    assertThat(pool().requestsInFlight()).isEqualTo(1);
    c.sendOnly(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(c.awaitClose().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    await().atMost(Duration.ofSeconds(5)).until(() -> pool().requestsInFlight() == 0);
  }

  @Test
  void gracefulHalfClose_isAnsweredOk_afterEverythingWasAnswered() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.NONE));
    c.send(body(chatBody(1)));
    c.send(responseHeaders(200, "application/json", false));
    c.halfClose();
    assertThat(c.awaitClose().isOk()).isTrue();
    // body mode NONE: the permit outlives the stream by its predicted tail
    await().atMost(Duration.ofSeconds(10)).until(() -> pool().requestsInFlight() == 0);
  }

  @Test
  void draining_refusesNewStreamsWithUnavailable() throws Exception {
    server.shutdown(Duration.ZERO);
    ExtProcTestClient.Call c = client.open(Map.of());
    c.sendOnly(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(c.awaitClose().isOk()).isFalse();
  }
}
