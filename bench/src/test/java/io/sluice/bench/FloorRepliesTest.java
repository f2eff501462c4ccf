package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sluice.harness.LlmStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Target {@code noop-answers} answers every message of every floor workload with what target {@code
 * sluice} answers it with: the same bytes, message by message, but for the deadline's epoch (the
 * clock's, per request; a double of fixed size, so the bytes are as many).
 */
class FloorRepliesTest {
  @Test
  void noopAnswers_answersEachWorkloadAsSluiceDoes_byteForByte() throws Exception {
    Floor floor = new Floor();
    try (FloorTargets servers = FloorTargets.inProcess(floor, List.of("sluice", "noop-answers"))) {
      ManagedChannel sluice = channel(servers.port("sluice"));
      ManagedChannel answers = channel(servers.port("noop-answers"));
      try {
        // The same history as the capture noop-answers serves (a fresh Sluice, WARM streams of each
        // workload in turn): the answers to compare with. A live Sluice keeps learning from each
        // stream's usage, so its estimates may move by a token (a double: the bytes stay as many).
        FloorReplies.Captured expected = FloorReplies.capture(sluice);
        Map<String, List<ProcessingRequest>> workloads = new LinkedHashMap<>();
        workloads.put("oneshot", List.of(FloorMessages.request()));
        workloads.put("llm", FloorMessages.envoyShapedMessages());
        workloads.put("headers-only", LlmStream.headersOnlyMessages());
        Map<String, List<byte[]>> captured =
            Map.of(
                "oneshot", expected.oneShot(),
                "llm", expected.llm(),
                "headers-only", expected.headersOnly());
        for (var w : workloads.entrySet()) {
          boolean reset = !w.getKey().equals("oneshot");
          List<byte[]> fromSluice = captured.get(w.getKey());
          List<byte[]> live = FloorReplies.stream(sluice, w.getValue(), reset);
          List<byte[]> fromNoop = FloorReplies.stream(answers, w.getValue(), reset);
          assertThat(fromNoop).as(w.getKey()).hasSameSizeAs(w.getValue());
          assertThat(withoutClock(fromNoop)).as(w.getKey()).isEqualTo(withoutClock(fromSluice));
          assertThat(live).as(w.getKey() + " live").hasSameSizeAs(fromNoop);
          for (int i = 0; i < fromSluice.size(); i++) {
            assertThat(fromNoop.get(i)).as(w.getKey() + " #" + i).hasSameSizeAs(fromSluice.get(i));
            assertThat(fromNoop.get(i)).as(w.getKey() + " live #" + i).hasSameSizeAs(live.get(i));
          }
        }
        byte[] rlsNoop = FloorReplies.capture(answers).rls();
        byte[] rlsSluice = expected.rls();
        assertThat(rlsNoop).hasSameSizeAs(rlsSluice);
        assertThat(withoutRemaining(rlsNoop)).isEqualTo(withoutRemaining(rlsSluice));
        // the generator reads only the overall code of either: OK
        assertThat(AnswerKind.overallCode(new java.io.ByteArrayInputStream(rlsSluice)))
            .isEqualTo(RateLimitResponse.Code.OK_VALUE);
      } finally {
        sluice.shutdownNow();
        answers.shutdownNow();
      }
    }
  }

  /**
   * The RLS answer parsed, each status's {@code limit_remaining} zeroed (the count's, per call).
   */
  private static RateLimitResponse withoutRemaining(byte[] answer) throws Exception {
    RateLimitResponse.Builder r = RateLimitResponse.parseFrom(answer).toBuilder();
    for (int i = 0; i < r.getStatusesCount(); i++) {
      r.setStatuses(i, r.getStatuses(i).toBuilder().setLimitRemaining(0));
    }
    return r.build();
  }

  private static ManagedChannel channel(int port) {
    return NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
  }

  /**
   * The answers parsed, {@code deadline_epoch_ms} and {@code deadline_remaining_ms} zeroed (the
   * clock's, when admitted: the deadline's instant, and 8 s less the time the request waited).
   */
  private static List<ProcessingResponse> withoutClock(List<byte[]> answers) throws Exception {
    List<ProcessingResponse> out = new ArrayList<>();
    for (byte[] a : answers) {
      ProcessingResponse r = ProcessingResponse.parseFrom(a);
      Value sluice = r.getDynamicMetadata().getFieldsOrDefault("sluice", null);
      if (sluice != null && sluice.getStructValue().containsFields("deadline_epoch_ms")) {
        Struct inner =
            sluice.getStructValue().toBuilder()
                .putFields("deadline_epoch_ms", Value.newBuilder().setNumberValue(0).build())
                .putFields("deadline_remaining_ms", Value.newBuilder().setNumberValue(0).build())
                .build();
        r =
            r.toBuilder()
                .setDynamicMetadata(
                    r.getDynamicMetadata().toBuilder()
                        .putFields("sluice", Value.newBuilder().setStructValue(inner).build()))
                .build();
      }
      out.add(r);
    }
    return out;
  }
}
