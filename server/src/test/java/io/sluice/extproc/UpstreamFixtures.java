package io.sluice.extproc;

import static io.sluice.extproc.ExtProcServerTestBase.chat;
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

/**
 * What the service tests of an upstream's answers share: the adaptive pool's policy, the upstream's
 * header maps and trailers, an admitted gRPC call its upstream answered 200 and one message, and
 * the wait for an adaptive limit's start.
 */
final class UpstreamFixtures {
  private UpstreamFixtures() {}

  /** An adaptive pool of 8 requests (floor 2) and one chat route. */
  static final String ADAPTIVE_POOL =
      """
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

  /** A header map of name/value pairs. */
  static HeaderMap.Builder headerMap(String... namesAndValues) {
    HeaderMap.Builder m = HeaderMap.newBuilder();
    for (int i = 0; i + 1 < namesAndValues.length; i += 2) {
      m.addHeaders(
          HeaderValue.newBuilder()
              .setKey(namesAndValues[i])
              .setRawValue(ByteString.copyFromUtf8(namesAndValues[i + 1])));
    }
    return m;
  }

  /** The upstream's response trailers, name/value pairs. */
  static ProcessingRequest trailers(String... namesAndValues) {
    return ProcessingRequest.newBuilder()
        .setResponseTrailers(HttpTrailers.newBuilder().setTrailers(headerMap(namesAndValues)))
        .build();
  }

  /** An admin page's JSON without the pretty printer's spaces. */
  static String compact(String json) {
    return json.replace(" : ", ":").replace(", ", ",");
  }

  /** Waits until the pool's adaptive limit has started (its cause {@code start}). */
  static void awaitAdaptiveStart(int adminPort) {
    Awaitility.await()
        .atMost(Duration.ofSeconds(5))
        .until(
            () ->
                compact(ExtProcTestClient.adminGet(adminPort, "/debug/queues"))
                    .contains("\"cause\":\"start\""));
  }

  /**
   * A new chat request's first answer: to its headers when that is immediate, else to its body; the
   * call then reset.
   */
  static ProcessingResponse nextAnswer(ExtProcTestClient client) throws Exception {
    ExtProcTestClient.Call next = client.open(Map.of());
    ProcessingResponse r =
        next.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    if (!r.hasImmediateResponse()) {
      r = next.send(body("{\"model\":\"gpt-4o\",\"messages\":[]}"));
    }
    next.reset();
    return r;
  }

  /**
   * An admitted gRPC call (with {@code metadata}) whose upstream answered 200 and one message; the
   * caller sends its trailers.
   */
  static ExtProcTestClient.Call grpcCallAnswered(
      ExtProcTestClient client, Map<String, String> metadata) throws Exception {
    ExtProcTestClient.Call call = client.open(metadata);
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
    return call;
  }
}
