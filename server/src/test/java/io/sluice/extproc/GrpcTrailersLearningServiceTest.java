package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpTrailers;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import java.time.Duration;
import java.util.Map;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * A gRPC upstream's failure in the response trailers (after its 200 and a message) teaches an
 * adaptive pool what the same failure trailers-only teaches it (AdaptivePoolServiceTest's 429 with
 * a Retry-After): {@code grpc-status: 8} with {@code grpc-retry-pushback-ms: 20000} is the 429
 * Envoy maps it to, so the limit settles at what the upstream took (its floor: nothing else was in
 * flight) and the pool pauses for the pushback; the next request is refused {@code
 * upstream_overloaded} at once. The answer ends as that failure, not as the 200 its headers said.
 */
class GrpcTrailersLearningServiceTest extends ExtProcServerTestBase {
  @Override
  protected String policy() {
    return """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
        pools:
          gpu:
            capacity: 100000
            maxRequests: 8
            adaptive: {enabled: true, minRequests: 2, minCapacity: 20000, maxPause: 60s}
        classes: {interactive: {reservedShare: 1.0, defaultOutputTokens: 100, maxOutputTokens: 1000}}
        routes:
          - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
        """;
  }

  private static ProcessingRequest trailers(String... namesAndValues) {
    HeaderMap.Builder m = HeaderMap.newBuilder();
    for (int i = 0; i + 1 < namesAndValues.length; i += 2) {
      m.addHeaders(
          HeaderValue.newBuilder()
              .setKey(namesAndValues[i])
              .setRawValue(ByteString.copyFromUtf8(namesAndValues[i + 1])));
    }
    return ProcessingRequest.newBuilder()
        .setResponseTrailers(HttpTrailers.newBuilder().setTrailers(m))
        .build();
  }

  private String admin(String path) throws Exception {
    return ExtProcTestClient.adminGet(server.adminPort(), path);
  }

  private static String compact(String json) {
    return json.replace(" : ", ":").replace(", ", ",");
  }

  @Test
  void resourceExhaustedInTrailers_pausesThePoolAndShrinksItsLimit_asTrailersOnlyDoes()
      throws Exception {
    Awaitility.await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> compact(admin("/debug/queues")).contains("\"cause\":\"start\""));
    ExtProcTestClient.Call call = client.open(Map.of());
    call.send(
        headers(
            chat("content-type", "application/grpc"),
            false,
            BodySendMode.BUFFERED,
            BodySendMode.STREAMED));
    ProcessingResponse admitted =
        call.send(body("{\"model\":\"m\",\"max_tokens\":10,\"messages\":[]}"));
    assertThat(admitted.hasRequestBody()).as("admitted").isTrue();
    assertThat(call.send(responseHeaders(200, "application/grpc", false)).hasResponseHeaders())
        .isTrue();
    assertThat(call.send(responseBody("\0\0\0\0\0", false)).hasResponseBody()).isTrue();
    ProcessingResponse t =
        call.send(trailers("grpc-status", "8", "grpc-retry-pushback-ms", "20000"));
    assertThat(t.hasResponseTrailers()).isTrue();
    call.reset();

    ExtProcTestClient.Call next = client.open(Map.of());
    ProcessingResponse r =
        next.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    if (!r.hasImmediateResponse()) {
      r = next.send(body("{\"model\":\"gpt-4o\",\"messages\":[]}"));
    }
    assertThat(r.hasImmediateResponse()).as("paused: refused at once").isTrue();
    assertThat(header(r, "x-sluice-reason")).isEqualTo("upstream_overloaded");
    assertThat(Long.parseLong(header(r, "retry-after"))).isGreaterThanOrEqualTo(19);
    next.reset();

    assertThat(compact(admin("/debug/queues"))).contains("\"requests\":2");
    assertThat(admin("/metrics"))
        .contains("sluice_pool_capacity_effective{dimension=\"requests\",pool=\"gpu\"} 2.0")
        .contains("sluice_pool_adaptive_answers_total{pool=\"gpu\",source=\"upstream\"} 1.0")
        .containsPattern("sluice_answers_total\\{[^}]*result=\"failed\"[^}]*} 1.0");
  }
}
