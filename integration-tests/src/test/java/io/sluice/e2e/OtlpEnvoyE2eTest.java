package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.CHAT;
import static io.sluice.e2e.SluiceEnvoyHarness.chat;
import static io.sluice.e2e.SluiceEnvoyHarness.chatBody;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.metrics.v1.HistogramDataPoint;
import io.opentelemetry.proto.metrics.v1.Metric;
import io.opentelemetry.proto.metrics.v1.NumberDataPoint;
import io.opentelemetry.proto.trace.v1.Span;
import io.opentelemetry.semconv.HttpAttributes;
import io.opentelemetry.semconv.incubating.GenAiIncubatingAttributes;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.time.Ticker;
import io.sluice.emulator.EnvoyTracing;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.harness.OtlpReceiver;
import io.sluice.observability.GenAi;
import io.sluice.upstream.SimulatedLlmUpstream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The emulated Envoy drives a real Sluice with {@code telemetry.enabled}; an OTLP receiver built on
 * opentelemetry-proto's gRPC services ({@link OtlpReceiver}) receives its spans and metrics.
 *
 * <ul>
 *   <li>Envoy's tracing on ({@link EnvoyTracing}): its ext_proc stream carries its span's {@code
 *       traceparent} in the gRPC initial metadata, which the policy reads first ({@code signals:
 *       traceparent: [{metadata: traceparent}, {header: traceparent}]}, docs/telemetry.md): each
 *       request's {@code sluice.admission} span has Envoy's trace id and, as parent, Envoy's
 *       ext_proc span, whether the client started the trace or Envoy did.
 *   <li>Envoy's tracing off (its default): the client's {@code traceparent}, forwarded in the
 *       request headers, is the parent; with {@code propagators: [tracecontext, b3]} its B3 header.
 * </ul>
 *
 * Every attribute name sent is checked against the pinned semantic conventions ({@link
 * GenAi#SEMCONV_VERSION}): a {@code gen_ai.*} name must be one the semconv artifact of that version
 * defines (its constants), every other name {@code sluice.*} or a stable convention's; every metric
 * name {@code sluice.*} or a GenAI metric of that version (as Envoy AI Gateway's semconv test
 * does).
 */
@Timeout(120)
class OtlpEnvoyE2eTest {
  private static final String CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
  private static final String CLIENT_SPAN = "00f067aa0ba902b7";
  private static final String CLIENT_TRACEPARENT = "00-" + CLIENT_TRACE + "-" + CLIENT_SPAN + "-01";

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

  private final EnvoyTracing envoyTracing = new EnvoyTracing();
  private OtlpReceiver otlp;
  private SluiceEnvoyHarness h;

  @AfterEach
  void stop() throws Exception {
    if (h != null) {
      h.close();
    }
    if (otlp != null) {
      otlp.close();
    }
  }

  /**
   * Sluice exporting to {@link #otlp} behind the emulated Envoy (its tracing on or off); carol's
   * tier allows one request a minute; the model streams (2 ms a token, so every time is measured).
   */
  private void start(boolean tracing) throws Exception {
    start(tracing, "[tracecontext]");
  }

  private void start(boolean tracing, String propagators) throws Exception {
    otlp = OtlpReceiver.keeping();
    String yaml =
        Policy.base()
            .with("tiers.metered", "{weight: 1, rpm: 1}")
            .with("tenants.known.carol", "{tier: metered}")
            .with("signals.traceparent", "[{metadata: traceparent}, {header: traceparent}]")
            .with(
                "telemetry",
                ("{enabled: true, endpoint: 'http://127.0.0.1:%d', sampling: {ratio: 1.0},"
                        + " exportInterval: 1s, resource: {service.name: sluice-test},"
                        + " propagators: %s}")
                    .formatted(otlp.port(), propagators))
            .yaml();
    SluiceServer server =
        SluiceServer.start(
            ConfigLoader.parse(yaml),
            new SluiceServer.Options(
                null,
                Map.of("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret"),
                Ticker.system(),
                Clock.systemUTC()));
    SimulatedLlmUpstream.Settings i = SimulatedLlmUpstream.Settings.instant();
    SimulatedLlmUpstream model =
        SimulatedLlmUpstream.create(
            new SimulatedLlmUpstream.Settings(
                i.batchSlots(),
                i.prefillPerInputToken(),
                Duration.ofMillis(2),
                i.defaultOutputTokens(),
                i.maxOutputTokens(),
                i.charsPerToken()));
    var filter = SluiceEnvoyHarness.recommendedFilter();
    h =
        SluiceEnvoyHarness.around(
            server, (tracing ? filter.tracing(envoyTracing) : filter).build(), model);
  }

  private static HttpRequest.Builder carol(String requestId) {
    return HttpRequest.post(CHAT, chatBody(10, true))
        .routeGrpcInitialMetadata("x-sluice-tenant", "carol")
        .requestId(requestId);
  }

  @Test
  void envoyTracing_eachAdmissionSpanIsAChildOfEnvoysExtProcSpan_andEveryNameIsInTheConventions()
      throws Exception {
    start(true);
    // the client started the trace; Envoy continues it
    HttpResult admitted =
        h.send(carol("req-admitted").header("traceparent", CLIENT_TRACEPARENT).build());
    assertThat(admitted.status()).isEqualTo(200);
    // the tier allows one request a minute: refused (tenant_rate); Envoy starts the trace
    HttpResult refused = h.send(carol("req-refused").build());
    assertThat(refused.status()).isEqualTo(429);
    h.awaitNothingInFlight();

    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> otlp.spans.size() >= 2 && names(otlp.metrics).containsAll(expectedMetrics()));

    EnvoyTracing.Span envoyAdmitted = envoyTracing.extProcSpan("req-admitted").orElseThrow();
    assertThat(envoyAdmitted.traceId()).isEqualTo(CLIENT_TRACE);
    Span span = span("req-admitted");
    assertThat(span.getName()).isEqualTo("sluice.admission");
    assertThat(span.getKind()).isEqualTo(Span.SpanKind.SPAN_KIND_SERVER);
    assertThat(hex(span.getTraceId())).isEqualTo(envoyAdmitted.traceId());
    assertThat(hex(span.getParentSpanId())).isEqualTo(envoyAdmitted.spanId());
    assertThat(span.getEventsList().stream().map(Span.Event::getName))
        .contains("sluice.started", "sluice.released");
    assertThat(attrs(span.getAttributesList()))
        .containsEntry("gen_ai.operation.name", "chat")
        .containsEntry("gen_ai.provider.name", "openai")
        .containsEntry("gen_ai.request.model", "gpt-4o")
        .containsEntry("sluice.decision", "admit")
        .containsEntry("sluice.class", "interactive")
        .containsEntry("sluice.tier", "metered");

    EnvoyTracing.Span envoyRefused = envoyTracing.extProcSpan("req-refused").orElseThrow();
    assertThat(envoyRefused.traceId()).isNotEqualTo(CLIENT_TRACE);
    Span refusal = span("req-refused");
    assertThat(hex(refusal.getTraceId())).isEqualTo(envoyRefused.traceId());
    assertThat(hex(refusal.getParentSpanId())).isEqualTo(envoyRefused.spanId());
    assertThat(refusal.getEventsList().stream().map(Span.Event::getName))
        .containsExactly("sluice.refused");
    assertThat(attrs(refusal.getAttributesList()))
        .containsEntry("sluice.decision", "reject")
        .containsEntry("sluice.reason", "tenant_rate");

    // the exporter's headers came from the environment variable ...
    assertThat(otlp.authorization).contains("Bearer s3cret");
    // ... and are never shown
    assertThat(h.server.config().toString()).doesNotContain("s3cret");

    assertEveryNameInTheConventions();

    // the same numbers as the Prometheus scrape, once an export after the traffic arrived
    await()
        .atMost(Duration.ofSeconds(60))
        .untilAsserted(
            () -> {
              assertThat(lastSum("sluice.admission.decisions"))
                  .isEqualTo(h.counter("sluice.decisions"))
                  .isPositive();
              assertThat(lastSum("sluice.answers")).isEqualTo(h.counter("sluice.answers")).isOne();
              assertThat(lastCount("gen_ai.server.request.duration")).isOne();
              assertThat(lastCount("gen_ai.server.time_to_first_token")).isOne();
            });
  }

  @Test
  void b3_whereConfigured_theClientsB3ContextIsTheParent() throws Exception {
    start(false, "[tracecontext, b3]");
    HttpResult r =
        h.send(carol("req-b3").header("b3", CLIENT_TRACE + "-" + CLIENT_SPAN + "-1").build());
    assertThat(r.status()).isEqualTo(200);
    h.awaitNothingInFlight();

    await().atMost(Duration.ofSeconds(60)).until(() -> !otlp.spans.isEmpty());
    Span span = span("req-b3");
    assertThat(hex(span.getTraceId())).isEqualTo(CLIENT_TRACE);
    assertThat(hex(span.getParentSpanId())).isEqualTo(CLIENT_SPAN);
  }

  /**
   * The span events of the admission's steps between arrival and start: a request that queued then
   * started carries {@code sluice.queued} (its queue position) before {@code sluice.started}, and a
   * degraded one {@code sluice.degraded} (its rung and trigger), as exported.
   */
  @Test
  void queuedThenStarted_andDegraded_theExportedSpansCarryTheirEvents() throws Exception {
    otlp = OtlpReceiver.keeping();
    h =
        SluiceEnvoyHarness.start(
            Policy.base()
                .with("pools.gpu.capacity", "600")
                .with("pools.gpu.maxMessageTimeout", "5s")
                .with("classes.batch.maxQueueWait", "3s")
                .with(
                    "classes.interactive.degrade",
                    "{waitAbove: 1s, ladder: [{concise: {maxOutputTokens: 50}}]}")
                .with(
                    "telemetry",
                    ("{enabled: true, endpoint: '%s', sampling: {ratio: 1.0}, exportInterval: 1s}")
                        .formatted(otlp.endpoint())));
    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    // one 400-token answer holds most of the pool ...
    var first = h.sendAsync(chat(chatBody(400, false)).requestId("req-first").build());
    h.awaitUpstreamRequests(1);
    // ... the second would wait: degraded to the concise rung, it fits at once ...
    var degraded = h.sendAsync(chat(chatBody(400, false)).requestId("req-degraded").build());
    h.awaitUpstreamRequests(2);
    // ... a batch request takes the room left, and a second one (no ladder) queues until the
    // others are answered
    var filler = h.sendAsync(completion("req-filler"));
    h.awaitUpstreamRequests(3);
    var queued = h.sendAsync(completion("req-queued"));
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> h.gauge("sluice.queue.depth", "class", "batch") == 1);
    h.upstream.releaseHeld();
    h.awaitUpstreamRequests(4);
    h.upstream.releaseHeld();
    assertThat(SluiceEnvoyHarness.result(filler).status()).isEqualTo(200);
    assertThat(SluiceEnvoyHarness.result(first).status()).isEqualTo(200);
    assertThat(SluiceEnvoyHarness.result(degraded).header("x-sluice-degraded")).hasValue("concise");
    assertThat(SluiceEnvoyHarness.result(queued).status()).isEqualTo(200);
    h.awaitNothingInFlight();

    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () ->
                otlp.spans.size() >= 4
                    && names(otlp.metrics).contains("gen_ai.client.token.usage"));
    Span q = span("req-queued");
    assertThat(q.getEventsList().stream().map(Span.Event::getName))
        .containsExactly("sluice.queued", "sluice.started", "sluice.released");
    Span.Event queuedAt = q.getEvents(0);
    assertThat(queuedAt.getAttributesList())
        .anySatisfy(
            kv -> {
              assertThat(kv.getKey()).isEqualTo("sluice.queue.position");
              assertThat(kv.getValue().getIntValue()).isEqualTo(1);
            });
    assertThat(queuedAt.getTimeUnixNano()).isLessThan(q.getEvents(1).getTimeUnixNano());
    assertThat(attrs(q.getAttributesList()))
        .containsEntry("sluice.decision", "admit")
        .containsEntry("sluice.class", "batch")
        .containsKey("sluice.queue.wait");

    Span d = span("req-degraded");
    assertThat(d.getEventsList().stream().map(Span.Event::getName))
        .containsExactly("sluice.degraded", "sluice.started", "sluice.released");
    assertThat(attrs(d.getEvents(0).getAttributesList()))
        .containsEntry("sluice.degrade.rung", "concise")
        .containsEntry("sluice.degrade.trigger", "wait");
    assertThat(attrs(d.getAttributesList()))
        .containsEntry("sluice.decision", "degrade")
        .containsEntry("sluice.degrade.rung", "concise");
    assertThat(span("req-first").getEventsList().stream().map(Span.Event::getName))
        .containsExactly("sluice.started", "sluice.released");
    assertEveryNameInTheConventions();
  }

  private static HttpRequest completion(String requestId) {
    return HttpRequest.post(
            "/v1/completions", "{\"model\":\"gpt-4o\",\"max_tokens\":200,\"prompt\":\"Hi.\"}")
        .routeGrpcInitialMetadata("x-sluice-tenant", "acme")
        .requestId(requestId)
        .build();
  }

  /** The latest export's {@code name}: a sum's points added up. */
  private double lastSum(String name) {
    return last(name).getSum().getDataPointsList().stream()
        .mapToDouble(
            p ->
                p.getValueCase() == NumberDataPoint.ValueCase.AS_INT
                    ? p.getAsInt()
                    : p.getAsDouble())
        .sum();
  }

  /** The latest export's {@code name}: a histogram's counts added up. */
  private long lastCount(String name) {
    return last(name).getHistogram().getDataPointsList().stream()
        .mapToLong(HistogramDataPoint::getCount)
        .sum();
  }

  private Metric last(String name) {
    List<Metric> all = List.copyOf(otlp.metrics);
    for (int i = all.size() - 1; i >= 0; i--) {
      if (all.get(i).getName().equals(name)) {
        return all.get(i);
      }
    }
    throw new AssertionError("no metric " + name);
  }

  @Test
  void envoyTracingOff_theClientsForwardedTraceparentIsTheParent() throws Exception {
    start(false);
    HttpResult r = h.send(carol("req-1").header("traceparent", CLIENT_TRACEPARENT).build());
    assertThat(r.status()).isEqualTo(200);
    h.awaitNothingInFlight();

    await().atMost(Duration.ofSeconds(60)).until(() -> !otlp.spans.isEmpty());
    Span span = span("req-1");
    assertThat(hex(span.getTraceId())).isEqualTo(CLIENT_TRACE);
    assertThat(hex(span.getParentSpanId())).isEqualTo(CLIENT_SPAN);
  }

  /**
   * Every span, event and metric point attribute name, and every metric name, is the pinned
   * conventions' or Sluice's own: no invented {@code gen_ai.*} name.
   */
  private void assertEveryNameInTheConventions() {
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
