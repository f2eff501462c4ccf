package io.sluice.config;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The {@code telemetry} section (docs/telemetry.md): OpenTelemetry export of the admission's traces
 * and GenAI metrics over OTLP, and the correlation of each decision record with Envoy's access log.
 *
 * @param enabled export over OTLP (off by default: then no listener, nothing allocated per request)
 * @param correlation read Envoy's {@code x-request-id} and trace context into every decision record
 * @param endpoint the OTLP receiver ({@code http://host:4317} for gRPC)
 * @param protocol {@code grpc} or {@code http/protobuf}
 * @param headersEnv the environment variable holding the exporter's headers ({@code k=v,k2=v2});
 *     its value is never logged, printed or written to {@code /config}
 * @param samplingRatio the share of traces sampled at the root (0..1)
 * @param followParent whether a sampled (or unsampled) parent from Envoy decides instead
 * @param propagators the trace context formats read from the request: {@code tracecontext}, {@code
 *     b3}
 * @param traces export the admission spans
 * @param metrics export the GenAI and {@code sluice.*} metrics
 * @param exportInterval how often metrics are exported (and spans flushed at most)
 * @param resource resource attributes ({@code service.name} defaults to {@code sluice})
 */
public record TelemetryPolicy(
    boolean enabled,
    boolean correlation,
    String endpoint,
    String protocol,
    String headersEnv,
    double samplingRatio,
    boolean followParent,
    List<String> propagators,
    boolean traces,
    boolean metrics,
    Duration exportInterval,
    Map<String, String> resource) {
  public static final String GRPC = "grpc";
  public static final String HTTP_PROTOBUF = "http/protobuf";
  public static final String TRACECONTEXT = "tracecontext";
  public static final String B3 = "b3";

  public static final TelemetryPolicy DEFAULTS =
      new TelemetryPolicy(
          false,
          true,
          "http://localhost:4317",
          GRPC,
          "OTEL_EXPORTER_OTLP_HEADERS",
          0.01,
          true,
          List.of(TRACECONTEXT),
          true,
          true,
          Duration.ofSeconds(10),
          Map.of("service.name", "sluice"));

  public TelemetryPolicy {
    Objects.requireNonNull(endpoint, "endpoint");
    propagators = List.copyOf(propagators);
    resource = Map.copyOf(resource);
  }

  /** Whether B3 headers are read. */
  public boolean b3() {
    return propagators.contains(B3);
  }

  /** What the exporter is built from: a reload that keeps these keeps the exporter. */
  public Exporter exporter() {
    return new Exporter(endpoint, protocol, headersEnv, exportInterval, resource);
  }

  /** The settings the process's exporter is built from. */
  public record Exporter(
      String endpoint,
      String protocol,
      String headersEnv,
      Duration exportInterval,
      Map<String, String> resource) {}
}
