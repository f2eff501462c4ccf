package io.sluice.extproc;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.sluice.config.UpstreamErrorsPolicy;
import io.sluice.config.UpstreamErrorsSection;
import io.sluice.core.adapt.AnswerSource;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.Subject;
import io.sluice.observability.UpstreamFailureMetrics;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The upstream's own failure of an admitted request, answered at its response headers in Sluice's
 * typed shape (docs/envoy.md, "Typed upstream failures"): an upstream 429 ({@code
 * upstream_rate_limited}), 502/503 ({@code upstream_unavailable}), 529 ({@code
 * upstream_overloaded}), 504 ({@code upstream_timeout}), or an Envoy local reply for an upstream
 * reset or timeout when one reaches ext_proc (its {@code response.code_details}; Envoy 1.34+ sends
 * local replies to no ext_proc server, so the shipped {@code local_reply_config} types those).
 *
 * <p>With {@code upstreamErrors.rewrite} (the default) the client gets an ImmediateResponse that
 * replaces the upstream's answer: status 429, 503 or 504, {@code x-sluice-reason}, {@code
 * retry-after} (whole seconds, at least the upstream's and at least {@code retryAfter}), {@code
 * x-sluice-upstream-status}, and the JSON error with scope {@code upstream} and {@code retryable:
 * true}. With {@code keepProviderBody} the upstream's status and body stay and only those headers
 * are added. Either way the request was admitted and ran: its permit, charge and what the pool
 * learns from the status are those of any upstream error (the stream releases at these headers).
 *
 * <p>A gRPC upstream fails with HTTP 200 and a {@code grpc-status}: in the response headers of a
 * trailers-only answer, read as the HTTP status Envoy maps it to ({@link #status}: 8
 * RESOURCE_EXHAUSTED as 429, 14 UNAVAILABLE as 503, 4 DEADLINE_EXCEEDED as 504) and typed as above
 * (the client gets a trailers-only answer with that gRPC status); or in the response trailers after
 * a 200 and a body ({@code response_trailer_mode: SEND}), where the status and body have reached
 * the client: the trailers get {@code x-sluice-reason}, {@code retry-after} and {@code
 * x-sluice-upstream-grpc-status} ({@link #trailers}), and the pool learns the mapped status as it
 * does from a trailers-only answer.
 */
final class UpstreamFailures {
  private static final JsonFactory JSON = new JsonFactory();

  private UpstreamFailures() {}

  /** The kinds, by the client's status and the reason code. */
  enum Kind {
    RATE_LIMITED(Reason.UPSTREAM_RATE_LIMITED, 429, "rate_limited"),
    UNAVAILABLE(Reason.UPSTREAM_UNAVAILABLE, 503, "overloaded"),
    OVERLOADED(Reason.UPSTREAM_OVERLOADED, 503, "overloaded"),
    TIMEOUT(Reason.UPSTREAM_TIMEOUT, 504, "overloaded"),
    RESET(Reason.UPSTREAM_RESET, 503, "overloaded");

    final Reason reason;
    final int status;
    final String type;

    Kind(Reason reason, int status, String type) {
      this.reason = reason;
      this.status = status;
      this.type = type;
    }

    String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * The kind of a response with {@code status} from {@code source}; {@code details}: Envoy's {@code
   * response.code_details} when the filter sends it (null otherwise). Null: not an upstream failure
   * (a success, a client error, Envoy's rate-limit filter or overload manager, Sluice's own).
   */
  static @Nullable Kind kind(int status, AnswerSource source, @Nullable String details) {
    if (source == AnswerSource.UPSTREAM) {
      return switch (status) {
        case 429 -> Kind.RATE_LIMITED;
        case 502, 503 -> Kind.UNAVAILABLE;
        case 529 -> Kind.OVERLOADED;
        case 504 -> Kind.TIMEOUT;
        default -> null;
      };
    }
    if (source != AnswerSource.ENVOY_LOCAL || details == null) {
      return null;
    }
    if (details.startsWith("upstream_reset") || details.startsWith("upstream_connect")) {
      return Kind.RESET;
    }
    if (details.startsWith("upstream_response_timeout")
        || details.startsWith("upstream_per_try_timeout")
        || details.startsWith("upstream_max_stream_duration_reached")) {
      return Kind.TIMEOUT;
    }
    return details.startsWith("no_healthy_upstream") ? Kind.UNAVAILABLE : null;
  }

  /**
   * The status of response headers {@code h} as Sluice reads it: {@code :status} (0 when absent: a
   * proxyless client's), and for a gRPC request's trailers-only failure (a {@code grpc-status}
   * Sluice types, after a 200 or with no {@code :status} at all, as a proxyless client sends the
   * trailers of a call that failed before any message) the HTTP status Envoy maps that gRPC status
   * to.
   */
  static int status(Inbound h, boolean grpc) {
    int status = (int) EnvoyRequest.parseLong(header(h, ":status", STATUS_KEY, "200"), 0);
    return grpc && (status == 200 || status == 0)
        ? grpcAsHttp(h.header("grpc-status"), status)
        : status;
  }

  /**
   * The first value of header {@code name} as {@link Inbound#header} reads it, and {@code usual}
   * itself when the value is exactly that: a response's usual {@code :status} and {@code
   * content-type} make no String per response.
   */
  static @Nullable String header(Inbound h, String name, String usual) {
    return header(h, name, HeaderKeys.utf8(name), usual);
  }

  // the names read from every response's headers, encoded once (no lookup per response)
  private static final byte[] STATUS_KEY = ":status".getBytes(StandardCharsets.UTF_8);
  private static final byte[] CONTENT_TYPE_KEY = "content-type".getBytes(StandardCharsets.UTF_8);

  /** The response's {@code content-type} as {@link #header} reads it (its usual: JSON). */
  static @Nullable String contentType(Inbound h) {
    return header(h, "content-type", CONTENT_TYPE_KEY, "application/json");
  }

  /** {@link #header} with {@code key}, {@code name}'s UTF-8 bytes. */
  private static @Nullable String header(Inbound h, String name, byte[] key, String usual) {
    if (!h.fromWire()) {
      return h.header(name);
    }
    for (int i = 0; i < h.headerCount(); i++) {
      if (h.keyEquals(i, key)) {
        return h.value(i, usual);
      }
    }
    return null;
  }

  /** 8 RESOURCE_EXHAUSTED as 429, 14 UNAVAILABLE as 503, 4 DEADLINE_EXCEEDED as 504; else none. */
  static int grpcAsHttp(@Nullable String grpcStatus, int none) {
    if (grpcStatus == null) {
      return none;
    }
    return switch (grpcStatus.trim()) {
      case "8" -> 429;
      case "14" -> 503;
      case "4" -> 504;
      default -> none;
    };
  }

  /**
   * The answer to response headers {@code h} with {@code status}, when they carry an upstream
   * failure Sluice types; null otherwise (the stream answers as it would have). Counted by kind.
   */
  static @Nullable Answer answer(
      AdmissionRuntime rt, AdmissionSession s, Inbound h, int status, boolean grpc) {
    if (status < 400) {
      return null;
    }
    Kind kind = kind(status, AnswerSources.classify(h, status), AnswerSources.codeDetails(h));
    if (kind == null) {
      return null;
    }
    String grpcStatus = h.header("grpc-status"); // a gRPC upstream's, trailers-only
    UpstreamErrorsPolicy.Rule rule = rule(rt, s.subject());
    count(
        rt,
        s.subject(),
        kind,
        !rule.rewrite() ? "passed" : rule.keepProviderBody() ? "annotated" : "typed");
    if (!rule.rewrite()) {
      return null;
    }
    long retryAfter = retryAfter(rt, h::header, rule);
    Map<String, String> headers = headers(s, kind, status, grpcStatus, retryAfter);
    if (rule.keepProviderBody()) {
      return Responses.continueResponseHeaders(headers);
    }
    if (!grpc) {
      headers.put("content-type", "application/json");
    }
    Subject subject = s.subject();
    String message =
        "the upstream of pool "
            + subject.pool().name()
            + switch (kind) {
              case RESET -> " reset the request before answering";
              case TIMEOUT -> " did not answer in time (" + status + ")";
              default -> " answered " + status;
            }
            + (grpcStatus == null ? "" : " (gRPC status " + grpcStatus.trim() + ")");
    return Answer.encoded(
        AnswerEncoder.reject(
            rt.tables().answerEntries(),
            kind.status,
            grpc ? Responses.grpcStatus(kind.status) : -1,
            ("sluice_" + kind.reason.code()).getBytes(StandardCharsets.UTF_8),
            body(kind, status, retryAfter, message),
            HeaderKeys.keys(headers),
            HeaderKeys.values(headers),
            metadata(s, kind)));
  }

  /**
   * The answer to response trailers {@code t}: a gRPC upstream's failure after its 200 (a {@code
   * grpc-status} Sluice types) gets Sluice's headers among the trailers (the status and body have
   * reached the client: nothing is replaced), counted by kind as {@code annotated} ({@code passed}
   * with {@code rewrite: false}); anything else continues as it was.
   */
  static Answer trailers(AdmissionRuntime rt, AdmissionSession s, Inbound t) {
    List<HeaderValue> trailers = t.message().getResponseTrailers().getTrailers().getHeadersList();
    String grpcStatus = EnvoySignals.find(trailers, "grpc-status");
    int status = grpcAsHttp(grpcStatus, 0);
    Kind kind = kind(status, AnswerSource.UPSTREAM, null);
    if (kind == null) {
      return Responses.CONTINUE_RESPONSE_TRAILERS;
    }
    Function<String, @Nullable String> upstream = name -> EnvoySignals.find(trailers, name);
    // the pool learns it as a trailers-only failure's, whatever the client is answered
    s.running().failedAfterHeaders(status, UpstreamRetryAfter.nanos(upstream, rt.clock()));
    UpstreamErrorsPolicy.Rule rule = rule(rt, s.subject());
    count(rt, s.subject(), kind, rule.rewrite() ? "annotated" : "passed");
    if (!rule.rewrite()) {
      return Responses.CONTINUE_RESPONSE_TRAILERS;
    }
    long retryAfter = retryAfter(rt, upstream, rule);
    return Responses.continueResponseTrailers(headers(s, kind, status, grpcStatus, retryAfter));
  }

  private static UpstreamErrorsPolicy.Rule rule(AdmissionRuntime rt, Subject subject) {
    return rt.config()
        .section(UpstreamErrorsSection.SECTION)
        .rule(subject.pool().name(), subject.route());
  }

  private static void count(AdmissionRuntime rt, Subject subject, Kind kind, String answer) {
    rt.metrics()
        .part(UpstreamFailureMetrics.class, UpstreamFailureMetrics::new)
        .failure(subject.pool().name(), kind.label(), answer);
  }

  /** Whole seconds: at least the upstream's ({@code upstream} reads its headers) and the rule's. */
  private static long retryAfter(
      AdmissionRuntime rt,
      Function<String, @Nullable String> upstream,
      UpstreamErrorsPolicy.Rule rule) {
    long upstreamNanos = UpstreamRetryAfter.nanos(upstream, rt.clock());
    return Math.max(
        rule.retryAfter().toSeconds(),
        upstreamNanos < 0 ? 0 : (upstreamNanos + 999_999_999L) / 1_000_000_000L);
  }

  /**
   * Sluice's headers of a typed failure: the disclosed ones, {@code x-sluice-reason}, {@code
   * retry-after}, {@code x-sluice-upstream-status} and, from a gRPC upstream, {@code
   * x-sluice-upstream-grpc-status}.
   */
  private static Map<String, String> headers(
      AdmissionSession s, Kind kind, int status, @Nullable String grpcStatus, long retryAfter) {
    Map<String, String> headers = new LinkedHashMap<>(DecisionAnswers.responseHeaders(s.running()));
    headers.put("x-sluice-reason", kind.reason.code());
    headers.put("retry-after", Long.toString(retryAfter));
    headers.put("x-sluice-upstream-status", Integer.toString(status));
    if (grpcStatus != null) {
      headers.put("x-sluice-upstream-grpc-status", grpcStatus.trim());
    }
    return headers;
  }

  /** The JSON error: Sluice's refusal shape, scope {@code upstream}, retryable. */
  static byte[] body(Kind kind, int upstreamStatus, long retryAfterSeconds, String message) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      g.writeObjectFieldStart("error");
      g.writeStringField("type", kind.type);
      g.writeStringField("code", kind.reason.code());
      g.writeStringField("message", message);
      g.writeStringField("scope", Reason.Scope.UPSTREAM.code());
      g.writeNumberField("retry_after_seconds", retryAfterSeconds);
      g.writeBooleanField("retryable", true);
      g.writeNumberField("upstream_status", upstreamStatus);
      g.writeEndObject();
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  /** The request's {@code sluice} metadata as admitted, plus {@code upstream_error: <code>}. */
  private static AnswerEncoder.DecisionFields metadata(AdmissionSession s, Kind kind) {
    Subject r = s.subject();
    TokenEstimate e = s.estimate();
    boolean degraded = s.running().plan().rung() != null;
    return new AnswerEncoder.DecisionFields(
        true,
        r.tenant().id(),
        r.tenant().tier().name(),
        r.requestClass().name(),
        r.pool().name(),
        r.route(),
        degraded ? "degrade" : "admit",
        degraded ? Reason.DEGRADED.code() : Reason.ADMITTED.code(),
        e != null,
        e != null ? e.inputTokens() : 0,
        e != null ? e.outputReserveTokens() : 0,
        e != null ? s.workUnits() : 0,
        null,
        null,
        AnswerEncoder.stringEntry("upstream_error", kind.reason.code()));
  }
}
