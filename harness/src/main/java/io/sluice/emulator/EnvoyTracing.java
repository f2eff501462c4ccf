package io.sluice.emulator;

import io.sluice.upstream.HttpHeaders;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Envoy's HTTP tracing as the ext_proc filter meets it: the connection manager's {@code tracing}
 * with the OpenTelemetry tracer (W3C trace context), every request sampled (Envoy's default {@code
 * random_sampling} 100 %). Per request the connection manager starts its span ({@value #INGRESS}),
 * a child of the client's {@code traceparent} when it sent a valid one, else the root of a new
 * trace; the ext_proc filter's gRPC client starts a child of that span for its stream ({@value
 * #EXT_PROC}) and injects that child's context into the stream's initial metadata as {@code
 * traceparent} (Envoy's {@code Grpc::AsyncStreamImpl} with the filter's parent span). The request
 * headers the processor receives keep the client's own {@code traceparent} (Envoy injects its span
 * into request headers only at the router, after the filter).
 *
 * <p>The spans Envoy would report are kept here ({@link #spans()}), tagged with the request's
 * {@code x-request-id} as Envoy tags them ({@code guid:x-request-id}), for a test to compare with
 * what the processor reported.
 */
public final class EnvoyTracing {
  /** The connection manager's span's operation name (Envoy's default for a downstream request). */
  public static final String INGRESS = "ingress";

  /** The ext_proc stream's span: Envoy's gRPC client names it "async {service.method} egress". */
  public static final String EXT_PROC =
      "async envoy.service.ext_proc.v3.ExternalProcessor.Process egress";

  /**
   * A span Envoy reported.
   *
   * @param name operation name
   * @param traceId 32 lower-case hex digits
   * @param spanId 16 lower-case hex digits
   * @param parentSpanId 16 lower-case hex digits, or empty for a root span
   * @param requestId the request's {@code x-request-id}
   */
  public record Span(
      String name, String traceId, String spanId, String parentSpanId, String requestId) {}

  private final List<Span> spans = new CopyOnWriteArrayList<>();

  /** Every span Envoy started so far, in order. */
  public List<Span> spans() {
    return List.copyOf(spans);
  }

  /** The ext_proc stream's span of the request {@code requestId}. */
  public Optional<Span> extProcSpan(String requestId) {
    return spans.stream()
        .filter(s -> s.name().equals(EXT_PROC) && s.requestId().equals(requestId))
        .findFirst();
  }

  /**
   * Starts the request's spans and returns the {@code traceparent} Envoy's gRPC client puts in the
   * ext_proc stream's initial metadata.
   */
  String begin(HttpHeaders requestHeaders) {
    String requestId = requestHeaders.first("x-request-id").orElse("");
    String client = requestHeaders.first("traceparent").orElse("");
    String traceId;
    String parent;
    if (valid(client)) {
      traceId = client.substring(3, 35);
      parent = client.substring(36, 52);
    } else {
      traceId = id(32);
      parent = "";
    }
    String ingress = id(16);
    String extProc = id(16);
    spans.add(new Span(INGRESS, traceId, ingress, parent, requestId));
    spans.add(new Span(EXT_PROC, traceId, extProc, ingress, requestId));
    return "00-" + traceId + "-" + extProc + "-01";
  }

  /** A version-00 W3C traceparent with non-zero lower-case hex ids (what Envoy's tracer reads). */
  static boolean valid(String tp) {
    if (tp.length() != 55
        || !tp.startsWith("00-")
        || tp.charAt(35) != '-'
        || tp.charAt(52) != '-'
        || !hex(tp.substring(3, 35))
        || !hex(tp.substring(36, 52))
        || !hex(tp.substring(53))) {
      return false;
    }
    return !tp.substring(3, 35).matches("0+") && !tp.substring(36, 52).matches("0+");
  }

  private static boolean hex(String s) {
    return s.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  }

  private static String id(int digits) {
    StringBuilder b = new StringBuilder(digits);
    ThreadLocalRandom r = ThreadLocalRandom.current();
    while (b.length() < digits) {
      b.append(Character.forDigit(r.nextInt(16), 16));
    }
    return b.charAt(0) == '0' ? "1" + b.substring(1) : b.toString(); // never all zeros
  }
}
