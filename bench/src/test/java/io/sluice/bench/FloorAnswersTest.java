package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import java.io.ByteArrayInputStream;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The floor's generator reads an answer only as far as which message it is ({@link AnswerKind}):
 * whatever a target puts around it (dynamic metadata before or after the oneof, mutations), the
 * kind is protobuf's own {@code getResponseCase()}, so a refusal is never taken for an admit.
 */
class FloorAnswersTest {
  private static final Struct METADATA =
      Struct.newBuilder()
          .putFields(
              "sluice",
              Value.newBuilder()
                  .setStructValue(
                      Struct.newBuilder()
                          .putFields("tenant", Value.newBuilder().setStringValue("acme").build())
                          .putFields("estimate", Value.newBuilder().setNumberValue(812).build()))
                  .build())
          .build();

  private static final HeadersResponse MUTATED =
      HeadersResponse.newBuilder()
          .setResponse(
              CommonResponse.newBuilder()
                  .setHeaderMutation(
                      HeaderMutation.newBuilder()
                          .addSetHeaders(
                              HeaderValueOption.newBuilder()
                                  .setHeader(
                                      HeaderValue.newBuilder()
                                          .setKey("x-sluice-decision")
                                          .setRawValue(
                                              com.google.protobuf.ByteString.copyFromUtf8(
                                                  "admit"))))))
          .build();

  @Test
  void readsWhichAnswerItIsAndNothingElse() throws Exception {
    List<ProcessingResponse> answers =
        List.of(
            ProcessingResponse.newBuilder().setRequestHeaders(MUTATED).build(),
            ProcessingResponse.newBuilder()
                .setRequestHeaders(MUTATED)
                .setDynamicMetadata(METADATA)
                .build(),
            ProcessingResponse.newBuilder()
                .setRequestBody(BodyResponse.getDefaultInstance())
                .setDynamicMetadata(METADATA)
                .build(),
            ProcessingResponse.newBuilder().setResponseHeaders(MUTATED).build(),
            ProcessingResponse.newBuilder()
                .setResponseBody(BodyResponse.getDefaultInstance())
                .build(),
            ProcessingResponse.newBuilder()
                .setImmediateResponse(
                    ImmediateResponse.newBuilder()
                        .setBody(com.google.protobuf.ByteString.copyFromUtf8("busy")))
                .setDynamicMetadata(METADATA)
                .build());
    for (ProcessingResponse answer : answers) {
      AnswerKind kind = AnswerKind.read(new ByteArrayInputStream(answer.toByteArray()));
      assertThat(kind.field()).isEqualTo(answer.getResponseCase().getNumber());
      assertThat(kind.refused()).isEqualTo(answer.hasImmediateResponse());
    }
  }

  @Test
  void twoMembersOfTheOneofReadAsProtobufReadsThem() throws Exception {
    // concatenated messages merge: the member written last is the answer (protobuf's rule)
    byte[] refusal =
        ProcessingResponse.newBuilder()
            .setImmediateResponse(
                ImmediateResponse.newBuilder()
                    .setBody(com.google.protobuf.ByteString.copyFromUtf8("busy")))
            .build()
            .toByteArray();
    byte[] admit =
        ProcessingResponse.newBuilder()
            .setRequestHeaders(MUTATED)
            .setDynamicMetadata(METADATA)
            .build()
            .toByteArray();
    for (byte[][] order : new byte[][][] {{refusal, admit}, {admit, refusal}}) {
      byte[] both = new byte[order[0].length + order[1].length];
      System.arraycopy(order[0], 0, both, 0, order[0].length);
      System.arraycopy(order[1], 0, both, order[0].length, order[1].length);
      AnswerKind kind = AnswerKind.read(new ByteArrayInputStream(both));
      assertThat(kind.field())
          .isEqualTo(ProcessingResponse.parseFrom(both).getResponseCase().getNumber());
    }
  }

  @Test
  void readsAnRlsAnswersOverallCodeAndSkipsTheRest() throws Exception {
    RateLimitResponse.DescriptorStatus status =
        RateLimitResponse.DescriptorStatus.newBuilder()
            .setCode(RateLimitResponse.Code.OVER_LIMIT)
            .setCurrentLimit(
                RateLimitResponse.RateLimit.newBuilder()
                    .setRequestsPerUnit(10)
                    .setUnit(RateLimitResponse.RateLimit.Unit.SECOND))
            .setLimitRemaining(0)
            .build();
    List<RateLimitResponse> answers =
        List.of(
            RateLimitResponse.getDefaultInstance(), // UNKNOWN: nothing on the wire
            RateLimitResponse.newBuilder().setOverallCode(RateLimitResponse.Code.OK).build(),
            RateLimitResponse.newBuilder()
                .addStatuses(status.toBuilder().setCode(RateLimitResponse.Code.OK))
                .setOverallCode(RateLimitResponse.Code.OK)
                .build(),
            RateLimitResponse.newBuilder()
                .setOverallCode(RateLimitResponse.Code.OVER_LIMIT)
                .addStatuses(status)
                .addResponseHeadersToAdd(
                    io.envoyproxy.envoy.config.core.v3.HeaderValue.newBuilder()
                        .setKey("x-ratelimit-remaining")
                        .setValue("0"))
                .build());
    for (RateLimitResponse answer : answers) {
      int code = AnswerKind.overallCode(new ByteArrayInputStream(answer.toByteArray()));
      assertThat(code).isEqualTo(answer.getOverallCodeValue());
    }
    // written twice (merged messages): the last one is the answer, as protobuf reads it
    byte[] ok = answers.get(2).toByteArray();
    byte[] over = answers.get(3).toByteArray();
    byte[] both = new byte[ok.length + over.length];
    System.arraycopy(ok, 0, both, 0, ok.length);
    System.arraycopy(over, 0, both, ok.length, over.length);
    assertThat(AnswerKind.overallCode(new ByteArrayInputStream(both)))
        .isEqualTo(RateLimitResponse.parseFrom(both).getOverallCodeValue());
  }
}
