package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The service-level meters (docs/metrics.md, "Service levels"): time to first token and time per
 * output token by pool, class and tier; answers by result ({@code goodput}: 2xx within the
 * deadline); output tokens wasted on a cancel or a missed deadline. Labels are the policy's pools,
 * classes and tiers only (bounded). The answers' counters of every pool, class and tier exist from
 * {@link #bind} on, at zero, so an alert's {@code rate()} has its series before the first answer.
 * One per process ({@code AdmissionMetrics.part}); thread-safe.
 */
public final class SloMetrics {
  /** Arrival to the first body chunk of the answer. */
  public static final String TIME_TO_FIRST_TOKEN = "sluice.time.to.first.token";

  /** (End - first chunk) / (output tokens - 1) of a complete answer. */
  public static final String TIME_PER_OUTPUT_TOKEN = "sluice.time.per.output.token";

  /** Answers that ran upstream, by result (goodput, late, cancelled, failed). */
  public static final String ANSWERS = "sluice.answers";

  /** Output tokens produced for an answer cancelled or finished after its deadline. */
  public static final String WASTED_TOKENS = "sluice.wasted.tokens";

  /** The class's longest queue wait (its threshold for the predicted-wait alert). */
  public static final String CLASS_WAIT_LIMIT = "sluice.class.queue.wait.limit";

  private static final Duration[] TTFT_BUCKETS = {
    Duration.ofMillis(50),
    Duration.ofMillis(100),
    Duration.ofMillis(250),
    Duration.ofMillis(500),
    Duration.ofSeconds(1),
    Duration.ofSeconds(2),
    Duration.ofSeconds(5),
    Duration.ofSeconds(10),
    Duration.ofSeconds(30),
    Duration.ofSeconds(60)
  };

  private static final Duration[] TPOT_BUCKETS = {
    Duration.ofMillis(5),
    Duration.ofMillis(10),
    Duration.ofMillis(20),
    Duration.ofMillis(40),
    Duration.ofMillis(60),
    Duration.ofMillis(100),
    Duration.ofMillis(250),
    Duration.ofMillis(500),
    Duration.ofSeconds(1)
  };

  private final MeterRegistry registry;
  // pool -> class -> tier: three lookups, no key allocated per answer
  private final ConcurrentMap<String, ConcurrentMap<String, ConcurrentMap<String, Meters>>> meters =
      new ConcurrentHashMap<>();
  private final List<Meter> limits = new ArrayList<>();

  /** The process's SLO meters (one per registry: {@code AdmissionMetrics.part}). */
  public SloMetrics(MeterRegistry registry, LongSupplier tickerNanos) {
    this.registry = registry;
  }

  /**
   * Makes the answers' counters of every pool, class and tier of the policy (at zero) and the
   * classes' wait limits; removes those of pools, classes and tiers the policy no longer has.
   */
  public synchronized void bind(
      Set<String> pools, java.util.Map<String, Duration> classLimits, Set<String> tiers) {
    meters.forEach(
        (pool, byClass) -> {
          byClass.forEach(
              (cls, byTier) -> {
                byTier.forEach(
                    (tier, m) -> {
                      if (!pools.contains(pool)
                          || !classLimits.containsKey(cls)
                          || !tiers.contains(tier)) {
                        m.remove(registry);
                        byTier.remove(tier);
                      }
                    });
              });
        });
    for (String pool : pools) {
      for (String cls : classLimits.keySet()) {
        for (String tier : tiers) {
          forAnswer(pool, cls, tier);
        }
        // the predicted-wait alert's series, from start (the same meter AdmissionMetrics records)
        Timer.builder(MetricNames.QUEUE_WAIT_PREDICTED)
            .tags("pool", pool, "class", cls)
            .serviceLevelObjectives(MeterCache.WAIT_BUCKETS)
            .register(registry);
      }
    }
    lastMeters = null;
    limits.forEach(registry::remove);
    limits.clear();
    classLimits.forEach(
        (cls, limit) ->
            limits.add(
                Gauge.builder(CLASS_WAIT_LIMIT, limit, d -> d.toNanos() / 1e9)
                    .baseUnit("seconds")
                    .tag("class", cls)
                    .description(
                        "the class's maxQueueWait: the predicted-wait alert's threshold, seconds")
                    .register(registry)));
  }

  /** The meters of one pool, class and tier (made on first use). */
  public Meters forAnswer(String pool, String cls, String tier) {
    // The names come from the policy objects: the same instances answer after answer, so the last
    // meters are found by reference first (a miss takes the maps, which compare by value).
    Meters last = lastMeters;
    if (last != null && last.isFor(pool, cls, tier)) {
      return last;
    }
    Meters m = lookUp(pool, cls, tier);
    lastMeters = m;
    return m;
  }

  private volatile @Nullable Meters lastMeters;

  private Meters lookUp(String pool, String cls, String tier) {
    ConcurrentMap<String, ConcurrentMap<String, Meters>> byClass = meters.get(pool);
    if (byClass == null) {
      byClass = meters.computeIfAbsent(pool, p -> new ConcurrentHashMap<>());
    }
    ConcurrentMap<String, Meters> byTier = byClass.get(cls);
    if (byTier == null) {
      byTier = byClass.computeIfAbsent(cls, c -> new ConcurrentHashMap<>());
    }
    Meters m = byTier.get(tier);
    return m != null ? m : byTier.computeIfAbsent(tier, t -> new Meters(registry, pool, cls, t));
  }

  /** One pool, class and tier's meters. */
  public static final class Meters {
    private final String[] tags;
    private final Counter[] answers = new Counter[AnswerTimes.RESULTS.length];
    private volatile @Nullable Timer ttft;
    private volatile @Nullable Timer tpot;
    private volatile @Nullable Counter wastedCancelled;
    private volatile @Nullable Counter wastedDeadline;
    private final MeterRegistry registry;

    Meters(MeterRegistry registry, String pool, String cls, String tier) {
      this.registry = registry;
      this.tags = new String[] {"pool", pool, "class", cls, "tier", tier};
      for (int i = 0; i < answers.length; i++) {
        answers[i] =
            Counter.builder(ANSWERS)
                .tags(tags)
                .tag("result", AnswerTimes.RESULTS[i])
                .description(
                    "answers that ran upstream, by result: goodput (2xx within the deadline),"
                        + " late, cancelled, failed")
                .register(registry);
      }
    }

    /** Whether these are the meters of exactly these name instances (compared by reference). */
    boolean isFor(String pool, String cls, String tier) {
      return tags[1] == pool && tags[3] == cls && tags[5] == tier;
    }

    /** One answer of {@code result} ({@link AnswerTimes#RESULTS}). */
    public void answer(String result) {
      // by reference first (AnswerTimes's constants, compared as constants: no array read)
      Counter c =
          result == AnswerTimes.GOODPUT
              ? answers[0]
              : result == AnswerTimes.LATE
                  ? answers[1]
                  : result == AnswerTimes.CANCELLED
                      ? answers[2]
                      : result == AnswerTimes.FAILED ? answers[3] : byValue(result);
      if (c != null) {
        c.increment();
      }
    }

    private @Nullable Counter byValue(String result) {
      for (int i = 0; i < answers.length; i++) {
        if (AnswerTimes.RESULTS[i].equals(result)) {
          return answers[i];
        }
      }
      return null;
    }

    public void timeToFirstToken(long nanos) {
      Timer t = ttft;
      if (t == null) {
        t = timer(TIME_TO_FIRST_TOKEN, TTFT_BUCKETS, "arrival to the answer's first body chunk");
        ttft = t;
      }
      t.record(nanos, TimeUnit.NANOSECONDS);
    }

    public void timePerOutputToken(long nanos) {
      Timer t = tpot;
      if (t == null) {
        t =
            timer(
                TIME_PER_OUTPUT_TOKEN,
                TPOT_BUCKETS,
                "time per output token after the first of a complete answer");
        tpot = t;
      }
      t.record(nanos, TimeUnit.NANOSECONDS);
    }

    /** {@code tokens} wasted by {@code cause} ({@link AnswerTimes#waste}). */
    public void wasted(String cause, long tokens) {
      boolean cancelled = cause.equals(AnswerTimes.WASTE_CANCELLED);
      Counter c = cancelled ? wastedCancelled : wastedDeadline;
      if (c == null) {
        c =
            Counter.builder(WASTED_TOKENS)
                .tags(tags)
                .tag("cause", cause)
                .baseUnit("tokens")
                .description("output tokens produced for an answer cancelled or past its deadline")
                .register(registry);
        if (cancelled) {
          wastedCancelled = c;
        } else {
          wastedDeadline = c;
        }
      }
      c.increment(tokens);
    }

    private Timer timer(String name, Duration[] buckets, String description) {
      return Timer.builder(name)
          .tags(tags)
          .serviceLevelObjectives(buckets)
          .description(description)
          .register(registry);
    }

    void remove(MeterRegistry r) {
      for (Counter c : answers) {
        r.remove(c);
      }
      for (Meter m : new Meter[] {ttft, tpot, wastedCancelled, wastedDeadline}) {
        if (m != null) {
          r.remove(m);
        }
      }
    }
  }
}
