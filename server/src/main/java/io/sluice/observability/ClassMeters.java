package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Timer;
import io.sluice.core.admission.Outcome;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.session.Charge;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The meters of one (pool, class, tier), found once per stream ({@link AdmissionMetrics#forClass}):
 * the admit, estimate and release of an admitted request then update their meters without building
 * a tag key per call. Meters are registered on first use, as with the other methods.
 *
 * <p>The meters of a family (released by outcome, charged by rule and direction, ...) are held in
 * copy-on-write arrays: a record reads one volatile field and indexes it, and a meter's first use
 * publishes a copy with it. Two first uses at once may each publish a copy without the other's
 * meter; the one lost is found again on its next use (the cache gives the one registered meter).
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
  private volatile Counter[] released = new Counter[Outcome.values().length];
  // actual/input, actual/output
  private volatile DistributionSummary[] actual = new DistributionSummary[2];
  // by status class: 1 1xx .. 5 5xx, 6 429, 7 503
  private volatile Counter[] upstream = new Counter[8];
  // the pool's tokens charged: rule (chargeRule) × direction (input, output)
  private volatile Counter[] charged = new Counter[2 * 5];
  private volatile Counter[] reserveRules = new Counter[OutputReserves.RULES.size()];

  private static final String HEADERS = "headers";
  private final Timer admitAtHeaders; // AdmissionMetrics' own, registered with it

  ClassMeters(AdmissionMetrics metrics, String pool, String cls, String tier) {
    this.metrics = metrics;
    this.admitAtHeaders = metrics.admitLatency(HEADERS);
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
    // the phase most admits are made in (DecisionNotes' literal, interned): its timer held here
    (phase == HEADERS ? admitAtHeaders : metrics.admitLatency(phase))
        .record(nanos, TimeUnit.NANOSECONDS);
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
    Counter c = reserveRules[i];
    if (c == null) {
      c = metrics.reserveDecisionCounter(pool, rule);
      reserveRules = with(reserveRules, i, c);
    }
    c.increment();
  }

  /** The rule's place in {@link OutputReserves#RULES}: by reference first (they are constants). */
  private static int ruleIndex(String rule) {
    String[] rules = RESERVE_RULES;
    for (int i = 0; i < rules.length; i++) {
      if (rules[i] == rule) {
        return i;
      }
    }
    return OutputReserves.RULES.indexOf(rule);
  }

  /** {@link OutputReserves#RULES} as an array: no list call per compare. */
  private static final String[] RESERVE_RULES = OutputReserves.RULES.toArray(new String[0]);

  private DistributionSummary actualSummary(int i) {
    DistributionSummary d = actual[i];
    if (d == null) {
      String direction = i % 2 == 0 ? "input" : "output";
      d = metrics.actualSummary(pool, cls, direction);
      actual = with(actual, i, d);
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
    Counter c = upstream[i];
    if (c == null) {
      c = metrics.upstreamCounter(pool, status);
      upstream = with(upstream, i, c);
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

  /** Charge's rules, in the order of {@link #charged}'s rows. */
  private static final String[] CHARGE_RULES = {
    Charge.REPORTED, Charge.STREAMED, Charge.NO_ANSWER, Charge.UPSTREAM_ERROR, Charge.RESERVE
  };

  /** The rule's row: by reference first (a rule is one of Charge's constants), else -1. */
  private static int chargeRule(String rule) {
    for (int i = 0; i < CHARGE_RULES.length; i++) {
      if (CHARGE_RULES[i] == rule) {
        return i;
      }
    }
    for (int i = 0; i < CHARGE_RULES.length; i++) {
      if (CHARGE_RULES[i].equals(rule)) {
        return i;
      }
    }
    return -1;
  }

  private Counter chargedCounter(int i, String rule, String direction) {
    Counter c = charged[i];
    if (c == null) {
      c = metrics.chargedCounter(pool, rule, direction);
      charged = with(charged, i, c);
    }
    return c;
  }

  /** Same meters as {@code released(pool, cls, outcome, heldNanos)}. */
  public void released(Outcome outcome, long heldNanos) {
    Counter c = released[outcome.ordinal()];
    if (c == null) {
      c = metrics.releasedCounter(pool, cls, outcome);
      released = with(released, outcome.ordinal(), c);
    }
    c.increment();
    Timer t = permitHold;
    if (t == null) {
      permitHold = t = metrics.permitHold(pool, cls);
    }
    t.record(Math.max(0, heldNanos), TimeUnit.NANOSECONDS);
  }

  /** {@code row} with {@code meter} at {@code i}: a copy, published by the caller's write. */
  private static <M> M[] with(M[] row, int i, M meter) {
    M[] copy = row.clone();
    copy[i] = meter;
    return copy;
  }
}
