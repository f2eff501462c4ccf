package io.sluice.extproc;

import static io.sluice.extproc.ExtProcServerTestBase.chat;
import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.metrics.v1.Metric;
import io.opentelemetry.proto.trace.v1.Span;
import io.opentelemetry.semconv.HttpAttributes;
import io.opentelemetry.semconv.incubating.GenAiIncubatingAttributes;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.time.Ticker;
import io.sluice.observability.GenAi;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An emulated Envoy drives a real server with {@code telemetry.enabled}; an OTLP receiver built on
 * opentelemetry-proto's gRPC services receives its spans and metrics. The request's span is a child
 * of the trace context Envoy forwarded; every {@code gen_ai.*} name is one the pinned semantic
 * conventions define (the semconv artifact's constants, version {@link GenAi#SEMCONV_VERSION});
 * every other name is {@code sluice.*} or a stable convention's.
 */
class OtlpExportTest {
  private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
  private static final String PARENT_ID = "00f067aa0ba902b7";

  /**
   * The GenAI metric names of semantic conventions 1.37.0 (model/gen-ai/metrics.yaml); the Java
   * semconv artifact carries the attributes only.
   */
  private static final Set<String> GEN_AI_METRICS =
      Set.of(
          "gen_ai.client.token.usage",
          "gen_ai.client.operation.duration",
          "gen_ai.server.request.duration",
          "gen_ai.server.time_per_output_token",
          "gen_ai.server.time_to_first_token");

  @TempDir Path dir;
  private OtlpReceiver otlp;
  private SluiceServer server;
  private ExtProcTestClient client;

  @BeforeEach
  void start() throws Exception {
    otlp = new OtlpReceiver();
    Path file = dir.resolve("sluice.yaml");
    Files.writeString(
        file,
        """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}, reloadInterval: 1h, warmup: {enabled: false}}
        pools: {gpu: {capacity: 100000, maxRequests: 4}}
        classes: {interactive: {reservedShare: 1.0, defaultOutputTokens: 10, maxOutputTokens: 100}}
        tiers:
          metered: {weight: 1, rpm: 1}
          pro: {weight: 1}
        tenants: {anonymousTier: pro, unknownTier: pro, known: {carol: {tier: metered}}}
        signals: {tenant: [{metadata: x-sluice-tenant}]}
        routes:
          - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
        telemetry:
          enabled: true
          endpoint: http://127.0.0.1:%d
          sampling: {ratio: 1.0}
          exportInterval: 1s
          resource: {service.name: sluice-test}
        """
            .formatted(otlp.port()));
    server =
        SluiceServer.start(
            ConfigLoader.load(file),
            new SluiceServer.Options(
                file,
                Map.of("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret"),
                Ticker.system(),
                Clock.systemUTC()));
    client = new ExtProcTestClient(server.grpcPort());
  }

  @AfterEach
  void stop() throws Exception {
    client.close();
    server.close();
    otlp.close();
  }

  /** A chat request to its decision, carrying Envoy's trace context and request id. */
  private ProcessingResponse decide(ExtProcTestClient.Call c, String requestId) throws Exception {
    ProcessingResponse h =
        c.send(
            headers(
                chat(
                    "x-request-id",
                    requestId,
                    "traceparent",
                    "00-" + TRACE_ID + "-" + PARENT_ID + "-01"),
                false,
                BodySendMode.BUFFERED,
                BodySendMode.STREAMED));
    if (h.hasImmediateResponse()) {
      return h;
    }
    return c.send(
        body(
            "{\"model\":\"gpt-4o\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
  }

  @Test
  void spansAndMetricsReachTheCollectorWithEnvoysTraceAsParent() throws Exception {
    ExtProcTestClient.Call a = client.open(Map.of("x-sluice-tenant", "carol"));
    assertThat(decide(a, "req-admitted").hasRequestBody()).isTrue();
    a.send(responseHeaders(200, "application/json", false));
    a.send(responseBody("{\"id\":\"x\",\"choices\":[{\"message\":{\"content\":\"hel", false));
    Thread.sleep(20);
    a.send(
        responseBody(
            "lo\"}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}",
            true));
    a.reset();
    // carol's tier allows one request a minute: the second is refused (tenant_rate)
    ProcessingResponse refused = decide(client.open(Map.of("x-sluice-tenant", "carol")), "req-2");
    assertThat(refused.hasImmediateResponse()).isTrue();

    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> otlp.spans.size() >= 2 && names(otlp.metrics).containsAll(expectedMetrics()));

    Span admitted = span("req-admitted");
    assertThat(admitted.getName()).isEqualTo("sluice.admission");
    assertThat(hex(admitted.getTraceId())).isEqualTo(TRACE_ID);
    assertThat(hex(admitted.getParentSpanId())).isEqualTo(PARENT_ID);
    assertThat(admitted.getKind()).isEqualTo(Span.SpanKind.SPAN_KIND_SERVER);
    assertThat(admitted.getEventsList().stream().map(Span.Event::getName))
        .contains("sluice.started", "sluice.released");
    assertThat(attrs(admitted.getAttributesList()))
        .containsEntry("gen_ai.operation.name", "chat")
        .containsEntry("gen_ai.provider.name", "openai")
        .containsEntry("gen_ai.request.model", "gpt-4o")
        .containsEntry("sluice.decision", "admit")
        .containsEntry("sluice.class", "interactive")
        .containsEntry("sluice.tier", "metered");
    Span refusal = span("req-2");
    assertThat(hex(refusal.getTraceId())).isEqualTo(TRACE_ID);
    assertThat(refusal.getEventsList().stream().map(Span.Event::getName))
        .containsExactly("sluice.refused");
    assertThat(attrs(refusal.getAttributesList()))
        .containsEntry("sluice.decision", "reject")
        .containsEntry("sluice.reason", "tenant_rate");

    // the exporter's headers came from the environment variable
    assertThat(otlp.authorization).contains("Bearer s3cret");
    // ... and are never shown
    assertThat(server.config().toString()).doesNotContain("s3cret");

    Set<String> names = new HashSet<>();
    otlp.spans.forEach(
        s -> {
          s.getAttributesList().forEach(kv -> names.add(kv.getKey()));
          s.getEventsList()
              .forEach(e -> e.getAttributesList().forEach(kv -> names.add(kv.getKey())));
        });
    otlp.metrics.forEach(m -> names.addAll(pointAttributes(m)));
    Set<String> genAi = semconv(GenAiIncubatingAttributes.class);
    Set<String> stable = semconv(HttpAttributes.class);
    for (String name : names) {
      if (name.startsWith("gen_ai.")) {
        assertThat(genAi).as("%s in semconv %s", name, GenAi.SEMCONV_VERSION).contains(name);
      } else {
        assertThat(name.startsWith("sluice.") || stable.contains(name)).as(name).isTrue();
      }
    }
    for (String metric : names(otlp.metrics)) {
      assertThat(metric.startsWith("sluice.") || GEN_AI_METRICS.contains(metric))
          .as(metric)
          .isTrue();
    }
    assertThat(names).contains("gen_ai.token.type", "gen_ai.operation.name");
  }

  private static Set<String> expectedMetrics() {
    return Set.of(
        "gen_ai.server.request.duration",
        "gen_ai.server.time_to_first_token",
        "gen_ai.server.time_per_output_token",
        "gen_ai.client.token.usage",
        "sluice.admission.decisions");
  }

  private Span span(String requestId) {
    return otlp.spans.stream()
        .filter(s -> requestId.equals(attrs(s.getAttributesList()).get("sluice.request_id")))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no span of " + requestId + ": " + otlp.spans));
  }

  private static Set<String> names(List<Metric> metrics) {
    return metrics.stream().map(Metric::getName).collect(Collectors.toSet());
  }

  private static Set<String> pointAttributes(Metric m) {
    Stream<List<KeyValue>> lists =
        switch (m.getDataCase()) {
          case HISTOGRAM ->
              m.getHistogram().getDataPointsList().stream().map(p -> p.getAttributesList());
          case SUM -> m.getSum().getDataPointsList().stream().map(p -> p.getAttributesList());
          case GAUGE -> m.getGauge().getDataPointsList().stream().map(p -> p.getAttributesList());
          default -> Stream.of();
        };
    return lists.flatMap(List::stream).map(KeyValue::getKey).collect(Collectors.toSet());
  }

  private static Map<String, String> attrs(List<KeyValue> kvs) {
    return kvs.stream()
        .collect(
            Collectors.toMap(
                KeyValue::getKey,
                kv ->
                    kv.getValue().hasStringValue()
                        ? kv.getValue().getStringValue()
                        : String.valueOf(kv.getValue()).trim(),
                (x, y) -> x));
  }

  private static String hex(ByteString b) {
    return HexFormat.of().formatHex(b.toByteArray());
  }

  /** Every attribute name a semconv class defines (its AttributeKey constants). */
  static Set<String> semconv(Class<?> type) {
    Set<String> out = new HashSet<>();
    for (Field f : type.getFields()) {
      if (Modifier.isStatic(f.getModifiers()) && AttributeKey.class.isAssignableFrom(f.getType())) {
        try {
          out.add(((AttributeKey<?>) f.get(null)).getKey());
        } catch (IllegalAccessException e) {
          throw new AssertionError(e);
        }
      }
    }
    return out;
  }
}
