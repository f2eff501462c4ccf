package io.sluice.bench;

import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.sluice.harness.LlmStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** What the floor bench and the floods send: Envoy-shaped ext_proc messages and RLS calls. */
final class FloorMessages {
  private FloorMessages() {}

  /**
   * The LLM-shaped stream (request headers with protocol_config, a 1.9 KB buffered chat body,
   * response headers, a 0.5 KB JSON answer with usage), from the harness's one builder.
   */
  static List<ProcessingRequest> envoyShapedMessages() {
    return LlmStream.messages();
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
    return LlmStream.oneShotHeaders();
  }

  static byte[] grpcFrame(byte[] proto) {
    ByteBuffer b = ByteBuffer.allocate(5 + proto.length);
    b.put((byte) 0).putInt(proto.length).put(proto);
    return b.array();
  }

  /**
   * Writes the frames h2load sends (the one-shot headers, the LLM-shaped stream, the RLS call) to
   * {@code dir}, one file each; returns their paths.
   */
  static List<String> writeFrames(Path dir) throws IOException {
    Files.createDirectories(dir);
    Path ext = dir.resolve("extproc_request_headers.grpc");
    Path llm = dir.resolve("extproc_llm_stream.grpc");
    Path rls = dir.resolve("rls_request.grpc");
    Files.write(ext, grpcFrame(request().toByteArray()));
    Files.write(llm, grpcFrames(envoyShapedMessages()));
    Files.write(rls, grpcFrame(rlsRequest().toByteArray()));
    return List.of(ext.toString(), llm.toString(), rls.toString());
  }

  /**
   * The messages as one request body of gRPC frames, in order: what h2load sends (with END_STREAM)
   * for the LLM-shaped stream, every message at once rather than each after the previous answer as
   * Envoy does.
   */
  static byte[] grpcFrames(List<ProcessingRequest> messages) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (ProcessingRequest m : messages) {
      out.writeBytes(grpcFrame(m.toByteArray()));
    }
    return out.toByteArray();
  }
}
