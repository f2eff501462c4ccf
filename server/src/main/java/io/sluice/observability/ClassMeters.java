package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Timer;
import io.sluice.core.admission.Outcome;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.session.Charge;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;

/**
 * The meters of one (pool, class, tier), found once per stream ({@link AdmissionMetrics#forClass}):
 * the admit, estimate and release of an admitted request then update their meters without building
 * a tag key per call. Meters are registered on first use, as with the other methods.
 */
public final class ClassMeters {
  private final AdmissionMetrics metrics;
  private final String pool;
  private final String cls;
  private final String tier;
  private volatile @Nullable Counter admitted;
  private volatile @Nullable DistributionSummary estimatedInput;
  private volatile @Nullable DistributionSummary estimatedOutput;
  private volatile @Nullable Timer permitHold;
  private final AtomicReferenceArray<Counter> released =
      new AtomicReferenceArray<>(Outcome.values().length);
  // actual/input, actual/output
  private final AtomicReferenceArray<DistributionSummary> actual = new AtomicReferenceArray<>(2);
  // by status class: 1 1xx .. 5 5xx, 6 429, 7 503
  private final AtomicReferenceArray<Counter> upstream = new AtomicReferenceArray<>(8);
  // the pool's tokens charged: rule (chargeRule) × direction (input, output)
  private final AtomicReferenceArray<Counter> charged = new AtomicReferenceArray<>(2 * 5);

  ClassMeters(AdmissionMetrics metrics, String pool, String cls, String tier) {
    this.metrics = metrics;
    this.pool = pool;
    this.cls = cls;
    this.tier = tier;
  }

  /** Whether these are the meters of exactly these name instances (compared by reference). */
  boolean isFor(String pool, String cls, String tier) {
    return this.pool == pool && this.cls == cls && this.tier == tier;
  }

  String pool() {
    return pool;
  }

  String cls() {
    return cls;
  }

  /** Same meters as {@code decision(pool, cls, tier, "admit", "admitted", phase, nanos)}. */
  public void admitted(String phase, long nanos) {
    Counter c = admitted;
    if (c == null) {
      admitted = c = metrics.decisionCounter(pool, cls, tier, "admit", "admitted");
    }
    c.increment();
    metrics.admitLatency(phase).record(nanos, TimeUnit.NANOSECONDS);
  }

  /** Same meters as {@code estimated(pool, cls, input, output)}. */
  public void estimated(long input, long output) {
    DistributionSummary in = estimatedInput;
    DistributionSummary out = estimatedOutput;
    if (in == null || out == null) {
      estimatedInput = in = metrics.estimatedSummary(pool, cls, "input");
      estimatedOutput = out = metrics.estimatedSummary(pool, cls, "output");
    }
    in.record(input);
    out.record(output);
  }

  /**
   * The usage of a complete answer: {@code sluice_tokens_actual} by class, and actual ÷ estimate by
   * {@code format} ({@link AdmissionMetrics#actualToEstimate}).
   */
  public void actual(String format, long input, long output, long estInput, long estOutput) {
    actualSummary(0).record(input);
    actualSummary(1).record(output);
    // the ratio meters of the last format seen (a class's requests mostly share one), each
    // registered on first use as AdmissionMetrics.actualToEstimate does: no tag key per answer
    Ratios r = ratios;
    if (r == null || !r.format.equals(format)) {
      r = new Ratios(format, null, null);
    }
    Ratios had = r;
    if (estInput > 0) {
      if (r.input == null) {
        r = new Ratios(format, metrics.ratio(pool, format, "input"), r.output);
      }
      java.util.Objects.requireNonNull(r.input, "input").record((double) input / estInput);
    }
    if (estOutput > 0) {
      if (r.output == null) {
        r = new Ratios(format, r.input, metrics.ratio(pool, format, "output"));
      }
      java.util.Objects.requireNonNull(r.output, "output").record((double) output / estOutput);
    }
    if (r != had || ratios == null) {
      ratios = r; // a benign race: both threads hold the one registered summary
    }
  }

  private volatile @Nullable Ratios ratios;

  /** One format's actual ÷ estimate summaries (null: not registered yet). */
  private record Ratios(
      String format, @Nullable DistributionSummary input, @Nullable DistributionSummary output) {}

  /** Same meter as {@code reserveDecision(pool, rule)}. */
  public void reserveDecision(String rule) {
    int i = ruleIndex(rule);
    if (i < 0) { // not one of the reserve's rules: not cached
      metrics.reserveDecision(pool, rule);
      return;
    }
    Counter c = reserveRules.get(i);
    if (c == null) { // a benign race: both threads get the one registered counter
      c = metrics.reserveDecisionCounter(pool, rule);
      reserveRules.set(i, c);
    }
    c.increment();
  }

  /** The rule's place in {@link OutputReserves#RULES}: by reference first (they are constants). */
  private static int ruleIndex(String rule) {
    List<String> rules = OutputReserves.RULES;
    for (int i = 0; i < rules.size(); i++) {
      if (rules.get(i) == rule) {
        return i;
      }
    }
    return rules.indexOf(rule);
  }

  private final AtomicReferenceArray<Counter> reserveRules =
      new AtomicReferenceArray<>(OutputReserves.RULES.size());

  private DistributionSummary actualSummary(int i) {
    DistributionSummary d = actual.get(i);
    if (d == null) { // a benign race: both threads get the one registered summary
      String direction = i % 2 == 0 ? "input" : "output";
      d = metrics.actualSummary(pool, cls, direction);
      actual.set(i, d);
    }
    return d;
  }

  /** Same meter as {@code upstreamResponse(pool, status)}. */
  public void upstreamResponse(int status) {
    int i =
        status == 429 ? 6 : status == 503 ? 7 : status >= 100 && status < 600 ? status / 100 : 8;
    if (i == 8) { // outside 1xx..5xx: not cached (each odd status its own class)
      metrics.upstreamCounter(pool, status).increment();
      return;
    }
    Counter c = upstream.get(i);
    if (c == null) {
      c = metrics.upstreamCounter(pool, status);
      upstream.set(i, c);
    }
    c.increment();
  }

  /**
   * Same meters as {@code charged(pool, rule, input, output)}, for the pool of these meters (by
   * pool only, as there).
   */
  public void charged(String rule, long input, long output) {
    int r = chargeRule(rule);
    if (r < 0) { // not one of Charge's rules: not cached
      metrics.charged(pool, rule, input, output);
      return;
    }
    if (input > 0) {
      chargedCounter(2 * r, rule, "input").increment(input);
    }
    if (output > 0) {
      chargedCounter(2 * r + 1, rule, "output").increment(output);
    }
  }

  private static int chargeRule(String rule) {
    return switch (rule) {
      case Charge.REPORTED -> 0;
      case Charge.STREAMED -> 1;
      case Charge.NO_ANSWER -> 2;
      case Charge.UPSTREAM_ERROR -> 3;
      case Charge.RESERVE -> 4;
      default -> -1;
    };
  }

  private Counter chargedCounter(int i, String rule, String direction) {
    Counter c = charged.get(i);
    if (c == null) { // a benign race: both threads get the one registered counter
      c = metrics.chargedCounter(pool, rule, direction);
      charged.set(i, c);
    }
    return c;
  }

  /** Same meters as {@code released(pool, cls, outcome, heldNanos)}. */
  public void released(Outcome outcome, long heldNanos) {
    Counter c = released.get(outcome.ordinal());
    if (c == null) { // a benign race: both threads get the one registered counter
      c = metrics.releasedCounter(pool, cls, outcome);
      released.set(outcome.ordinal(), c);
    }
    c.increment();
    Timer t = permitHold;
    if (t == null) {
      permitHold = t = metrics.permitHold(pool, cls);
    }
    t.record(Math.max(0, heldNanos), TimeUnit.NANOSECONDS);
  }
}
