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
import io.sluice.testing.Seeded;
import io.sluice.testing.Seeded.Gen;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The hand-written encoder against protobuf-java: every answer it writes must parse to exactly the
 * message protobuf-java builds from the same fields (the reference below is the builder code the
 * encoder replaced).
 */
class AnswerEncoderTest {
  /** One snapshot's encoded entries, shared by every case (as one config's requests share it). */
  private static final AnswerEncoder.Entries ENTRIES = new AnswerEncoder.Entries();

  record Admit(boolean atBody, Map<String, String> headers, AnswerEncoder.DecisionFields f) {}

  @Test
  void admitEqualsTheProtobufBuiltAnswer() {
    Seeded.forAll(
        0x5EED_0F01L,
        500,
        g -> new Admit(g.bool(), headers(g), fields(g)),
        c -> {
          byte[] encoded = AnswerEncoder.admit(ENTRIES, c.atBody(), c.headers(), c.f());
          ProcessingResponse expected = referenceAdmit(c.atBody(), c.headers(), c.f());
          assertThat(ProcessingResponse.parseFrom(encoded)).isEqualTo(expected);
          assertThat(encoded).hasSize(expected.getSerializedSize());
        });
  }

  record RejectMetadata(AnswerEncoder.DecisionFields f, boolean withRetryAfter) {}

  @Test
  void rejectCarriesTheSameMetadata() {
    Seeded.forAll(
        0x5EED_0F02L,
        300,
        g -> new RejectMetadata(fields(g), g.bool()),
        c -> {
          ProcessingResponse r =
              Responses.reject(
                      ENTRIES,
                      Reason.POOL_SATURATED,
                      503,
                      c.withRetryAfter() ? 3 : 0,
                      "busy",
                      c.f())
                  .message();
          assertThat(r.hasImmediateResponse()).isTrue();
          assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(503);
          assertThat(r.getDynamicMetadata()).isEqualTo(referenceMetadata(c.f()));
        });
  }

  record Reject(
      Reason reason, int status, long retryAfter, String message, AnswerEncoder.DecisionFields f) {}

  /**
   * The refusal is byte for byte what the protobuf-java builders it replaced wrote
   * (ImmediateResponse then the metadata), for every reason, status, Retry-After and message.
   */
  @Test
  void rejectEqualsTheProtobufBuiltAnswerByteForByte() {
    Seeded.forAll(
        0x5EED_0F03L,
        500,
        g -> new Reject(g.anyOf(Reason.class), status(g), retryAfter(g), text(g), fields(g)),
        c -> {
          byte[] encoded =
              Responses.reject(ENTRIES, c.reason(), c.status(), c.retryAfter(), c.message(), c.f())
                  .bytes();
          byte[] expected =
              referenceReject(c.reason(), c.status(), c.retryAfter(), c.message(), c.f());
          assertThat(encoded).isEqualTo(expected);
        });
  }

  /**
   * The refusal of a gRPC request: the same fields plus {@code grpc_status}, without {@code
   * content-type}, byte for byte what protobuf-java writes.
   */
  @Test
  void grpcRejectEqualsTheProtobufBuiltAnswerByteForByte() {
    Seeded.forAll(
        0x5EED_0F04L,
        500,
        g -> new Reject(g.anyOf(Reason.class), status(g), retryAfter(g), text(g), fields(g)),
        c -> {
          byte[] encoded =
              Responses.rejectGrpc(
                      ENTRIES, c.reason(), c.status(), c.retryAfter(), c.message(), c.f())
                  .bytes();
          ImmediateResponse.Builder ir =
              ImmediateResponse.newBuilder()
                  .setStatus(HttpStatus.newBuilder().setCodeValue(c.status()))
                  .setGrpcStatus(
                      io.envoyproxy.envoy.service.ext_proc.v3.GrpcStatus.newBuilder()
                          .setStatus(Responses.grpcStatus(c.status())))
                  .setDetails("sluice_" + c.reason().code())
                  .setBody(
                      ByteString.copyFrom(
                          Responses.errorBodyBytes(
                              c.reason(), c.status(), c.retryAfter(), c.message())));
          HeaderMutation.Builder hm = HeaderMutation.newBuilder();
          hm.addSetHeaders(header("x-sluice-reason", c.reason().code()));
          if (c.retryAfter() > 0) {
            hm.addSetHeaders(header("retry-after", Long.toString(c.retryAfter())));
          }
          if (!c.reason().retryable()) {
            hm.addSetHeaders(header("x-should-retry", "false"));
          }
          ir.setHeaders(hm);
          byte[] expected =
              ProcessingResponse.newBuilder()
                  .setImmediateResponse(ir)
                  .setDynamicMetadata(referenceMetadata(c.f()))
                  .build()
                  .toByteArray();
          assertThat(encoded).isEqualTo(expected);
        });
  }

  /**
   * grpc-java's filter reads only grpc_status (unset = 0 = OK: the refusal would look like a
   * successful call), so no refusal maps to OK; the tenant's own limits and saturation differ.
   */
  @Test
  void grpcStatusOfEveryRefusalIsNeverOk() {
    for (Reason r : Reason.values()) {
      if (r != Reason.ADMITTED && r != Reason.DEGRADED) {
        assertThat(Responses.grpcStatus(r.defaultStatus())).as("%s", r).isPositive();
      }
    }
    for (int status = 0; status < 1000; status++) {
      assertThat(Responses.grpcStatus(status)).as("HTTP %s", status).isPositive();
    }
    assertThat(Responses.grpcStatus(429)).isEqualTo(io.grpc.Status.Code.RESOURCE_EXHAUSTED.value());
    assertThat(Responses.grpcStatus(503)).isEqualTo(io.grpc.Status.Code.UNAVAILABLE.value());
  }

  /** The statuses Sluice writes, or any in [0, 100000]. */
  private static int status(Gen g) {
    return g.bool() ? g.oneOf(400, 404, 413, 429, 500, 503) : g.intBetween(0, 100_000);
  }

  /** Typical Retry-After values, or any in [-5, Long.MAX_VALUE]. */
  private static long retryAfter(Gen g) {
    return g.bool() ? g.oneOf(0L, 1L, 3L, 60L) : g.longBetween(-5, Long.MAX_VALUE);
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
            7,
            null,
            null,
            new byte[0]);
    Map<String, String> h = Map.of("x-sluice-estimate", "v".repeat(20_000));
    assertThat(ProcessingResponse.parseFrom(AnswerEncoder.admit(ENTRIES, false, h, f)))
        .isEqualTo(referenceAdmit(false, h, f));
  }

  private static final String KEY_CHARS = "abcdefghijklmnopqrstuvwxyz-";

  /** Up to three headers: distinct keys of 1-30 chars over [a-z-], values any text. */
  private static Map<String, String> headers(Gen g) {
    int n = g.size(0, 3);
    Map<String, String> m = new LinkedHashMap<>();
    for (int attempts = 0; m.size() < n && attempts < 100; attempts++) {
      m.putIfAbsent(g.string(KEY_CHARS, 1, 30), text(g));
    }
    return m;
  }

  private static final String[] BOUNDED = {"", "default", "chat", "gold", "interactive", null};

  private static AnswerEncoder.DecisionFields fields(Gen g) {
    boolean resolved = g.bool();
    String tenant = g.orNull(0.1, () -> text(g));
    String tier = g.oneOf(BOUNDED);
    String cls = g.oneOf(BOUNDED);
    String pool = g.oneOf(BOUNDED);
    String route = g.orNull(0.1, () -> text(g));
    String decision = g.oneOf("admit", "reject");
    String reason = g.anyOf(Reason.class).code();
    boolean est = g.bool();
    long in = g.longBetween(0, 1L << 50);
    long out = g.longBetween(0, 1L << 50);
    long work = g.longBetween(0, 1L << 50);
    // shadow mode's would-be decision (admit answers only in practice; drawn for every answer)
    String would = g.bool() ? null : g.oneOf("reject", "queue");
    String wouldReason = would == null ? null : g.anyOf(Reason.class).code();
    return new AnswerEncoder.DecisionFields(
        resolved,
        tenant,
        tier,
        cls,
        pool,
        route,
        decision,
        reason,
        est,
        est ? in : 0,
        est ? out : 0,
        est ? work : 0,
        would,
        wouldReason,
        new byte[0]);
  }

  /** Lone surrogates are not text; protobuf and String.getBytes replace them differently. */
  private static String text(Gen g) {
    return g.textWithoutSurrogates(200);
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
    if (!reason.retryable()) { // the SDKs' own retry switch, read before the status
      hm.addSetHeaders(header("x-should-retry", "false"));
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
    if (d.would() != null) {
      f.putFields("mode", str("shadow"));
      f.putFields("would", str(d.would()));
      f.putFields("would_reason", str(d.wouldReason()));
    }
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
