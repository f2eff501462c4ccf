package io.sluice.feature.telemetry;

import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.extension.trace.propagation.B3Propagator;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.sluice.config.TelemetryPolicy;
import io.sluice.config.TelemetrySection;
import io.sluice.feature.Contributions;
import io.sluice.feature.Feature;
import io.sluice.feature.FeatureSnapshot;
import io.sluice.observability.Correlation;
import io.sluice.observability.OtelRecorder;
import io.sluice.observability.TelemetryExport;
import io.sluice.observability.TraceSampling;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * OpenTelemetry export and correlation (docs/telemetry.md), registered in one place: its section
 * ({@link TelemetrySection}, {@code telemetry}), the decision record's correlation fields ({@link
 * Correlation}: Envoy's request id and trace id, while {@code telemetry.correlation}) and, while
 * {@code telemetry.enabled}, the listener that exports spans and metrics over OTLP ({@link
 * OtelRecorder}) on the process's SDK ({@link TelemetryExport}). Off, it adds nothing to a request:
 * no listener, no signal read.
 */
public final class TelemetryFeature implements Feature {
  @Override
  public void contribute(FeatureSnapshot s, Contributions out) {
    TelemetryPolicy p = s.config().section(TelemetrySection.SECTION);
    if (p.correlation()) {
      out.recordPart(
          new Correlation(
              TelemetrySection.REQUEST_ID.key(),
              TelemetrySection.TRACEPARENT.key(),
              p.b3() ? TelemetrySection.B3.key() : null,
              p.b3() ? TelemetrySection.B3_TRACE_ID.key() : null));
    }
    if (!p.enabled()) {
      return;
    }
    TelemetryExport export = s.metrics().part(TelemetryExport.class, TelemetryExport::inert);
    OpenTelemetrySdk sdk = export.open(p, s.metrics().registry());
    if (sdk == null) { // the warm-up's, or nothing to export
      return;
    }
    out.listener(
        new OtelRecorder(
            sdk, p.traces(), export.histograms(), propagator(p), headers(p), sampling(p)));
  }

  /** Which requests get a span: the policy's ratio, the parent's decision where it follows it. */
  static TraceSampling sampling(TelemetryPolicy p) {
    return new TraceSampling(
        p.samplingRatio(),
        p.followParent(),
        p.propagators().contains(TelemetryPolicy.TRACECONTEXT)
            ? TelemetrySection.TRACEPARENT.key()
            : null,
        p.b3() ? TelemetrySection.B3.key() : null,
        p.b3() ? TelemetrySection.B3_TRACE_ID.key() : null,
        p.b3() ? TelemetrySection.B3_SAMPLED.key() : null);
  }

  /** The propagators the policy names, W3C first. */
  static TextMapPropagator propagator(TelemetryPolicy p) {
    List<TextMapPropagator> all = new ArrayList<>();
    if (p.propagators().contains(TelemetryPolicy.TRACECONTEXT)) {
      all.add(W3CTraceContextPropagator.getInstance());
    }
    if (p.b3()) {
      all.add(B3Propagator.injectingSingleHeader());
    }
    return TextMapPropagator.composite(all);
  }

  /** The header each propagator reads, to the signal it is read into. */
  static Map<String, String> headers(TelemetryPolicy p) {
    Map<String, String> out = new LinkedHashMap<>();
    TelemetrySection.HEADERS.forEach(
        (key, header) -> {
          if (TelemetrySection.SECTION.signals(p).contains(key)) {
            out.put(header, key);
          }
        });
    return out;
  }
}
