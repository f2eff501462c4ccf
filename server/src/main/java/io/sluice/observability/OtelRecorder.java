package io.sluice.observability;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;
import io.sluice.core.session.Signals;
import io.sluice.core.session.Subject;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Exports the admission over OpenTelemetry (docs/telemetry.md): one span per request's admission,
 * its parent the trace context Envoy forwarded (W3C {@code traceparent}, B3 where configured), with
 * events {@code sluice.queued}, {@code sluice.degraded}, {@code sluice.started}, {@code
 * sluice.refused}, {@code sluice.released}; and the GenAI metrics of the semantic conventions
 * {@link GenAi#SEMCONV_VERSION} ({@code gen_ai.server.request.duration}, {@code
 * gen_ai.server.time_to_first_token}, {@code gen_ai.server.time_per_output_token}, {@code
 * gen_ai.client.token.usage}, {@link OtelHistograms}: cells of Sluice's own, read at export) beside
 * {@code sluice.*} ones for the admission (the counters are read from the Prometheus meters at
 * export, {@link OtelCounters}: nothing recorded twice). The numbers are those of the Prometheus
 * meters ({@link AnswerTimes}). The span is made when the request ends (refused, answered,
 * released) with the times the facts carry, so nothing is kept per request in between; whether it
 * is sampled is decided first from the trace headers' text ({@link TraceSampling}), so an unsampled
 * request builds no span, context or id. Reads the events' facts only.
 */
public final class OtelRecorder implements SessionListener {
  /** The instrumentation scope's name. */
  public static final String SCOPE = "io.sluice";

  /** The admission span's name. */
  public static final String SPAN = "sluice.admission";

  private final @Nullable Tracer tracer;
  private final @Nullable OtelHistograms histograms;
  private final TraceSampling sampling;
  private final TextMapPropagator propagator;
  private final Getter getter;
  // the request models as an attribute, bounded: the histograms' (kept across reloads), or own
  private final ModelNames models;

  /**
   * @param otel the SDK
   * @param traces export spans
   * @param histograms the histograms the SDK exports ({@link TelemetryExport#histograms}), or null
   *     when it exports no metrics
   * @param propagator the trace context formats read ({@code tracecontext}, {@code b3})
   * @param headerSignals the signal key each trace header is read into (header name to key)
   * @param sampling which requests get a span (the SDK samples all it is handed)
   */
  public OtelRecorder(
      OpenTelemetry otel,
      boolean traces,
      @Nullable OtelHistograms histograms,
      TextMapPropagator propagator,
      java.util.Map<String, String> headerSignals,
      TraceSampling sampling) {
    this.tracer = traces ? otel.getTracer(SCOPE) : null;
    this.histograms = histograms;
    this.models = histograms != null ? histograms.models : new ModelNames();
    this.sampling = sampling;
    this.propagator = propagator;
    this.getter = new Getter(headerSignals);
  }

  /** The events it acts on (its {@link #on} ignores every other type). */
  @Override
  public boolean hears(Class<? extends SessionEvent> type) {
    return type == SessionEvent.Released.class
        || type == SessionEvent.Refused.class
        || type == SessionEvent.Answered.class;
  }

  @Override
  public void on(SessionEvent event) {
    if (event instanceof SessionEvent.Released e) {
      released(e);
    } else if (event instanceof SessionEvent.Refused e) {
      ended(e.facts(), "reject", e.reason().code(), e.status(), null);
    } else if (event instanceof SessionEvent.Answered e) {
      ended(e.facts(), "answer", e.reason().code(), e.status(), null);
    }
  }

  private void released(SessionEvent.Released e) {
    RequestFacts f = e.facts();
    String decision = f.run().degradedRung() != null ? "degrade" : "admit";
    ended(f, decision, f.decision().reason().code(), 200, e);
  }

  /** The span and the metrics of a request that ended ({@code released}: null for a refusal). */
  private void ended(
      RequestFacts f,
      String decision,
      String reason,
      int status,
      SessionEvent.@Nullable Released released) {
    OtelHistograms m = histograms;
    if (m != null) {
      m.record(f, decision, reason, released);
    }
    Tracer t = tracer;
    if (t != null && sampling.sampled(f.subject().signals())) {
      span(t, f, decision, reason, status, released);
    }
  }

  private void span(
      Tracer t,
      RequestFacts f,
      String decision,
      String reason,
      int status,
      SessionEvent.@Nullable Released released) {
    Subject s = f.subject();
    long start = f.arrivalEpochMillis() * 1_000_000L;
    Context parent = propagator.extract(Context.root(), s.signals(), getter);
    Span span =
        t.spanBuilder(SPAN)
            .setSpanKind(SpanKind.SERVER)
            .setParent(parent)
            .setStartTimestamp(start, TimeUnit.NANOSECONDS)
            .startSpan();
    if (!span.isRecording()) {
      return; // the SDK's sampler said no after all: nothing more is built
    }
    RequestFacts.Decided d = f.decision();
    RequestFacts.Run run = f.run();
    AttributesBuilder a = GenAi.attributes(f, model(f));
    a.put(Sluice.DECISION, decision)
        .put(Sluice.REASON, reason)
        .put(Sluice.POOL, run.pool().name())
        .put(Sluice.CLASS, s.requestClass().name())
        .put(Sluice.TIER, s.tenant().tier().name())
        .put(Sluice.TENANT, s.tenant().id())
        .put(Sluice.ROUTE, s.route())
        .put(Sluice.QUEUE_WAIT, d.queueWaitNanos() / 1e9)
        .put(Sluice.HTTP_STATUS, (long) status);
    String requestId = s.signals().get(Sluice.REQUEST_ID_SIGNAL);
    if (requestId != null) {
      a.put(Sluice.REQUEST_ID, requestId);
    }
    long endEpoch;
    long decided = start + d.latencyNanos() + d.queueWaitNanos();
    if (d.queuePosition() > 0) {
      span.addEvent(
          "sluice.queued",
          Attributes.of(Sluice.QUEUE_POSITION, (long) d.queuePosition()),
          start + d.latencyNanos(),
          TimeUnit.NANOSECONDS);
    }
    if (run.degradedRung() != null) {
      a.put(Sluice.DEGRADE_RUNG, run.degradedRung());
      span.addEvent(
          "sluice.degraded",
          Attributes.of(
              Sluice.DEGRADE_RUNG,
              run.degradedRung(),
              Sluice.DEGRADE_TRIGGER,
              String.valueOf(run.degradeTrigger())),
          decided,
          TimeUnit.NANOSECONDS);
    }
    if (released == null) {
      endEpoch = decided;
      span.addEvent(
          "sluice.refused",
          Attributes.of(Sluice.REASON, reason, Sluice.HTTP_STATUS, (long) status),
          endEpoch,
          TimeUnit.NANOSECONDS);
    } else {
      long admitted =
          run.admittedAtNanos() != 0 ? start + run.admittedAtNanos() - s.arrivalNanos() : decided;
      span.addEvent("sluice.started", Attributes.empty(), admitted, TimeUnit.NANOSECONDS);
      endEpoch = admitted + released.heldNanos();
      io.sluice.core.session.Charge c = f.end().charge();
      a.put(GenAi.USAGE_INPUT_TOKENS, released.usage().inputTokens())
          .put(GenAi.USAGE_OUTPUT_TOKENS, AnswerTimes.outputTokens(released))
          .put(Sluice.CHARGE_RULE, c.rule())
          .put(Sluice.CHARGE_INPUT_TOKENS, c.inputTokens())
          .put(Sluice.CHARGE_OUTPUT_TOKENS, c.outputTokens())
          .put(Sluice.UPSTREAM_STATUS, (long) f.end().upstreamStatus());
      String result = AnswerTimes.counted(released) ? AnswerTimes.result(released) : null;
      span.addEvent(
          "sluice.released",
          result == null
              ? Attributes.of(
                  Sluice.OUTCOME, released.outcome().name().toLowerCase(java.util.Locale.ROOT))
              : Attributes.of(
                  Sluice.OUTCOME,
                  released.outcome().name().toLowerCase(java.util.Locale.ROOT),
                  Sluice.RESULT,
                  result),
          endEpoch,
          TimeUnit.NANOSECONDS);
    }
    span.setAllAttributes(a.build());
    span.end(endEpoch, TimeUnit.NANOSECONDS);
  }

  /** The request's model as an attribute ({@link ModelNames}: bounded), or null. */
  private @Nullable String model(RequestFacts f) {
    return models.of(OtelHistograms.requestModel(f));
  }

  /** Reads the trace headers from the request's signals (header name to signal key). */
  private static final class Getter implements TextMapGetter<Signals> {
    private final java.util.Map<String, String> keys;

    Getter(java.util.Map<String, String> headerSignals) {
      this.keys = java.util.Map.copyOf(headerSignals);
    }

    @Override
    public @Nullable String get(@Nullable Signals carrier, String key) {
      String signal = keys.get(key);
      return carrier == null || signal == null ? null : carrier.get(signal);
    }
  }

  /** The {@code sluice.*} attribute names (docs/telemetry.md). */
  public static final class Sluice {
    public static final AttributeKey<String> DECISION = AttributeKey.stringKey("sluice.decision");
    public static final AttributeKey<String> REASON = AttributeKey.stringKey("sluice.reason");
    public static final AttributeKey<String> POOL = AttributeKey.stringKey("sluice.pool");
    public static final AttributeKey<String> CLASS = AttributeKey.stringKey("sluice.class");
    public static final AttributeKey<String> TIER = AttributeKey.stringKey("sluice.tier");
    public static final AttributeKey<String> TENANT = AttributeKey.stringKey("sluice.tenant");
    public static final AttributeKey<String> ROUTE = AttributeKey.stringKey("sluice.route");
    public static final AttributeKey<String> REQUEST_ID =
        AttributeKey.stringKey("sluice.request_id");
    public static final AttributeKey<Double> QUEUE_WAIT =
        AttributeKey.doubleKey("sluice.queue.wait");
    public static final AttributeKey<Long> QUEUE_POSITION =
        AttributeKey.longKey("sluice.queue.position");
    public static final AttributeKey<String> DEGRADE_RUNG =
        AttributeKey.stringKey("sluice.degrade.rung");
    public static final AttributeKey<String> DEGRADE_TRIGGER =
        AttributeKey.stringKey("sluice.degrade.trigger");
    public static final AttributeKey<String> CHARGE_RULE =
        AttributeKey.stringKey("sluice.charge.rule");
    public static final AttributeKey<Long> CHARGE_INPUT_TOKENS =
        AttributeKey.longKey("sluice.charge.input_tokens");
    public static final AttributeKey<Long> CHARGE_OUTPUT_TOKENS =
        AttributeKey.longKey("sluice.charge.output_tokens");
    public static final AttributeKey<Long> UPSTREAM_STATUS =
        AttributeKey.longKey("sluice.upstream.status_code");
    public static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("sluice.outcome");
    public static final AttributeKey<String> RESULT = AttributeKey.stringKey("sluice.result");
    public static final AttributeKey<String> WASTE_CAUSE =
        AttributeKey.stringKey("sluice.waste.cause");

    /** The client's status ({@code http.response.status_code}, stable HTTP conventions). */
    public static final AttributeKey<Long> HTTP_STATUS =
        AttributeKey.longKey("http.response.status_code");

    /** The signal key Envoy's request id is read into. */
    public static final String REQUEST_ID_SIGNAL = "requestId";

    private Sluice() {}
  }
}
