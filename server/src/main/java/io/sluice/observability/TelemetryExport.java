package io.sluice.observability;

import io.micrometer.core.instrument.MeterRegistry;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.exporter.otlp.http.metrics.OtlpHttpMetricExporter;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter;
import io.opentelemetry.exporter.otlp.metrics.OtlpGrpcMetricExporter;
import io.opentelemetry.exporter.otlp.trace.OtlpGrpcSpanExporter;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.OpenTelemetrySdkBuilder;
import io.opentelemetry.sdk.metrics.ExemplarFilter;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.export.MetricExporter;
import io.opentelemetry.sdk.metrics.export.PeriodicMetricReader;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import io.sluice.config.TelemetryPolicy;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The process's OpenTelemetry SDK (docs/telemetry.md): built when a snapshot first turns {@code
 * telemetry.enabled} on, kept across reloads that keep its settings, rebuilt (the old one flushed
 * and shut down) when they change, shut down at the drain. The exporter's headers are read from the
 * environment variable {@code telemetry.headersEnv} names and never logged.
 *
 * <p>One per process metrics ({@code AdmissionMetrics.part}): made by {@link #inert} when nobody
 * installed the live one (the warm-up's own metrics, tools, tests), which exports nothing, so the
 * warm-up's synthetic requests never reach a collector.
 */
public final class TelemetryExport implements AutoCloseable {
  private final @Nullable Map<String, String> env;
  private @Nullable Settings current;
  private @Nullable OpenTelemetrySdk sdk;
  private @Nullable OtelHistograms histograms;

  private TelemetryExport(@Nullable Map<String, String> env) {
    this.env = env == null ? null : Map.copyOf(env);
  }

  /** One that never exports ({@code AdmissionMetrics.part}'s default). */
  public static TelemetryExport inert(MeterRegistry registry, LongSupplier tickerNanos) {
    return new TelemetryExport(null);
  }

  /** The live server's: exports with the headers read from {@code env}. */
  public static TelemetryExport live(Map<String, String> env) {
    return new TelemetryExport(env);
  }

  /** What the SDK is built from: a reload that keeps these keeps the SDK. */
  private record Settings(TelemetryPolicy.Exporter exporter, boolean traces, boolean metrics) {}

  /**
   * The SDK for {@code policy}, or null when this one is inert or the policy exports nothing.
   * Called once per snapshot (start, reload). A new SDK's counters read {@code registry}'s meters
   * when it exports ({@link OtelCounters}).
   */
  public synchronized @Nullable OpenTelemetrySdk open(
      TelemetryPolicy policy, MeterRegistry registry) {
    Map<String, String> e = env;
    if (e == null || !policy.enabled() || (!policy.traces() && !policy.metrics())) {
      return null;
    }
    Settings s = new Settings(policy.exporter(), policy.traces(), policy.metrics());
    OpenTelemetrySdk now = sdk;
    if (now != null && s.equals(current)) {
      return now;
    }
    if (now != null) {
      now.close(); // flushes what the old one batched
    }
    OtelHistograms h = s.metrics() ? new OtelHistograms(TelemetryExport::epochNanos) : null;
    now = build(s, headers(e.get(policy.headersEnv())), h);
    if (s.metrics()) {
      OtelCounters.register(now.getMeter(OtelRecorder.SCOPE), registry);
    }
    sdk = now;
    histograms = h;
    current = s;
    return now;
  }

  /**
   * The histograms the running SDK exports (recorded per request by {@link OtelRecorder}), or null
   * when it exports no metrics. A new SDK (settings changed) starts new ones.
   */
  public synchronized @Nullable OtelHistograms histograms() {
    return histograms;
  }

  private static long epochNanos() {
    java.time.Instant t = java.time.Instant.now();
    return t.getEpochSecond() * 1_000_000_000L + t.getNano();
  }

  /** Whether an SDK is running (tests, {@code /config}). */
  public synchronized boolean running() {
    return sdk != null;
  }

  @Override
  public synchronized void close() {
    OpenTelemetrySdk now = sdk;
    sdk = null;
    histograms = null;
    current = null;
    if (now != null) {
      now.shutdown().join(5, TimeUnit.SECONDS);
    }
  }

  private static OpenTelemetrySdk build(
      Settings s, Map<String, String> headers, @Nullable OtelHistograms histograms) {
    TelemetryPolicy.Exporter x = s.exporter();
    AttributesBuilder attrs = Attributes.builder();
    x.resource().forEach(attrs::put);
    Resource resource = Resource.getDefault().merge(Resource.create(attrs.build()));
    OpenTelemetrySdkBuilder b = OpenTelemetrySdk.builder();
    boolean grpc = x.protocol().equals(TelemetryPolicy.GRPC);
    String base = x.endpoint().endsWith("/") ? x.endpoint() : x.endpoint() + "/";
    if (s.traces()) {
      SpanExporter spans;
      if (grpc) {
        var eb = OtlpGrpcSpanExporter.builder().setEndpoint(x.endpoint());
        headers.forEach(eb::addHeader);
        spans = eb.build();
      } else {
        var eb = OtlpHttpSpanExporter.builder().setEndpoint(base + "v1/traces");
        headers.forEach(eb::addHeader);
        spans = eb.build();
      }
      // sampled before the span is built (TraceSampling): the SDK records all it is handed
      b.setTracerProvider(
          SdkTracerProvider.builder()
              .setResource(resource)
              .setSampler(Sampler.alwaysOn())
              .addSpanProcessor(
                  BatchSpanProcessor.builder(spans)
                      .setScheduleDelay(x.exportInterval().toMillis(), TimeUnit.MILLISECONDS)
                      .build())
              .build());
    }
    if (s.metrics()) {
      MetricExporter metrics;
      if (grpc) {
        var eb = OtlpGrpcMetricExporter.builder().setEndpoint(x.endpoint());
        headers.forEach(eb::addHeader);
        metrics = eb.build();
      } else {
        var eb = OtlpHttpMetricExporter.builder().setEndpoint(base + "v1/metrics");
        headers.forEach(eb::addHeader);
        metrics = eb.build();
      }
      var mb =
          SdkMeterProvider.builder()
              .setResource(resource)
              // no span is current while a request's metrics are recorded: no exemplar to look for
              .setExemplarFilter(ExemplarFilter.alwaysOff())
              .registerMetricReader(
                  PeriodicMetricReader.builder(metrics).setInterval(x.exportInterval()).build());
      if (histograms != null) { // read when the reader exports; nothing per request in the SDK
        mb.registerMetricProducer(histograms);
      }
      b.setMeterProvider(mb.build());
    }
    return b.build();
  }

  /**
   * The exporter's headers from the variable's value ({@code k=v,k2=v2}, values URL-encoded as
   * {@code OTEL_EXPORTER_OTLP_HEADERS}); a malformed entry is skipped (its text is never shown).
   */
  static Map<String, String> headers(@Nullable String value) {
    Map<String, String> out = new LinkedHashMap<>();
    if (value == null || value.isBlank()) {
      return out;
    }
    for (String part : value.split(",", -1)) {
      int eq = part.indexOf('=');
      if (eq <= 0) {
        continue;
      }
      try {
        out.put(
            URLDecoder.decode(part.substring(0, eq).trim(), StandardCharsets.UTF_8),
            URLDecoder.decode(part.substring(eq + 1).trim(), StandardCharsets.UTF_8));
      } catch (IllegalArgumentException e) {
        // skipped: the entry may hold a secret, so it is not echoed
      }
    }
    return out;
  }
}
