package io.sluice.bench;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import java.nio.ByteBuffer;
import java.util.List;

/** What the floor bench and the floods send: Envoy-shaped ext_proc messages and RLS calls. */
final class FloorMessages {
  private FloorMessages() {}

  /** request_headers (BUFFERED/STREAMED), a chat body, response headers, a JSON response body. */
  static List<ProcessingRequest> envoyShapedMessages() {
    ProcessingRequest first = request();
    ProcessingRequest headers =
        first.toBuilder()
            .setRequestHeaders(first.getRequestHeaders().toBuilder().setEndOfStream(false))
            .setProtocolConfig(
                io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration.newBuilder()
                    .setRequestBodyMode(
                        io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode
                            .BodySendMode.BUFFERED)
                    .setResponseBodyMode(
                        io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode
                            .BodySendMode.STREAMED))
            .build();
    ProcessingRequest body =
        ProcessingRequest.newBuilder()
            .setRequestBody(
                io.envoyproxy.envoy.service.ext_proc.v3.HttpBody.newBuilder()
                    .setEndOfStream(true)
                    .setBody(
                        ByteString.copyFromUtf8(
                            "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":256,\"messages\":"
                                + "[{\"role\":\"system\",\"content\":\"You are a helpful"
                                + " assistant.\"},{\"role\":\"user\",\"content\":\"Summarise"
                                + " the attached meeting notes in three bullet points.\"}]}")))
            .build();
    ProcessingRequest responseHeaders =
        ProcessingRequest.newBuilder()
            .setResponseHeaders(
                HttpHeaders.newBuilder()
                    .setHeaders(
                        HeaderMap.newBuilder()
                            .addHeaders(
                                HeaderValue.newBuilder()
                                    .setKey(":status")
                                    .setRawValue(ByteString.copyFromUtf8("200")))
                            .addHeaders(
                                HeaderValue.newBuilder()
                                    .setKey("content-type")
                                    .setRawValue(ByteString.copyFromUtf8("application/json")))))
            .build();
    ProcessingRequest responseBody =
        ProcessingRequest.newBuilder()
            .setResponseBody(
                io.envoyproxy.envoy.service.ext_proc.v3.HttpBody.newBuilder()
                    .setEndOfStream(true)
                    .setBody(
                        ByteString.copyFromUtf8(
                            "{\"choices\":[{\"message\":{\"content\":\"ok\"}}],\"usage\":"
                                + "{\"prompt_tokens\":31,\"completion_tokens\":40}}")))
            .build();
    return List.of(headers, body, responseHeaders, responseBody);
  }

  /** The RLS request of build-notes §7: domain plus one descriptor with two entries. */
  static RateLimitRequest rlsRequest() {
    return RateLimitRequest.newBuilder()
        .setDomain("bench")
        .addDescriptors(
            RateLimitDescriptor.newBuilder()
                .addEntries(
                    RateLimitDescriptor.Entry.newBuilder().setKey("tenant").setValue("acme"))
                .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey("model").setValue("gpt")))
        .setHitsAddend(1)
        .build();
  }

  /** An RLS config (envoyproxy/ratelimit format) that never limits the request above. */
  static final String RLS_CONFIG =
      """
      domain: bench
      descriptors:
        - key: tenant
          descriptors:
            - key: model
              rate_limit: {unit: second, requests_per_unit: 1000000000}
      """;

  /** The 11-header request of build-notes §7, with end_of_stream (no body). */
  static ProcessingRequest request() {
    String[][] h = {
      {":authority", "llm.example.com"},
      {":path", "/v1/chat/completions"},
      {":method", "POST"},
      {":scheme", "https"},
      {"content-type", "application/json"},
      {"authorization", "Bearer sk-0123456789abcdef0123456789abcdef"},
      {"user-agent", "openai-python/1.40.0"},
      {"x-request-id", "7f8e9d0c-1b2a-4c3d-8e9f-0a1b2c3d4e5f"},
      {"x-forwarded-for", "10.0.0.1"},
      {"x-forwarded-proto", "https"},
      {"x-tenant-id", "acme"}
    };
    HeaderMap.Builder map = HeaderMap.newBuilder();
    for (String[] kv : h) {
      map.addHeaders(
          HeaderValue.newBuilder().setKey(kv[0]).setRawValue(ByteString.copyFromUtf8(kv[1])));
    }
    return ProcessingRequest.newBuilder()
        .setRequestHeaders(HttpHeaders.newBuilder().setHeaders(map).setEndOfStream(true))
        .build();
  }

  static byte[] grpcFrame(byte[] proto) {
    ByteBuffer b = ByteBuffer.allocate(5 + proto.length);
    b.put((byte) 0).putInt(proto.length).put(proto);
    return b.array();
  }
}
