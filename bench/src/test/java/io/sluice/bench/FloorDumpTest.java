package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.sluice.harness.LlmStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code floor --dump-dir}: the frames h2load sends, each file a sequence of gRPC length-prefixed
 * messages that parse back to what the Java generator sends.
 */
class FloorDumpTest {
  @Test
  void theDumpHoldsTheOneShotTheLlmShapedStreamAndTheRlsCall(@TempDir Path dir) throws Exception {
    int rc = new CommandLine(new Floor()).execute("--dump-dir", dir.toString());
    assertThat(rc).isZero();

    List<byte[]> oneShot = frames(Files.readAllBytes(dir.resolve("extproc_request_headers.grpc")));
    assertThat(oneShot).hasSize(1);
    assertThat(ProcessingRequest.parseFrom(oneShot.get(0))).isEqualTo(LlmStream.oneShotHeaders());

    List<byte[]> llm = frames(Files.readAllBytes(dir.resolve("extproc_llm_stream.grpc")));
    List<ProcessingRequest> parsed = new ArrayList<>();
    for (byte[] f : llm) {
      parsed.add(ProcessingRequest.parseFrom(f));
    }
    assertThat(parsed).as("the four messages, in Envoy's order").isEqualTo(LlmStream.messages());
    assertThat(parsed.get(1).getRequestBody().getEndOfStream()).isTrue();
    assertThat(parsed.get(3).getResponseBody().getBody().toStringUtf8()).contains("\"usage\"");

    List<byte[]> rls = frames(Files.readAllBytes(dir.resolve("rls_request.grpc")));
    assertThat(rls).hasSize(1);
    assertThat(RateLimitRequest.parseFrom(rls.get(0)).getDomain()).isEqualTo("bench");
  }

  /** Splits gRPC frames: a 0 compression byte, a 4-byte big-endian length, the message. */
  private static List<byte[]> frames(byte[] body) {
    ByteBuffer b = ByteBuffer.wrap(body);
    List<byte[]> out = new ArrayList<>();
    while (b.hasRemaining()) {
      assertThat(b.get()).as("uncompressed").isZero();
      byte[] m = new byte[b.getInt()];
      b.get(m);
      out.add(m);
    }
    return out;
  }
}
