package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import io.opentelemetry.sdk.trace.samplers.SamplingDecision;
import io.sluice.core.session.Signals;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * {@link TraceSampling} decides from the headers' text what OpenTelemetry's samplers decide from
 * the extracted context ({@code parentbased_traceidratio}, {@code traceidratio}), without building
 * the context.
 */
class TraceSamplingTest {
  private static final String TP = "traceparent";

  private static TraceSampling w3c(double ratio, boolean followParent) {
    return new TraceSampling(ratio, followParent, TP, null, null, null);
  }

  @Test
  void w3cParents_decideAsTheSdksSamplers() {
    Random r = new Random(42);
    for (double ratio : new double[] {0.0, 0.01, 0.5, 1.0}) {
      for (boolean follow : new boolean[] {true, false}) {
        Sampler sdk =
            follow
                ? Sampler.parentBased(Sampler.traceIdRatioBased(ratio))
                : Sampler.traceIdRatioBased(ratio);
        TraceSampling ours = w3c(ratio, follow);
        for (int i = 0; i < 2_000; i++) {
          byte[] trace = new byte[16];
          byte[] parent = new byte[8];
          r.nextBytes(trace);
          r.nextBytes(parent);
          String tp =
              "00-"
                  + HexFormat.of().formatHex(trace)
                  + "-"
                  + HexFormat.of().formatHex(parent)
                  + (r.nextBoolean() ? "-01" : "-00");
          assertThat(ours.sampled(Signals.of(TP, tp)))
              .as("%s ratio %s follow %s", tp, ratio, follow)
              .isEqualTo(sdkSamples(sdk, tp));
        }
      }
    }
  }

  @Test
  void traceparentValidity_isTheW3cPropagators() {
    for (String tp :
        List.of(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "00-4bf92f3577b34da6a3ce929d0e0e4736x00f067aa0ba902b7-01",
            "garbage")) {
      boolean valid = Span.fromContext(extract(tp)).getSpanContext().isValid();
      assertThat(TraceSampling.validTraceparent(tp)).as(tp).isEqualTo(valid);
    }
  }

  @Test
  void followedParent_decidesWhateverTheRatio() {
    String sampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    String unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
    assertThat(w3c(0.0, true).sampled(Signals.of(TP, sampled))).isTrue();
    assertThat(w3c(1.0, true).sampled(Signals.of(TP, unsampled))).isFalse();
  }

  @Test
  void roots_sampleAtTheRatio() {
    assertThat(w3c(0.0, true).sampled(Signals.NONE)).isFalse();
    assertThat(w3c(1.0, true).sampled(Signals.NONE)).isTrue();
    TraceSampling tenth = w3c(0.1, true);
    int n = 0;
    for (int i = 0; i < 20_000; i++) {
      n += tenth.sampled(Signals.NONE) ? 1 : 0;
    }
    assertThat(n).isBetween(1_600, 2_400);
  }

  @Test
  void b3_singleAndMultiHeaders() {
    TraceSampling b3 = new TraceSampling(0.0, true, TP, "b3", "b3TraceId", "b3Sampled");
    assertThat(b3.sampled(Signals.of("b3", "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1")))
        .isTrue();
    assertThat(b3.sampled(Signals.of("b3", "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-0")))
        .isFalse();
    assertThat(b3.sampled(Signals.of("b3", "d"))).isTrue();
    assertThat(b3.sampled(Signals.of("b3TraceId", "64fe8b2a57d3eff7").with("b3Sampled", "1")))
        .isTrue();
    // no decision in the headers: the ratio (0) on the trace id
    assertThat(b3.sampled(Signals.of("b3TraceId", "64fe8b2a57d3eff7"))).isFalse();
    TraceSampling all = new TraceSampling(1.0, false, TP, "b3", "b3TraceId", "b3Sampled");
    assertThat(all.sampled(Signals.of("b3", "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-0")))
        .isTrue();
  }

  private static boolean sdkSamples(Sampler sdk, String tp) {
    Context parent = extract(tp);
    return sdk.shouldSample(
                parent,
                Span.fromContext(parent).getSpanContext().getTraceId(),
                OtelRecorder.SPAN,
                SpanKind.SERVER,
                Attributes.empty(),
                List.of())
            .getDecision()
        == SamplingDecision.RECORD_AND_SAMPLE;
  }

  private static Context extract(String tp) {
    return W3CTraceContextPropagator.getInstance()
        .extract(
            Context.root(),
            Map.of(TP, tp),
            new TextMapGetter<Map<String, String>>() {
              @Override
              public @Nullable String get(@Nullable Map<String, String> c, String key) {
                return c == null ? null : c.get(key);
              }
            });
  }
}
