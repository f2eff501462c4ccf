package io.sluice.observability;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.metrics.data.AggregationTemporality;
import io.opentelemetry.sdk.metrics.data.HistogramPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.export.MetricProducer;
import io.opentelemetry.sdk.metrics.internal.data.ImmutableHistogramData;
import io.opentelemetry.sdk.metrics.internal.data.ImmutableHistogramPointData;
import io.opentelemetry.sdk.metrics.internal.data.ImmutableMetricData;
import io.opentelemetry.sdk.resources.Resource;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.Subject;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.DoubleAdder;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The OTLP histograms recorded per request: the GenAI request duration, time to first token, time
 * per output token and token usage of each answer, and the queue wait of each queued request.
 *
 * <p>A request records into cells of Sluice's own, not through the SDK's instruments: each series
 * (one attribute set of one histogram) is an array of bucket counters and a sum, so a recording is
 * a bucket search, one atomic increment and one add: no context lookup, no attribute map, no lock,
 * nothing allocated. The SDK reads them when it exports ({@link MetricProducer}, registered on its
 * meter provider by {@link TelemetryExport}) as cumulative explicit-bucket histograms with the
 * conventions' advised boundaries (no min or max: optional in OTLP). The attribute sets are built
 * once per pool, class, tier (and model and API, or decision and reason) and kept with the SDK, so
 * a request builds none. Keys are the policy's pools, classes and tiers, the reason codes and the
 * bounded request models ({@link OtelRecorder}): the cells are bounded.
 */
public final class OtelHistograms implements MetricProducer {
  private static final String[] DECISIONS = {"admit", "degrade", "reject", "answer"};
  private static final RequestFormat[] FORMATS = RequestFormat.values();

  private final InstrumentationScopeInfo scope =
      InstrumentationScopeInfo.create(OtelRecorder.SCOPE);
  private final LongSupplier epochNanos;
  private final Histogram duration;
  private final Histogram ttft;
  private final Histogram tpot;
  private final Histogram tokens;
  private final Histogram queueWait;

  /** The request models as an attribute, bounded for as long as these cells are kept. */
  final ModelNames models = new ModelNames();

  // pool -> class -> tier: three lookups, no key allocated per request
  private final ConcurrentMap<String, ConcurrentMap<String, ConcurrentMap<String, Cell>>> cells =
      new ConcurrentHashMap<>();

  /**
   * @param epochNanos the wall clock, epoch nanoseconds (the points' start and export times)
   */
  OtelHistograms(LongSupplier epochNanos) {
    this.epochNanos = epochNanos;
    duration =
        new Histogram(
            GenAi.SERVER_REQUEST_DURATION,
            "Generative AI server request duration (arrival at Sluice to end)",
            "s",
            GenAi.DURATION_BUCKETS);
    ttft =
        new Histogram(
            GenAi.SERVER_TIME_TO_FIRST_TOKEN,
            "Time to generate first token for successful responses",
            "s",
            GenAi.TTFT_BUCKETS);
    tpot =
        new Histogram(
            GenAi.SERVER_TIME_PER_OUTPUT_TOKEN,
            "Time per output token generated after the first token",
            "s",
            GenAi.TPOT_BUCKETS);
    List<Double> tokenBuckets = new ArrayList<>();
    GenAi.TOKEN_BUCKETS.forEach(b -> tokenBuckets.add(b.doubleValue()));
    tokens =
        new Histogram(
            GenAi.CLIENT_TOKEN_USAGE,
            "Number of input and output tokens used",
            "{token}",
            tokenBuckets);
    queueWait =
        new Histogram(
            "sluice.queue.wait.duration",
            "time spent in the class queue",
            "s",
            GenAi.DURATION_BUCKETS);
  }

  /** The model the request named (the body's, at most 128 characters), or null. */
  static @Nullable String requestModel(RequestFacts f) {
    RequestFacts.Estimate est = f.estimate();
    return est == null ? null : est.tokens().model();
  }

  /** The histograms of a request that ended ({@code released}: null for a refusal). */
  void record(
      RequestFacts f, String decision, String reason, SessionEvent.@Nullable Released released) {
    boolean queued = f.decision().queuePosition() > 0;
    boolean answered = released != null && AnswerTimes.counted(released);
    if (!queued && !answered) {
      return;
    }
    Subject s = f.subject();
    Cell cell = cell(f.run().pool().name(), s.requestClass().name(), s.tenant().tier().name());
    if (queued) {
      cell.admission(decision, reason).record(f.decision().queueWaitNanos() / 1e9);
    }
    if (released == null || !answered) {
      return;
    }
    GenAiSets g = cell.genAi(s.format(), requestModel(f));
    g.duration.record(AnswerTimes.durationNanos(released) / 1e9);
    long first = AnswerTimes.timeToFirstTokenNanos(released);
    if (first >= 0) {
      g.ttft.record(first / 1e9);
    }
    long perToken = AnswerTimes.timePerOutputTokenNanos(released);
    if (perToken >= 0) {
      g.tpot.record(perToken / 1e9);
    }
    long out = AnswerTimes.outputTokens(released);
    if (released.usage().inputTokens() > 0 || out > 0) {
      g.input.record(released.usage().inputTokens());
      g.output.record(out);
    }
  }

  /** Every histogram with a series, read now (the SDK's reader calls it when it exports). */
  @Override
  public Collection<MetricData> produce(Resource resource) {
    long now = epochNanos.getAsLong();
    List<MetricData> out = new ArrayList<>(5);
    for (Histogram h : new Histogram[] {duration, ttft, tpot, tokens, queueWait}) {
      MetricData d = h.read(resource, scope, now);
      if (d != null) {
        out.add(d);
      }
    }
    return out;
  }

  private Cell cell(String pool, String cls, String tier) {
    ConcurrentMap<String, ConcurrentMap<String, Cell>> byClass = cells.get(pool);
    if (byClass == null) {
      byClass = cells.computeIfAbsent(pool, p -> new ConcurrentHashMap<>());
    }
    ConcurrentMap<String, Cell> byTier = byClass.get(cls);
    if (byTier == null) {
      byTier = byClass.computeIfAbsent(cls, c -> new ConcurrentHashMap<>());
    }
    Cell c = byTier.get(tier);
    return c != null ? c : byTier.computeIfAbsent(tier, t -> new Cell(pool, cls, t));
  }

  /** One histogram: its boundaries and the series recorded into it. */
  private final class Histogram {
    private final String name;
    private final String description;
    private final String unit;
    private final List<Double> boundaries;
    private final double[] bounds;
    private final Collection<Series> series = new ConcurrentLinkedQueue<>();

    Histogram(String name, String description, String unit, List<Double> boundaries) {
      this.name = name;
      this.description = description;
      this.unit = unit;
      this.boundaries = List.copyOf(boundaries);
      this.bounds = boundaries.stream().mapToDouble(Double::doubleValue).toArray();
    }

    /** A new series of this histogram with {@code attributes} (once per attribute set). */
    Series series(Attributes attributes) {
      Series s = new Series(this, attributes, epochNanos.getAsLong());
      series.add(s);
      return s;
    }

    @Nullable MetricData read(Resource resource, InstrumentationScopeInfo scope, long now) {
      List<HistogramPointData> points = new ArrayList<>();
      for (Series s : series) {
        HistogramPointData p = s.point(now);
        if (p != null) {
          points.add(p);
        }
      }
      if (points.isEmpty()) {
        return null;
      }
      return ImmutableMetricData.createDoubleHistogram(
          resource,
          scope,
          name,
          description,
          unit,
          ImmutableHistogramData.create(AggregationTemporality.CUMULATIVE, points));
    }
  }

  /**
   * One attribute set of one histogram: bucket counts (bucket i counts values in {@code
   * (bounds[i-1], bounds[i]]}, the last one those above every bound, as the SDK's explicit-bucket
   * histogram) and their sum, cumulative since the series was made. Recorded from any thread.
   */
  private static final class Series {
    private final Histogram of;
    private final Attributes attributes;
    private final long startEpochNanos;
    private final AtomicLongArray counts;
    private final DoubleAdder sum = new DoubleAdder();

    Series(Histogram of, Attributes attributes, long startEpochNanos) {
      this.of = of;
      this.attributes = attributes;
      this.startEpochNanos = startEpochNanos;
      this.counts = new AtomicLongArray(of.bounds.length + 1);
    }

    void record(double value) {
      double[] b = of.bounds;
      int i = 0;
      while (i < b.length && value > b[i]) {
        i++;
      }
      counts.incrementAndGet(i);
      sum.add(value);
    }

    /** Its point now, or null while nothing was recorded. */
    @Nullable HistogramPointData point(long now) {
      List<Long> c = new ArrayList<>(counts.length());
      long n = 0;
      for (int i = 0; i < counts.length(); i++) {
        long v = counts.get(i);
        c.add(v);
        n += v;
      }
      if (n == 0) {
        return null;
      }
      return ImmutableHistogramPointData.create(
          startEpochNanos, now, attributes, sum.sum(), false, 0, false, 0, of.boundaries, c);
    }
  }

  /** The series of one pool, class and tier. */
  private final class Cell {
    private final Attributes where;
    // reason -> by decision (DECISIONS' order)
    private final ConcurrentMap<String, Series[]> admission = new ConcurrentHashMap<>();
    // request model ("" when unknown) -> by request format
    private final ConcurrentMap<String, GenAiSets[]> genAi = new ConcurrentHashMap<>();

    Cell(String pool, String cls, String tier) {
      where =
          Attributes.of(
              OtelRecorder.Sluice.POOL, pool,
              OtelRecorder.Sluice.CLASS, cls,
              OtelRecorder.Sluice.TIER, tier);
    }

    Series admission(String decision, String reason) {
      int i = 0;
      while (i < DECISIONS.length - 1 && !DECISIONS[i].equals(decision)) {
        i++;
      }
      Series[] byDecision = admission.get(reason);
      if (byDecision == null) {
        byDecision = admission.computeIfAbsent(reason, r -> new Series[DECISIONS.length]);
      }
      Series s = byDecision[i];
      if (s == null) {
        int at = i;
        synchronized (byDecision) { // once per set: a second series would be exported twice
          s = byDecision[at];
          if (s == null) {
            s =
                queueWait.series(
                    where.toBuilder()
                        .put(OtelRecorder.Sluice.DECISION, DECISIONS[at])
                        .put(OtelRecorder.Sluice.REASON, reason)
                        .build());
            byDecision[at] = s;
          }
        }
      }
      return s;
    }

    /**
     * The series of {@code format} and the request's {@code raw} model: one lookup by the model as
     * the request named it once it is known; the bound ({@link ModelNames}) only for a new one.
     */
    GenAiSets genAi(RequestFormat format, @Nullable String raw) {
      GenAiSets[] byFormat = genAi.get(raw == null ? "" : raw);
      String model = raw;
      if (byFormat == null) {
        model = models.of(raw);
        String key = model == null ? "" : model;
        byFormat = genAi.computeIfAbsent(key, m -> new GenAiSets[FORMATS.length]);
      }
      GenAiSets g = byFormat[format.ordinal()];
      if (g == null) {
        synchronized (byFormat) { // once per set: a second series would be exported twice
          g = byFormat[format.ordinal()];
          if (g == null) {
            g =
                new GenAiSets(
                    where.toBuilder().putAll(GenAi.attributes(format, model).build()).build());
            byFormat[format.ordinal()] = g;
          }
        }
      }
      return g;
    }
  }

  /** One request kind's series: its GenAI attributes, and its input and output token counts'. */
  private final class GenAiSets {
    final Series duration;
    final Series ttft;
    final Series tpot;
    final Series input;
    final Series output;

    GenAiSets(Attributes base) {
      this.duration = OtelHistograms.this.duration.series(base);
      this.ttft = OtelHistograms.this.ttft.series(base);
      this.tpot = OtelHistograms.this.tpot.series(base);
      this.input = tokens.series(base.toBuilder().put(GenAi.TOKEN_TYPE, GenAi.INPUT).build());
      this.output = tokens.series(base.toBuilder().put(GenAi.TOKEN_TYPE, GenAi.OUTPUT).build());
    }
  }
}
