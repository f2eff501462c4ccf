package io.sluice.observability;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.metrics.DoubleHistogram;
import io.opentelemetry.api.metrics.LongHistogram;
import io.opentelemetry.api.metrics.Meter;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.Subject;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.jspecify.annotations.Nullable;

/**
 * The OTLP histograms recorded per request: the GenAI request duration, time to first token, time
 * per output token and token usage of each answer, and the queue wait of each queued request. Their
 * attribute sets are built once per pool, class, tier (and model and API, or decision and reason)
 * and kept for the runtime snapshot, so a request builds none: each recording is a lookup and the
 * SDK's own update. Keys are the policy's pools, classes and tiers, the reason codes and the
 * bounded request models ({@link OtelRecorder}): the cache is bounded.
 */
final class OtelHistograms {
  private static final String[] DECISIONS = {"admit", "degrade", "reject", "answer"};
  private static final RequestFormat[] FORMATS = RequestFormat.values();

  private final DoubleHistogram duration;
  private final DoubleHistogram ttft;
  private final DoubleHistogram tpot;
  private final LongHistogram tokens;
  private final DoubleHistogram queueWait;
  // pool -> class -> tier: three lookups, no key allocated per request
  private final ConcurrentMap<String, ConcurrentMap<String, ConcurrentMap<String, Cell>>> cells =
      new ConcurrentHashMap<>();

  OtelHistograms(Meter m) {
    duration =
        seconds(
            m,
            GenAi.SERVER_REQUEST_DURATION,
            "Generative AI server request duration (arrival at Sluice to end)",
            GenAi.DURATION_BUCKETS);
    ttft =
        seconds(
            m,
            GenAi.SERVER_TIME_TO_FIRST_TOKEN,
            "Time to generate first token for successful responses",
            GenAi.TTFT_BUCKETS);
    tpot =
        seconds(
            m,
            GenAi.SERVER_TIME_PER_OUTPUT_TOKEN,
            "Time per output token generated after the first token",
            GenAi.TPOT_BUCKETS);
    tokens =
        m.histogramBuilder(GenAi.CLIENT_TOKEN_USAGE)
            .ofLongs()
            .setUnit("{token}")
            .setDescription("Number of input and output tokens used")
            .setExplicitBucketBoundariesAdvice(GenAi.TOKEN_BUCKETS)
            .build();
    queueWait =
        m.histogramBuilder("sluice.queue.wait.duration")
            .setUnit("s")
            .setDescription("time spent in the class queue")
            .build();
  }

  private static DoubleHistogram seconds(
      Meter m, String name, String description, java.util.List<Double> buckets) {
    return m.histogramBuilder(name)
        .setUnit("s")
        .setDescription(description)
        .setExplicitBucketBoundariesAdvice(buckets)
        .build();
  }

  /** The histograms of a request that ended ({@code released}: null for a refusal). */
  void record(
      RequestFacts f,
      String decision,
      String reason,
      SessionEvent.@Nullable Released released,
      @Nullable String model) {
    boolean queued = f.decision().queuePosition() > 0;
    boolean answered = released != null && AnswerTimes.counted(released);
    if (!queued && !answered) {
      return;
    }
    Subject s = f.subject();
    Cell cell = cell(f.run().pool().name(), s.requestClass().name(), s.tenant().tier().name());
    if (queued) {
      queueWait.record(f.decision().queueWaitNanos() / 1e9, cell.admission(decision, reason));
    }
    if (released == null || !answered) {
      return;
    }
    GenAiSets g = cell.genAi(s.format(), model);
    duration.record(AnswerTimes.durationNanos(released) / 1e9, g.base);
    long first = AnswerTimes.timeToFirstTokenNanos(released);
    if (first >= 0) {
      ttft.record(first / 1e9, g.base);
    }
    long perToken = AnswerTimes.timePerOutputTokenNanos(released);
    if (perToken >= 0) {
      tpot.record(perToken / 1e9, g.base);
    }
    long out = AnswerTimes.outputTokens(released);
    if (released.usage().inputTokens() > 0 || out > 0) {
      tokens.record(released.usage().inputTokens(), g.input);
      tokens.record(out, g.output);
    }
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

  /** The attribute sets of one pool, class and tier. */
  private static final class Cell {
    private final Attributes where;
    // reason -> by decision (DECISIONS' order)
    private final ConcurrentMap<String, Attributes[]> admission = new ConcurrentHashMap<>();
    // request model ("" when unknown) -> by request format
    private final ConcurrentMap<String, GenAiSets[]> genAi = new ConcurrentHashMap<>();

    Cell(String pool, String cls, String tier) {
      where =
          Attributes.of(
              OtelRecorder.Sluice.POOL, pool,
              OtelRecorder.Sluice.CLASS, cls,
              OtelRecorder.Sluice.TIER, tier);
    }

    Attributes admission(String decision, String reason) {
      int i = 0;
      while (i < DECISIONS.length - 1 && !DECISIONS[i].equals(decision)) {
        i++;
      }
      Attributes[] byDecision = admission.get(reason);
      if (byDecision == null) {
        byDecision = admission.computeIfAbsent(reason, r -> new Attributes[DECISIONS.length]);
      }
      Attributes a = byDecision[i];
      if (a == null) {
        a =
            where.toBuilder()
                .put(OtelRecorder.Sluice.DECISION, DECISIONS[i])
                .put(OtelRecorder.Sluice.REASON, reason)
                .build();
        byDecision[i] = a; // a benign race: equal sets
      }
      return a;
    }

    GenAiSets genAi(RequestFormat format, @Nullable String model) {
      String key = model == null ? "" : model;
      GenAiSets[] byFormat = genAi.get(key);
      if (byFormat == null) {
        byFormat = genAi.computeIfAbsent(key, m -> new GenAiSets[FORMATS.length]);
      }
      GenAiSets g = byFormat[format.ordinal()];
      if (g == null) {
        Attributes base = where.toBuilder().putAll(GenAi.attributes(format, model).build()).build();
        g = new GenAiSets(base);
        byFormat[format.ordinal()] = g; // a benign race: equal sets
      }
      return g;
    }
  }

  /** One request kind's GenAI attributes, and those of its input and output token counts. */
  private static final class GenAiSets {
    final Attributes base;
    final Attributes input;
    final Attributes output;

    GenAiSets(Attributes base) {
      this.base = base;
      this.input = base.toBuilder().put(GenAi.TOKEN_TYPE, GenAi.INPUT).build();
      this.output = base.toBuilder().put(GenAi.TOKEN_TYPE, GenAi.OUTPUT).build();
    }
  }
}
