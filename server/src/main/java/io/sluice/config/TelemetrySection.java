package io.sluice.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The {@code telemetry} section (docs/telemetry.md): read and validated here, written back for
 * {@code /config}. Every error names its YAML path and the value expected. The exporter's headers
 * are never part of the section: it names the environment variable that holds them.
 */
public final class TelemetrySection implements ConfigSection<TelemetryPolicy> {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** The section, to read its value: {@code config.section(TelemetrySection.SECTION)}. */
  public static final TelemetrySection SECTION = new TelemetrySection();

  /** Envoy's request id ({@code x-request-id}): labels the decision record only. */
  public static final SluiceConfig.Signal REQUEST_ID = SluiceConfig.Signal.of("requestId");

  /** W3C trace context ({@code traceparent}): the parent of the admission's span. */
  public static final SluiceConfig.Signal TRACEPARENT = SluiceConfig.Signal.of("traceparent");

  /** W3C {@code tracestate}, carried into the span's context. */
  public static final SluiceConfig.Signal TRACESTATE = SluiceConfig.Signal.of("tracestate");

  /** B3 single header ({@code b3}). */
  public static final SluiceConfig.Signal B3 = SluiceConfig.Signal.of("b3");

  /** B3 multi headers ({@code x-b3-traceid}, {@code x-b3-spanid}, {@code x-b3-sampled}). */
  public static final SluiceConfig.Signal B3_TRACE_ID = SluiceConfig.Signal.of("b3TraceId");

  public static final SluiceConfig.Signal B3_SPAN_ID = SluiceConfig.Signal.of("b3SpanId");
  public static final SluiceConfig.Signal B3_SAMPLED = SluiceConfig.Signal.of("b3Sampled");

  /** The header each trace signal is read from unless {@code signals:} names another source. */
  public static final Map<String, String> HEADERS =
      Map.of(
          REQUEST_ID.key(), "x-request-id",
          TRACEPARENT.key(), "traceparent",
          TRACESTATE.key(), "tracestate",
          B3.key(), "b3",
          B3_TRACE_ID.key(), "x-b3-traceid",
          B3_SPAN_ID.key(), "x-b3-spanid",
          B3_SAMPLED.key(), "x-b3-sampled");

  private static final Set<String> KEYS =
      Set.of(
          "enabled",
          "correlation",
          "endpoint",
          "protocol",
          "headersEnv",
          "sampling",
          "propagators",
          "traces",
          "metrics",
          "exportInterval",
          "resource");

  /** Registered in {@code META-INF/services/io.sluice.config.ConfigSection}. */
  public TelemetrySection() {}

  @Override
  public String name() {
    return "telemetry";
  }

  @Override
  public TelemetryPolicy defaults() {
    return TelemetryPolicy.DEFAULTS;
  }

  @Override
  public List<SluiceConfig.Signal> declaredSignals() {
    return List.of(REQUEST_ID, TRACEPARENT, TRACESTATE, B3, B3_TRACE_ID, B3_SPAN_ID, B3_SAMPLED);
  }

  /**
   * Nothing when telemetry and correlation are both off (no header read, nothing allocated); the
   * request id and trace context for correlation; B3's headers only when {@code b3} is a
   * propagator.
   */
  @Override
  public Set<String> signals(TelemetryPolicy p) {
    if (!p.enabled() && !p.correlation()) {
      return Set.of();
    }
    Set<String> keys = new LinkedHashSet<>();
    keys.add(REQUEST_ID.key());
    if (p.propagators().contains(TelemetryPolicy.TRACECONTEXT)) {
      keys.add(TRACEPARENT.key());
      if (p.enabled()) {
        keys.add(TRACESTATE.key());
      }
    }
    if (p.b3()) {
      keys.addAll(List.of(B3.key(), B3_TRACE_ID.key(), B3_SPAN_ID.key(), B3_SAMPLED.key()));
    }
    return keys;
  }

  /**
   * With export off, what correlation reads (the request id, the trace id's headers) labels the
   * decision record only; with export on, the span reads them too.
   */
  @Override
  public Set<String> recordSignals(TelemetryPolicy p) {
    return p.enabled() ? Set.of() : signals(p);
  }

  /** {@code tracestate} only beside a {@code traceparent} (W3C: no parent, no state to carry). */
  @Override
  public Map<String, String> signalsBeside() {
    return Map.of(TRACESTATE.key(), TRACEPARENT.key());
  }

  /**
   * What Envoy forwards: a client can only mislabel its own request's trace (Envoy sets {@code
   * x-request-id} and the trace headers itself when it traces).
   */
  @Override
  public Map<String, String> signalHeaders() {
    return HEADERS;
  }

  @Override
  public TelemetryPolicy read(Node n, Refs refs) {
    TelemetryPolicy d = TelemetryPolicy.DEFAULTS;
    n.only(KEYS);
    boolean enabled = n.get("enabled").bool(d.enabled());
    boolean correlation = n.get("correlation").bool(d.correlation());
    String endpoint = n.get("endpoint").string(d.endpoint());
    if (!endpoint(endpoint)) {
      n.get("endpoint").invalid(endpoint, "an http:// or https:// URL with a host");
      endpoint = d.endpoint();
    }
    String protocol = n.get("protocol").string(d.protocol());
    if (!protocol.equals(TelemetryPolicy.GRPC) && !protocol.equals(TelemetryPolicy.HTTP_PROTOBUF)) {
      n.get("protocol").invalid(protocol, "grpc or http/protobuf");
      protocol = d.protocol();
    }
    String headersEnv = n.get("headersEnv").string(d.headersEnv());
    if (!headersEnv.matches("[A-Za-z_][A-Za-z0-9_]*")) {
      n.get("headersEnv").invalid(headersEnv, "an environment variable's name");
      headersEnv = d.headersEnv();
    }
    Node s = n.get("sampling").only(Set.of("ratio", "followParent"));
    double ratio = s.get("ratio").doubleValue(d.samplingRatio(), 0, 1);
    boolean followParent = s.get("followParent").bool(d.followParent());
    List<String> propagators = new ArrayList<>();
    if (n.get("propagators").present()) {
      for (Node p : n.get("propagators").items()) {
        String v = p.string("");
        if (!v.equals(TelemetryPolicy.TRACECONTEXT) && !v.equals(TelemetryPolicy.B3)) {
          p.invalid(v, "tracecontext or b3");
        } else if (!propagators.contains(v)) {
          propagators.add(v);
        }
      }
    } else {
      propagators.addAll(d.propagators());
    }
    Duration interval = n.get("exportInterval").duration(d.exportInterval());
    if (interval.compareTo(Duration.ofSeconds(1)) < 0
        || interval.compareTo(Duration.ofMinutes(10)) > 0) {
      n.get("exportInterval").invalid(ConfigWriter.duration(interval), "a duration in 1s..10m");
      interval = d.exportInterval();
    }
    Map<String, String> resource = new LinkedHashMap<>(d.resource());
    n.get("resource").entries().forEach((k, v) -> resource.put(k, v.string("")));
    return new TelemetryPolicy(
        enabled,
        correlation,
        endpoint,
        protocol,
        headersEnv,
        ratio,
        followParent,
        propagators,
        n.get("traces").bool(d.traces()),
        n.get("metrics").bool(d.metrics()),
        interval,
        resource);
  }

  private static boolean endpoint(String v) {
    try {
      URI u = new URI(v);
      return ("http".equals(u.getScheme()) || "https".equals(u.getScheme())) && u.getHost() != null;
    } catch (java.net.URISyntaxException e) {
      return false;
    }
  }

  /** The section as the loader reads it (the headers' variable by name, never its value). */
  @Override
  public ObjectNode write(TelemetryPolicy p) {
    ObjectNode n = MAPPER.createObjectNode();
    n.put("enabled", p.enabled())
        .put("correlation", p.correlation())
        .put("endpoint", p.endpoint())
        .put("protocol", p.protocol())
        .put("headersEnv", p.headersEnv());
    n.putObject("sampling").put("ratio", p.samplingRatio()).put("followParent", p.followParent());
    ArrayNode props = n.putArray("propagators");
    p.propagators().forEach(props::add);
    n.put("traces", p.traces())
        .put("metrics", p.metrics())
        .put("exportInterval", ConfigWriter.duration(p.exportInterval()));
    ObjectNode r = n.putObject("resource");
    new java.util.TreeMap<>(p.resource()).forEach(r::put);
    return n;
  }
}
