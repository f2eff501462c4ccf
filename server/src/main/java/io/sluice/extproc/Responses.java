package io.sluice.extproc;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.TrailersResponse;
import io.envoyproxy.envoy.type.v3.HttpStatus;
import io.sluice.core.admission.Reason;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/** Domain outcome → ext_proc {@link ProcessingResponse}: the one place that builds answers. */
final class Responses {
  private static final JsonFactory JSON = new JsonFactory();

  static final Answer CONTINUE_REQUEST_HEADERS =
      Answer.of(
          ProcessingResponse.newBuilder()
              .setRequestHeaders(
                  HeadersResponse.newBuilder().setResponse(CommonResponse.getDefaultInstance()))
              .build());
  static final Answer CONTINUE_REQUEST_BODY =
      Answer.of(
          ProcessingResponse.newBuilder()
              .setRequestBody(
                  BodyResponse.newBuilder().setResponse(CommonResponse.getDefaultInstance()))
              .build());
  static final Answer CONTINUE_REQUEST_TRAILERS =
      Answer.of(
          ProcessingResponse.newBuilder()
              .setRequestTrailers(TrailersResponse.getDefaultInstance())
              .build());
  static final Answer CONTINUE_RESPONSE_HEADERS =
      Answer.of(
          ProcessingResponse.newBuilder()
              .setResponseHeaders(
                  HeadersResponse.newBuilder().setResponse(CommonResponse.getDefaultInstance()))
              .build());
  static final Answer CONTINUE_RESPONSE_BODY =
      Answer.of(
          ProcessingResponse.newBuilder()
              .setResponseBody(
                  BodyResponse.newBuilder().setResponse(CommonResponse.getDefaultInstance()))
              .build());
  static final Answer CONTINUE_RESPONSE_TRAILERS =
      Answer.of(
          ProcessingResponse.newBuilder()
              .setResponseTrailers(TrailersResponse.getDefaultInstance())
              .build());

  private Responses() {}

  /**
   * Queue-hold: a message carrying only {@code override_message_timeout} (Envoy ignores every other
   * field of such a message, so nothing else is set).
   */
  static Answer hold(long millis) {
    return Answer.of(
        ProcessingResponse.newBuilder()
            .setOverrideMessageTimeout(com.google.protobuf.util.Durations.fromMillis(millis))
            .build());
  }

  /** CONTINUE for the request phase that decided, with optional headers and dynamic metadata. */
  static Answer admit(
      boolean atBody, Map<String, String> headers, AnswerEncoder.DecisionFields metadata) {
    return Answer.encoded(AnswerEncoder.admit(atBody, headers, metadata));
  }

  /**
   * An ImmediateResponse: status, {@code retry-after} (whole seconds, when > 0), {@code
   * x-sluice-reason}, {@code content-type: application/json} and the OpenAI-style error body.
   */
  static Answer reject(
      Reason reason,
      int status,
      long retryAfterSeconds,
      String message,
      AnswerEncoder.DecisionFields metadata) {
    ImmediateResponse.Builder ir =
        ImmediateResponse.newBuilder()
            .setStatus(HttpStatus.newBuilder().setCodeValue(status))
            .setDetails("sluice_" + reason.code())
            .setBody(errorBody(reason, status, retryAfterSeconds, message));
    HeaderMutation.Builder hm = HeaderMutation.newBuilder();
    hm.addSetHeaders(header("content-type", "application/json"));
    hm.addSetHeaders(header("x-sluice-reason", reason.code()));
    if (retryAfterSeconds > 0) {
      hm.addSetHeaders(header("retry-after", Long.toString(retryAfterSeconds)));
    }
    ir.setHeaders(hm);
    byte[] response =
        ProcessingResponse.newBuilder().setImmediateResponse(ir).build().toByteArray();
    byte[] meta = AnswerEncoder.metadataField(metadata);
    byte[] both = java.util.Arrays.copyOf(response, response.length + meta.length);
    System.arraycopy(meta, 0, both, response.length, meta.length); // fields concatenate
    return Answer.encoded(both);
  }

  static String errorType(int status) {
    if (status == 429) {
      return "rate_limited";
    }
    if (status == 503) {
      return "overloaded";
    }
    return "invalid_request";
  }

  static ByteString errorBody(Reason reason, int status, long retryAfterSeconds, String message) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      g.writeObjectFieldStart("error");
      g.writeStringField("type", errorType(status));
      g.writeStringField("code", reason.code());
      g.writeStringField("message", message);
      g.writeStringField("scope", reason.scope().code());
      g.writeNumberField("retry_after_seconds", retryAfterSeconds);
      g.writeEndObject();
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return ByteString.copyFrom(out.toByteArray());
  }

  static HeaderValueOption header(String key, String value) {
    return HeaderValueOption.newBuilder()
        .setHeader(
            HeaderValue.newBuilder()
                .setKey(key)
                .setRawValue(ByteString.copyFrom(value, StandardCharsets.UTF_8)))
        .setAppendAction(HeaderValueOption.HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD)
        .build();
  }
}
