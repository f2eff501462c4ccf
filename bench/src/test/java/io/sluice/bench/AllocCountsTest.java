package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Sluice's server asks grpc's pooled allocator for the same buffers per LLM-shaped stream as the
 * no-op server sending Sluice's answer bytes: the same callers, sizes and counts on the write path
 * (grpc's message framer, Netty's HTTP/2 frame writer), all on the event loops.
 */
class AllocCountsTest {
  private static final int STREAMS = 400;

  @Test
  void sluice_allocatesPerStreamAsTheNoOpSendingItsAnswers() throws Exception {
    AllocCounts.Result sluice = AllocCounts.count(FloorCalls.LLM, "sluice", 200, STREAMS, 2, 16);
    AllocCounts.Result noop =
        AllocCounts.count(FloorCalls.LLM, "noop-answers", 200, STREAMS, 2, 16);

    assertThat(sluice.ok()).isEqualTo(STREAMS);
    assertThat(noop.ok()).isEqualTo(STREAMS);
    assertThat(writes(sluice))
        .containsEntry(
            "loop buffer grpc.netty.NettyWritableBufferAllocator.allocate ~9", 3L * STREAMS)
        .isEqualTo(writes(noop));
    assertThat(sluice.byCaller().keySet()).allMatch(k -> k.startsWith("loop "));
  }

  /**
   * The write path's allocations per stream: grpc's framer, Netty's HTTP/2 DATA and HEADERS frames
   * (not the connection's WINDOW_UPDATE and PING frames, which follow the flow-control timing).
   */
  private static Map<String, Long> writes(AllocCounts.Result r) {
    Map<String, Long> out = new TreeMap<>();
    r.byCaller()
        .forEach(
            (k, v) -> {
              if (k.contains("NettyWritableBufferAllocator")
                  || k.contains("DefaultHttp2FrameWriter")) {
                out.put(k, v);
              }
            });
    return out;
  }
}
