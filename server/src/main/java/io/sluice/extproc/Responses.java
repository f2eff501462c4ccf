package io.sluice.extproc;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.TrailersResponse;
import io.sluice.core.admission.Reason;
import io.sluice.core.session.RefusalDetail;
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
      AnswerEncoder.Entries entries,
      boolean atBody,
      Map<String, String> headers,
      AnswerEncoder.DecisionFields metadata) {
    return Answer.encoded(AnswerEncoder.admit(entries, atBody, headers, metadata));
  }

  /**
   * As {@link #admit(AnswerEncoder.Entries, boolean, Map, AnswerEncoder.DecisionFields)}, the
   * headers encoded ({@code keys[i]: values[i]}), with the body the upstream gets instead of the
   * client's ({@code body}, null: unchanged; the caller sets {@code content-length} in the headers)
   * and {@code clear_route_cache}.
   */
  static Answer admit(
      AnswerEncoder.Entries entries,
      boolean atBody,
      byte[][] keys,
      byte[][] values,
      byte @org.jspecify.annotations.Nullable [] body,
      boolean clearRouteCache,
      AnswerEncoder.DecisionFields metadata) {
    return Answer.encoded(
        AnswerEncoder.admit(entries, atBody, keys, values, body, clearRouteCache, metadata));
  }

  /**
   * CONTINUE for the response headers, setting {@code headers} on the response the client gets
   * ({@code x-sluice-degraded}, {@code x-sluice-queue-wait-ms}).
   */
  static Answer continueResponseHeaders(Map<String, String> headers) {
    return Answer.of(
        ProcessingResponse.newBuilder()
            .setResponseHeaders(
                HeadersResponse.newBuilder()
                    .setResponse(CommonResponse.newBuilder().setHeaderMutation(set(headers))))
            .build());
  }

  /** CONTINUE for the response trailers, setting {@code headers} among them. */
  static Answer continueResponseTrailers(Map<String, String> headers) {
    return Answer.of(
        ProcessingResponse.newBuilder()
            .setResponseTrailers(TrailersResponse.newBuilder().setHeaderMutation(set(headers)))
            .build());
  }

  /** A mutation setting each of {@code headers} (overwriting one there). */
  private static io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation set(
      Map<String, String> headers) {
    io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation.Builder m =
        io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation.newBuilder();
    headers.forEach(
        (k, v) ->
            m.addSetHeaders(
                io.envoyproxy.envoy.config.core.v3.HeaderValueOption.newBuilder()
                    .setHeader(
                        io.envoyproxy.envoy.config.core.v3.HeaderValue.newBuilder()
                            .setKey(k)
                            .setRawValue(com.google.protobuf.ByteString.copyFromUtf8(v)))
                    .setAppendAction(
                        io.envoyproxy.envoy.config.core.v3.HeaderValueOption.HeaderAppendAction
                            .OVERWRITE_IF_EXISTS_OR_ADD)));
    return m.build();
  }

  /**
   * An ImmediateResponse: status, {@code retry-after} (whole seconds, when > 0), {@code
   * x-sluice-reason}, {@code content-type: application/json} and the OpenAI-style error body.
   */
  static Answer reject(
      AnswerEncoder.Entries entries,
      Reason reason,
      int status,
      long retryAfterSeconds,
      String message,
      AnswerEncoder.DecisionFields metadata) {
    return refusal(
        entries, reason, status, retryAfterSeconds, -1, message, metadata, false, null, null);
  }

  /**
   * As above, with the predicted wait (or drain time) in milliseconds its Retry-After came from
   * ({@code waitMillis}, -1: none): header {@code x-sluice-predicted-wait-ms} and {@code
   * error.predicted_wait_ms} in the body.
   */
  static Answer reject(
      AnswerEncoder.Entries entries,
      Reason reason,
      int status,
      long retryAfterSeconds,
      long waitMillis,
      String message,
      AnswerEncoder.DecisionFields metadata,
      boolean grpc) {
    return refusal(
        entries,
        reason,
        status,
        retryAfterSeconds,
        waitMillis,
        message,
        metadata,
        grpc,
        null,
        null);
  }

  /**
   * As above, with llm-d's {@code x-llm-d-request-dropped-reason} set to {@code droppedReason}
   * beside {@code x-sluice-reason} (null: not written; {@link LlmdDroppedReason}), and what the
   * check that refused tells the client besides ({@code detail}: its headers, and its fields in the
   * JSON error; null: nothing).
   */
  static Answer reject(
      AnswerEncoder.Entries entries,
      Reason reason,
      int status,
      long retryAfterSeconds,
      long waitMillis,
      String message,
      AnswerEncoder.DecisionFields metadata,
      boolean grpc,
      byte @org.jspecify.annotations.Nullable [] droppedReason,
      @org.jspecify.annotations.Nullable RefusalDetail detail) {
    return refusal(
        entries,
        reason,
        status,
        retryAfterSeconds,
        waitMillis,
        message,
        metadata,
        grpc,
        droppedReason,
        detail);
  }

  /**
   * The refusal of a gRPC request (content-type {@code application/grpc*} through Envoy, or any
   * request of a proxyless gRPC client, which sends no pseudo-headers): the same ImmediateResponse
   * with {@code grpc_status} set from {@link #grpcStatus} and no {@code content-type} header (Envoy
   * answers a gRPC request with a trailers-only {@code application/grpc} reply; grpc-java's filter
   * turns the headers into trailers). {@code x-sluice-reason} and {@code retry-after} stay: the
   * client reads them from the trailers.
   */
  static Answer rejectGrpc(
      AnswerEncoder.Entries entries,
      Reason reason,
      int status,
      long retryAfterSeconds,
      String message,
      AnswerEncoder.DecisionFields metadata) {
    return refusal(
        entries, reason, status, retryAfterSeconds, -1, message, metadata, true, null, null);
  }

  private static Answer refusal(
      AnswerEncoder.Entries entries,
      Reason reason,
      int status,
      long retryAfterSeconds,
      long waitMillis,
      String message,
      AnswerEncoder.DecisionFields metadata,
      boolean grpc,
      byte @org.jspecify.annotations.Nullable [] droppedReason,
      @org.jspecify.annotations.Nullable RefusalDetail detail) {
    Map<String, String> more = detail == null ? Map.of() : detail.headers();
    int n =
        (grpc ? 0 : 1)
            + 1
            + (droppedReason != null ? 1 : 0)
            + (retryAfterSeconds > 0 ? 1 : 0)
            + (waitMillis >= 0 ? 1 : 0)
            + (reason.retryable() ? 0 : 1)
            + more.size();
    byte[][] keys = new byte[n][];
    byte[][] values = new byte[n][];
    int i = 0;
    if (!grpc) {
      keys[i] = CONTENT_TYPE;
      values[i++] = APPLICATION_JSON;
    }
    keys[i] = X_SLUICE_REASON;
    values[i++] = reason.code().getBytes(StandardCharsets.UTF_8);
    if (droppedReason != null) {
      keys[i] = LlmdDroppedReason.HEADER;
      values[i++] = droppedReason;
    }
    if (retryAfterSeconds > 0) {
      keys[i] = RETRY_AFTER;
      values[i++] = Long.toString(retryAfterSeconds).getBytes(StandardCharsets.US_ASCII);
    }
    if (waitMillis >= 0) {
      keys[i] = X_SLUICE_PREDICTED_WAIT;
      values[i++] = Long.toString(waitMillis).getBytes(StandardCharsets.US_ASCII);
    }
    if (!reason.retryable()) { // OpenAI's and Anthropic's SDKs read it before the status
      keys[i] = X_SHOULD_RETRY;
      values[i++] = FALSE;
    }
    for (Map.Entry<String, String> h : more.entrySet()) {
      keys[i] = h.getKey().getBytes(StandardCharsets.US_ASCII);
      values[i++] = h.getValue().getBytes(StandardCharsets.UTF_8);
    }
    return Answer.encoded(
        AnswerEncoder.reject(
            entries,
            status,
            grpc ? grpcStatus(status) : -1,
            ("sluice_" + reason.code()).getBytes(StandardCharsets.UTF_8),
            errorBodyBytes(
                reason,
                status,
                retryAfterSeconds,
                waitMillis,
                message,
                detail == null ? Map.of() : detail.fields()),
            keys,
            values,
            metadata));
  }

  /**
   * The gRPC status code of a refusal with HTTP {@code status} (docs/envoy.md#proxyless-grpc): 429
   * (the tenant's own limits, or a class with {@code shedStatus: 429}) → RESOURCE_EXHAUSTED, 503
   * (saturation, queue, deadline, shutdown) → UNAVAILABLE, 400 → INVALID_ARGUMENT, 403 →
   * PERMISSION_DENIED, 404 (no route) → UNIMPLEMENTED, 409 (duplicate operation) → ALREADY_EXISTS,
   * 413 → RESOURCE_EXHAUSTED (as gRPC does for a message too large), 402 and 422 (a spent budget) →
   * FAILED_PRECONDITION (not to be retried as is), 504 (an upstream timeout) → DEADLINE_EXCEEDED;
   * anything else UNKNOWN. Never 0 (OK): a proxyless client would take the refusal for a successful
   * call.
   */
  static int grpcStatus(int status) {
    return switch (status) {
      case 429, 413 -> io.grpc.Status.Code.RESOURCE_EXHAUSTED.value();
      case 503 -> io.grpc.Status.Code.UNAVAILABLE.value();
      case 504 -> io.grpc.Status.Code.DEADLINE_EXCEEDED.value(); // an upstream timeout
      case 400 -> io.grpc.Status.Code.INVALID_ARGUMENT.value();
      case 403 -> io.grpc.Status.Code.PERMISSION_DENIED.value();
      case 404 -> io.grpc.Status.Code.UNIMPLEMENTED.value();
      case 409 -> io.grpc.Status.Code.ALREADY_EXISTS.value();
      case 402, 422 -> io.grpc.Status.Code.FAILED_PRECONDITION.value(); // a spent budget
      default -> io.grpc.Status.Code.UNKNOWN.value();
    };
  }

  private static final byte[] CONTENT_TYPE = "content-type".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] X_SLUICE_REASON =
      "x-sluice-reason".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] RETRY_AFTER = "retry-after".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] X_SLUICE_PREDICTED_WAIT =
      "x-sluice-predicted-wait-ms".getBytes(StandardCharsets.US_ASCII);

  /**
   * Sent {@code false} with a refusal that cannot succeed on retry ({@link Reason#retryable()}):
   * the OpenAI and Anthropic SDKs obey it before they look at the status, so a 429 {@code
   * budget_exhausted} is not retried by their default loop.
   */
  private static final byte[] X_SHOULD_RETRY = "x-should-retry".getBytes(StandardCharsets.US_ASCII);

  private static final byte[] FALSE = "false".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] APPLICATION_JSON =
      "application/json".getBytes(StandardCharsets.US_ASCII);

  static String errorType(int status) {
    if (status == 429) {
      return "rate_limited";
    }
    if (status == 503) {
      return "overloaded";
    }
    if (status == 402) {
      return "insufficient_quota"; // OpenAI's type for a spent billing quota
    }
    return "invalid_request";
  }

  /** The JSON error body of a refusal (OpenAI-style {@code error} object). */
  static byte[] errorBodyBytes(Reason reason, int status, long retryAfterSeconds, String message) {
    return errorBodyBytes(reason, status, retryAfterSeconds, -1, message, Map.of());
  }

  /**
   * As above, with {@code predicted_wait_ms} (the predicted wait or drain time behind the
   * Retry-After) when {@code waitMillis >= 0}, and the refusing check's {@code fields} (strings).
   */
  static byte[] errorBodyBytes(
      Reason reason,
      int status,
      long retryAfterSeconds,
      long waitMillis,
      String message,
      Map<String, String> fields) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      g.writeObjectFieldStart("error");
      g.writeStringField("type", errorType(status));
      g.writeStringField("code", reason.code());
      g.writeStringField("message", message);
      g.writeStringField("scope", reason.scope().code());
      g.writeNumberField("retry_after_seconds", retryAfterSeconds);
      if (!reason.retryable()) { // the same request cannot succeed before its limit renews
        g.writeBooleanField("retryable", false);
      }
      if (waitMillis >= 0) {
        g.writeNumberField("predicted_wait_ms", waitMillis);
      }
      for (Map.Entry<String, String> f : fields.entrySet()) {
        g.writeStringField(f.getKey(), f.getValue());
      }
      g.writeEndObject();
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }
}
