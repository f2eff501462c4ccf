package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
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
import io.envoyproxy.envoy.type.v3.HttpStatus;
import io.sluice.core.admission.Reason;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * The hand-written encoder against protobuf-java: every answer it writes must parse to exactly the
 * message protobuf-java builds from the same fields (the reference below is the builder code the
 * encoder replaced).
 */
class AnswerEncoderTest {

  @Property(tries = 500)
  void admitEqualsTheProtobufBuiltAnswer(
      @ForAll boolean atBody,
      @ForAll("headers") Map<String, String> headers,
      @ForAll("fields") AnswerEncoder.DecisionFields f)
      throws Exception {
    byte[] encoded = AnswerEncoder.admit(atBody, headers, f);
    ProcessingResponse expected = referenceAdmit(atBody, headers, f);
    assertThat(ProcessingResponse.parseFrom(encoded)).isEqualTo(expected);
    assertThat(encoded).hasSize(expected.getSerializedSize());
  }

  @Property(tries = 300)
  void rejectCarriesTheSameMetadata(
      @ForAll("fields") AnswerEncoder.DecisionFields f, @ForAll boolean withRetryAfter) {
    ProcessingResponse r =
        Responses.reject(Reason.POOL_SATURATED, 503, withRetryAfter ? 3 : 0, "busy", f).message();
    assertThat(r.hasImmediateResponse()).isTrue();
    assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(503);
    assertThat(r.getDynamicMetadata()).isEqualTo(referenceMetadata(f));
  }

  /**
   * The refusal is byte for byte what the protobuf-java builders it replaced wrote
   * (ImmediateResponse then the metadata), for every reason, status, Retry-After and message.
   */
  @Property(tries = 500)
  void rejectEqualsTheProtobufBuiltAnswerByteForByte(
      @ForAll Reason reason,
      @ForAll("statuses") int status,
      @ForAll("retryAfter") long retryAfter,
      @ForAll("message") String message,
      @ForAll("fields") AnswerEncoder.DecisionFields f)
      throws Exception {
    byte[] encoded = Responses.reject(reason, status, retryAfter, message, f).bytes();
    byte[] expected = referenceReject(reason, status, retryAfter, message, f);
    assertThat(encoded).isEqualTo(expected);
  }

  @Provide
  Arbitrary<Integer> statuses() {
    return Arbitraries.oneOf(
        Arbitraries.of(400, 404, 413, 429, 500, 503), Arbitraries.integers().between(0, 100_000));
  }

  @Provide
  Arbitrary<Long> retryAfter() {
    return Arbitraries.oneOf(
        Arbitraries.of(0L, 1L, 3L, 60L), Arbitraries.longs().between(-5, Long.MAX_VALUE));
  }

  @Provide
  Arbitrary<String> message() {
    return text();
  }

  @Test
  void continueConstantsAreTheEmptyCommonResponses() {
    assertThat(Responses.CONTINUE_REQUEST_HEADERS.message().getRequestHeaders().hasResponse())
        .isTrue();
    assertThat(Responses.CONTINUE_RESPONSE_BODY.message().getResponseBody().getResponse())
        .isEqualTo(CommonResponse.getDefaultInstance());
  }

  @Test
  void longValuesNeedMultiByteLengths() throws Exception {
    String tenant = "t".repeat(300) + "é€😀";
    var f =
        new AnswerEncoder.DecisionFields(
            true,
            tenant,
            "gold",
            "chat",
            "default",
            "r".repeat(200),
            "admit",
            "admitted",
            true,
            1L << 40,
            0,
            7);
    Map<String, String> h = Map.of("x-sluice-estimate", "v".repeat(20_000));
    assertThat(ProcessingResponse.parseFrom(AnswerEncoder.admit(false, h, f)))
        .isEqualTo(referenceAdmit(false, h, f));
  }

  @Provide
  Arbitrary<Map<String, String>> headers() {
    Arbitrary<String> keys =
        Arbitraries.strings().withCharRange('a', 'z').withChars('-').ofMinLength(1).ofMaxLength(30);
    return Arbitraries.maps(keys, text()).ofMaxSize(3).map(LinkedHashMap::new);
  }

  @Provide
  Arbitrary<AnswerEncoder.DecisionFields> fields() {
    Arbitrary<String> bounded = Arbitraries.of("", "default", "chat", "gold", "interactive", null);
    Arbitrary<Long> counts = Arbitraries.longs().between(0, 1L << 50);
    return Combinators.combine(
            Arbitraries.of(true, false), text().injectNull(0.1), bounded, bounded, bounded)
        .as((r, tenant, tier, cls, pool) -> new Object[] {r, tenant, tier, cls, pool})
        .flatMap(
            a ->
                Combinators.combine(
                        text().injectNull(0.1),
                        Arbitraries.of("admit", "reject"),
                        Arbitraries.of(Reason.values()).map(Reason::code),
                        Arbitraries.of(true, false),
                        counts,
                        counts,
                        counts)
                    .as(
                        (route, decision, reason, est, in, out, work) ->
                            new AnswerEncoder.DecisionFields(
                                (Boolean) a[0],
                                (String) a[1],
                                (String) a[2],
                                (String) a[3],
                                (String) a[4],
                                route,
                                decision,
                                reason,
                                est,
                                est ? in : 0,
                                est ? out : 0,
                                est ? work : 0)));
  }

  private static Arbitrary<String> text() {
    return Arbitraries.strings().all().excludeChars(invalidSurrogates()).ofMaxLength(200);
  }

  /** Lone surrogates are not text; protobuf and String.getBytes replace them differently. */
  private static char[] invalidSurrogates() {
    char[] cs = new char[0xE000 - 0xD800];
    for (int i = 0; i < cs.length; i++) {
      cs[i] = (char) (0xD800 + i);
    }
    return cs;
  }

  // --- the reference: the protobuf-java builders the encoder replaced

  static ProcessingResponse referenceAdmit(
      boolean atBody, Map<String, String> headers, AnswerEncoder.DecisionFields f) {
    CommonResponse.Builder common = CommonResponse.newBuilder();
    if (!headers.isEmpty()) {
      HeaderMutation.Builder hm = HeaderMutation.newBuilder();
      headers.forEach((k, v) -> hm.addSetHeaders(header(k, v)));
      common.setHeaderMutation(hm);
    }
    ProcessingResponse.Builder b =
        ProcessingResponse.newBuilder().setDynamicMetadata(referenceMetadata(f));
    if (atBody) {
      b.setRequestBody(BodyResponse.newBuilder().setResponse(common));
    } else {
      b.setRequestHeaders(HeadersResponse.newBuilder().setResponse(common));
    }
    return b.build();
  }

  /** The refusal as Responses built it with protobuf-java (metadata appended as its own field). */
  static byte[] referenceReject(
      Reason reason, int status, long retryAfter, String message, AnswerEncoder.DecisionFields f) {
    ImmediateResponse.Builder ir =
        ImmediateResponse.newBuilder()
            .setStatus(HttpStatus.newBuilder().setCodeValue(status))
            .setDetails("sluice_" + reason.code())
            .setBody(
                ByteString.copyFrom(Responses.errorBodyBytes(reason, status, retryAfter, message)));
    HeaderMutation.Builder hm = HeaderMutation.newBuilder();
    hm.addSetHeaders(header("content-type", "application/json"));
    hm.addSetHeaders(header("x-sluice-reason", reason.code()));
    if (retryAfter > 0) {
      hm.addSetHeaders(header("retry-after", Long.toString(retryAfter)));
    }
    ir.setHeaders(hm);
    return ProcessingResponse.newBuilder()
        .setImmediateResponse(ir)
        .setDynamicMetadata(referenceMetadata(f))
        .build()
        .toByteArray();
  }

  static Struct referenceMetadata(AnswerEncoder.DecisionFields d) {
    Struct.Builder f = Struct.newBuilder();
    if (d.resolved()) {
      f.putFields("tenant", str(d.tenant()));
      f.putFields("tier", str(d.tier()));
      f.putFields("class", str(d.requestClass()));
      f.putFields("pool", str(d.pool()));
      f.putFields("route", str(d.route()));
    }
    f.putFields("decision", str(d.decision()));
    f.putFields("reason", str(d.reason()));
    if (d.estimated()) {
      f.putFields(
          "est_input_tokens", Value.newBuilder().setNumberValue(d.estInputTokens()).build());
      f.putFields(
          "est_output_tokens", Value.newBuilder().setNumberValue(d.estOutputTokens()).build());
      f.putFields("work_units", Value.newBuilder().setNumberValue(d.workUnits()).build());
    }
    return Struct.newBuilder()
        .putFields("sluice", Value.newBuilder().setStructValue(f).build())
        .build();
  }

  private static Value str(String s) {
    return Value.newBuilder().setStringValue(s == null ? "" : s).build();
  }

  private static HeaderValueOption header(String key, String value) {
    return HeaderValueOption.newBuilder()
        .setHeader(
            HeaderValue.newBuilder()
                .setKey(key)
                .setRawValue(ByteString.copyFrom(value, StandardCharsets.UTF_8)))
        .setAppendAction(HeaderValueOption.HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD)
        .build();
  }
}
