package io.sluice.observability;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.metrics.DoubleHistogram;
import io.opentelemetry.api.metrics.LongCounter;
import io.opentelemetry.api.metrics.LongHistogram;
import io.opentelemetry.api.metrics.Meter;
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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Exports the admission over OpenTelemetry (docs/telemetry.md): one span per request's admission,
 * its parent the trace context Envoy forwarded (W3C {@code traceparent}, B3 where configured), with
 * events {@code sluice.queued}, {@code sluice.degraded}, {@code sluice.started}, {@code
 * sluice.refused}, {@code sluice.released}; and the GenAI metrics of the semantic conventions
 * {@link GenAi#SEMCONV_VERSION} ({@code gen_ai.server.request.duration}, {@code
 * gen_ai.server.time_to_first_token}, {@code gen_ai.server.time_per_output_token}, {@code
 * gen_ai.client.token.usage}) beside {@code sluice.*} ones for the admission. The numbers are those
 * of the Prometheus meters ({@link AnswerTimes}). The span is made when the request ends (refused,
 * answered, released) with the times the facts carry, so nothing is kept per request in between; an
 * unsampled span gets no attribute beyond its name. Reads the events' facts only.
 */
public final class OtelRecorder implements SessionListener {
  /** The instrumentation scope's name. */
  public static final String SCOPE = "io.sluice";

  /** The admission span's name. */
  public static final String SPAN = "sluice.admission";

  private static final int MAX_MODELS = 64;
  private static final String OTHER_MODEL = "_other";

  private final @Nullable Tracer tracer;
  private final @Nullable Instruments instruments;
  private final TextMapPropagator propagator;
  private final Getter getter;
  // the request models seen as a metric attribute: bounded; others are "_other"
  private final ConcurrentMap<String, String> models = new ConcurrentHashMap<>();

  /**
   * @param otel the SDK
   * @param traces export spans
   * @param metrics export metrics
   * @param propagator the trace context formats read ({@code tracecontext}, {@code b3})
   * @param headerSignals the signal key each trace header is read into (header name to key)
   */
  public OtelRecorder(
      OpenTelemetry otel,
      boolean traces,
      boolean metrics,
      TextMapPropagator propagator,
      java.util.Map<String, String> headerSignals) {
    this.tracer = traces ? otel.getTracer(SCOPE) : null;
    this.instruments = metrics ? new Instruments(otel.getMeter(SCOPE)) : null;
    this.propagator = propagator;
    this.getter = new Getter(headerSignals);
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
    Instruments m = instruments;
    if (m != null) {
      m.record(f, decision, reason, released, model(f));
    }
    Tracer t = tracer;
    if (t != null) {
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
      return; // not sampled: nothing more is built
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

  /** The request's model as a metric attribute (the first {@value #MAX_MODELS} seen), or null. */
  private @Nullable String model(RequestFacts f) {
    RequestFacts.Estimate est = f.estimate();
    String model = est == null ? null : est.tokens().model();
    if (model == null) {
      return null;
    }
    String known = models.get(model);
    if (known != null) {
      return known;
    }
    if (models.size() >= MAX_MODELS || model.length() > 128) {
      return OTHER_MODEL;
    }
    String prev = models.putIfAbsent(model, model);
    return prev != null ? prev : model;
  }

  /** The metric instruments. */
  private static final class Instruments {
    private final DoubleHistogram duration;
    private final DoubleHistogram ttft;
    private final DoubleHistogram tpot;
    private final LongHistogram tokens;
    private final LongCounter decisions;
    private final DoubleHistogram queueWait;
    private final LongCounter answers;
    private final LongCounter wasted;
    private final LongCounter charged;

    Instruments(Meter m) {
      duration =
          m.histogramBuilder(GenAi.SERVER_REQUEST_DURATION)
              .setUnit("s")
              .setDescription("Generative AI server request duration (arrival at Sluice to end)")
              .setExplicitBucketBoundariesAdvice(GenAi.DURATION_BUCKETS)
              .build();
      ttft =
          m.histogramBuilder(GenAi.SERVER_TIME_TO_FIRST_TOKEN)
              .setUnit("s")
              .setDescription("Time to generate first token for successful responses")
              .setExplicitBucketBoundariesAdvice(GenAi.TTFT_BUCKETS)
              .build();
      tpot =
          m.histogramBuilder(GenAi.SERVER_TIME_PER_OUTPUT_TOKEN)
              .setUnit("s")
              .setDescription("Time per output token generated after the first token")
              .setExplicitBucketBoundariesAdvice(GenAi.TPOT_BUCKETS)
              .build();
      tokens =
          m.histogramBuilder(GenAi.CLIENT_TOKEN_USAGE)
              .ofLongs()
              .setUnit("{token}")
              .setDescription("Number of input and output tokens used")
              .setExplicitBucketBoundariesAdvice(GenAi.TOKEN_BUCKETS)
              .build();
      decisions =
          m.counterBuilder("sluice.admission.decisions")
              .setUnit("{decision}")
              .setDescription("admission decisions by decision and reason")
              .build();
      queueWait =
          m.histogramBuilder("sluice.queue.wait.duration")
              .setUnit("s")
              .setDescription("time spent in the class queue")
              .build();
      answers =
          m.counterBuilder("sluice.answers")
              .setUnit("{answer}")
              .setDescription("answers that ran upstream, by result (goodput: 2xx within deadline)")
              .build();
      wasted =
          m.counterBuilder("sluice.wasted.tokens")
              .setUnit("{token}")
              .setDescription("output tokens produced for an answer cancelled or past its deadline")
              .build();
      charged =
          m.counterBuilder("sluice.charged.tokens")
              .setUnit("{token}")
              .setDescription("tokens charged to the tenant, by token type")
              .build();
    }

    void record(
        RequestFacts f,
        String decision,
        String reason,
        SessionEvent.@Nullable Released released,
        @Nullable String model) {
      Subject s = f.subject();
      String pool = f.run().pool().name();
      Attributes admission =
          Attributes.builder()
              .put(Sluice.DECISION, decision)
              .put(Sluice.REASON, reason)
              .put(Sluice.POOL, pool)
              .put(Sluice.CLASS, s.requestClass().name())
              .put(Sluice.TIER, s.tenant().tier().name())
              .build();
      decisions.add(1, admission);
      if (f.decision().queuePosition() > 0) {
        queueWait.record(f.decision().queueWaitNanos() / 1e9, admission);
      }
      if (released == null || !AnswerTimes.counted(released)) {
        return;
      }
      Attributes genAi =
          GenAi.attributes(f, model)
              .put(Sluice.POOL, pool)
              .put(Sluice.CLASS, s.requestClass().name())
              .put(Sluice.TIER, s.tenant().tier().name())
              .build();
      duration.record(AnswerTimes.durationNanos(released) / 1e9, genAi);
      long first = AnswerTimes.timeToFirstTokenNanos(released);
      if (first >= 0) {
        ttft.record(first / 1e9, genAi);
      }
      long perToken = AnswerTimes.timePerOutputTokenNanos(released);
      if (perToken >= 0) {
        tpot.record(perToken / 1e9, genAi);
      }
      long out = AnswerTimes.outputTokens(released);
      if (released.usage().inputTokens() > 0 || out > 0) {
        tokens.record(
            released.usage().inputTokens(),
            genAi.toBuilder().put(GenAi.TOKEN_TYPE, GenAi.INPUT).build());
        tokens.record(out, genAi.toBuilder().put(GenAi.TOKEN_TYPE, GenAi.OUTPUT).build());
      }
      String result = AnswerTimes.result(released);
      answers.add(1, admission.toBuilder().put(Sluice.RESULT, result).build());
      String waste = AnswerTimes.waste(result);
      if (waste != null && out > 0) {
        wasted.add(out, admission.toBuilder().put(Sluice.WASTE_CAUSE, waste).build());
      }
      io.sluice.core.session.Charge c = f.end().charge();
      charged.add(
          c.inputTokens(), admission.toBuilder().put(GenAi.TOKEN_TYPE, GenAi.INPUT).build());
      charged.add(
          c.outputTokens(), admission.toBuilder().put(GenAi.TOKEN_TYPE, GenAi.OUTPUT).build());
    }
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
