package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.config.SluiceConfig.Source;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The {@code telemetry} section and the trace signals it declares. */
class TelemetryConfigTest {
  private static final String BASE =
      """
      pools: {p: {capacity: 100}}
      classes: {c: {rank: 0}}
      routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
      """;

  @Test
  void absent_offWithCorrelation_readingTheRequestIdAndTraceparentOnly() {
    SluiceConfig c = ConfigLoader.parse(BASE);
    TelemetryPolicy p = c.section(TelemetrySection.SECTION);
    assertThat(p).isEqualTo(TelemetryPolicy.DEFAULTS);
    assertThat(p.enabled()).isFalse();
    assertThat(TelemetrySection.SECTION.signals(p)).containsExactly("requestId", "traceparent");
    assertThat(c.signals().get(TelemetrySection.REQUEST_ID))
        .containsExactly(new Source.Header("x-request-id"));
    assertThat(c.signals().get(TelemetrySection.B3_TRACE_ID))
        .containsExactly(new Source.Header("x-b3-traceid"));
    assertThat(TrustedHeaders.warnings(c)).isEmpty();
  }

  @Test
  void offWithoutCorrelation_readsNoSignal() {
    TelemetryPolicy p =
        ConfigLoader.parse(BASE + "telemetry: {correlation: false}\n")
            .section(TelemetrySection.SECTION);
    assertThat(TelemetrySection.SECTION.signals(p)).isEmpty();
  }

  @Test
  void section_isRead_andWrittenBackTheSame_withoutTheHeadersValue() throws Exception {
    SluiceConfig c =
        ConfigLoader.parse(
            BASE
                + """
                signals: {traceparent: [{metadata: traceparent}, {header: traceparent}]}
                telemetry:
                  enabled: true
                  endpoint: https://collector.example:4318
                  protocol: http/protobuf
                  headersEnv: COLLECTOR_HEADERS
                  sampling: {ratio: 0.25, followParent: false}
                  propagators: [tracecontext, b3]
                  traces: true
                  metrics: false
                  exportInterval: 30s
                  resource: {service.name: edge-sluice, deployment.environment.name: prod}
                """);
    TelemetryPolicy p = c.section(TelemetrySection.SECTION);
    assertThat(p.enabled()).isTrue();
    assertThat(p.protocol()).isEqualTo("http/protobuf");
    assertThat(p.samplingRatio()).isEqualTo(0.25);
    assertThat(p.followParent()).isFalse();
    assertThat(p.b3()).isTrue();
    assertThat(p.metrics()).isFalse();
    assertThat(p.exportInterval()).isEqualTo(Duration.ofSeconds(30));
    assertThat(p.resource())
        .isEqualTo(Map.of("service.name", "edge-sluice", "deployment.environment.name", "prod"));
    assertThat(TelemetrySection.SECTION.signals(p))
        .containsExactlyInAnyOrder(
            "requestId", "traceparent", "tracestate", "b3", "b3TraceId", "b3SpanId", "b3Sampled");
    assertThat(c.signals().get(TelemetrySection.TRACEPARENT))
        .containsExactly(new Source.Metadata("traceparent"), new Source.Header("traceparent"));
    String written =
        new com.fasterxml.jackson.databind.ObjectMapper(
                new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
            .writeValueAsString(ConfigWriter.tree(c));
    assertThat(written).contains("headersEnv: \"COLLECTOR_HEADERS\"");
    assertThat(ConfigLoader.parse(written).section(TelemetrySection.SECTION)).isEqualTo(p);
  }

  @Test
  void badValues_eachNamedWithItsPathAndTheValueExpected() {
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    BASE
                        + """
                        telemetry:
                          endpoint: localhost:4317
                          protocol: zipkin
                          headersEnv: "not a name"
                          sampling: {ratio: 2}
                          propagators: [jaeger]
                          exportInterval: 100ms
                          extra: 1
                        """))
        .isInstanceOf(ConfigException.class)
        .satisfies(
            e -> {
              List<String> errors = ((ConfigException) e).errors();
              assertThat(String.join("\n", errors))
                  .contains("telemetry.endpoint: localhost:4317 (expected: an http://")
                  .contains("telemetry.protocol: zipkin (expected: grpc or http/protobuf)")
                  .contains("telemetry.headersEnv: not a name (expected: an environment")
                  .contains("telemetry.sampling.ratio: 2 (expected: a number in 0.0..1.0)")
                  .contains("telemetry.propagators[0]: jaeger (expected: tracecontext or b3)")
                  .contains("telemetry.exportInterval: 100ms (expected: a duration in 1s..10m)")
                  .contains("telemetry.extra");
            });
  }
}
