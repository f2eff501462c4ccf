package io.sluice.core.estimate;

import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * One key's learned state of the {@link OutputReserves}: decayed histograms of one answer's output,
 * absolute and relative to its cap, their log moments, each form's loss, the tenants weighed on a
 * coarse key, and this replica's additions since the last exchange. Thread-safe: each key by its
 * own lock.
 */
final class ReserveStats {
  /** Relative samples (actual / cap, in (0, 1]) are stored scaled to [1, REL_SCALE]. */
  private static final double REL_SCALE = 4096;

  private static final double ABS_MAX = 1 << 20;
  private static final double MIN_LOG_SD = 0.05;

  /**
   * One answer's estimate, whether it reached the learned quantile, and whether there was any bound
   * (false with too few answers for one: the estimate is then the cap).
   */
  record Estimate(long tokens, boolean learned, boolean bounded) {}

  private final double quantile;
  private final DecayedLogHistogram absolute = new DecayedLogHistogram(ABS_MAX);
  private final DecayedLogHistogram relative = new DecayedLogHistogram(REL_SCALE);
  private final LogMoments absLog = new LogMoments();
  private final LogMoments relLog = new LogMoments();
  private double weight; // decayed count of the answers learned (an answer weighs <= 1)
  private long samples;
  private long uses;
  private double absQuantile = Double.NaN; // tokens of one answer
  private double relQuantile = Double.NaN; // fraction of the cap, in (0, 1]
  private double lossAbs; // decayed mean pinball loss of each form at the key's quantile
  private double lossRel;
  // each form's bound at the last confidence asked, NaN until asked (recomputed after an answer or
  // a new confidence); an estimate computes only the winning form's (a quantile and an exp() each)
  private double boundFor = Double.NaN;
  private double absBound = Double.NaN;
  private double relBound = Double.NaN;
  // coarse keys with tenant keys on: each tenant's decayed weight here (insertion order), each a
  // mutable holder (boxed Doubles were replaced per tenant and per answer)
  private @Nullable LinkedHashMap<String, Weight> tenants;
  // the last rank computed (n and confidence rarely change between answers: the loop of exp/log
  // in ReserveBounds.rank ran per request and per bound)
  private @Nullable Rank rank;
  // this replica's additions since the last exchange (sums over answers, as ReserveSnapshot)
  private double[] addAbs = new double[0];
  private double[] addRel = new double[0];
  private final double[] addSums = new double[6]; // w, n, la, la2, lr, lr2

  ReserveStats(double quantile) {
    this.quantile = quantile;
  }

  /** A key's empty state (a cache loader that captures nothing: the key holds the quantile). */
  static ReserveStats of(ReserveKey k) {
    return new ReserveStats(k.quantile());
  }

  synchronized long samples() {
    return samples;
  }

  /**
   * Whether its answers could come from a distribution whose quantile is {@code bound}: the answers
   * at or below it are not fewer than a binomial draw at the quantile gives with probability {@code
   * alpha}.
   */
  synchronized boolean agreesWith(double bound, double alpha) {
    long n = (long) Math.floor(weight + 1e-6);
    double below = absolute.fractionAtMost(bound) * weight;
    if (n < 1 || Double.isNaN(below)) {
      return true;
    }
    // the smallest count c with P(Bin(n, q) <= c) >= alpha: fewer is improbable
    long least = rank(n, alpha) - 1;
    return below + 1e-6 >= least;
  }

  /** The largest answer learned (its bucket's upper edge; 0 with none). */
  synchronized double largest() {
    double v = absolute.quantile(1.0);
    return Double.isNaN(v) ? 0 : v;
  }

  /** The decayed weight learned (tenants bounded): whether a coarse key may serve as a prior. */
  synchronized double weighed() {
    return weight;
  }

  /**
   * Whether a coarse key's weight counts as {@code warmup} answers: the decay of the answers
   * learned while it filled (under 2 % for five answers at the default half-life) does not hold a
   * warm key back; half an answer short does.
   */
  static boolean warm(double weight, int warmup) {
    return weight + 0.5 >= warmup;
  }

  /**
   * {@link #estimate} once the key has {@code warmup} answers, else null: the warm-up check and the
   * estimate under one lock (they took it twice per request).
   */
  synchronized @Nullable Estimate estimateIfWarm(int warmup, long cap, double confidence) {
    return samples >= warmup ? estimate(cap, confidence, true) : null;
  }

  /**
   * A coarse key's {@link #estimate} as a prior (not counted as a use) once its weight counts as
   * {@code warmup} answers ({@link #warm}), else null; under one lock.
   */
  synchronized @Nullable Estimate estimateIfWeighed(int warmup, long cap, double confidence) {
    return warm(weight, warmup) ? estimate(cap, confidence, false) : null;
  }

  /**
   * One answer's estimate for a cap: the upper bound on the quantile at {@code confidence} in the
   * form that predicted better, at least 1 and at most the cap.
   */
  synchronized Estimate estimate(long cap, double confidence, boolean use) {
    if (use) {
      uses++;
    }
    boolean rel = relativeWins();
    double bound = rel ? relBound(confidence) / REL_SCALE * cap : absBound(confidence);
    double point = rel ? relQuantile * cap : absQuantile;
    long tokens = Math.max(1, (long) Math.ceil(Math.min(bound, (double) cap)));
    return new Estimate(
        tokens, bound <= point * DecayedLogHistogram.BASE, bound < Double.POSITIVE_INFINITY);
  }

  /**
   * {@link ReserveBounds#rank} at this key's quantile, memoized on the last two (n, confidence)
   * asked (an estimate's confidence, and {@link #agreesWith}'s alpha).
   */
  private long rank(long n, double confidence) {
    Rank r = rank;
    for (Rank m = r; m != null; m = m.older) {
      if (m.n == n && m.confidence == confidence) {
        return m.k;
      }
    }
    Rank older = r == null ? null : new Rank(r.n, r.confidence, r.k, null);
    Rank fresh = new Rank(n, confidence, ReserveBounds.rank(n, quantile, confidence), older);
    rank = fresh;
    return fresh.k;
  }

  private record Rank(long n, double confidence, long k, @Nullable Rank older) {}

  private boolean relativeWins() {
    return lossRel < lossAbs;
  }

  /** The absolute form's bound at {@code confidence} (computed once per answer and confidence). */
  private double absBound(double confidence) {
    boundsFor(confidence);
    if (Double.isNaN(absBound)) {
      absBound = bound(absolute, absLog, confidence);
    }
    return absBound;
  }

  /** The relative form's bound, as {@link #absBound}. */
  private double relBound(double confidence) {
    boundsFor(confidence);
    if (Double.isNaN(relBound)) {
      relBound = Math.min(REL_SCALE, bound(relative, relLog, confidence));
    }
    return relBound;
  }

  /** Both bounds are for {@code confidence}: when it changed, neither is computed yet. */
  private void boundsFor(double confidence) {
    if (boundFor != confidence) {
      boundFor = confidence;
      absBound = Double.NaN;
      relBound = Double.NaN;
    }
  }

  /** Both forms' bounds are stale: an answer was learned or a shared state adopted. */
  private void boundsStale() {
    boundFor = Double.NaN;
  }

  /**
   * The upper bound on the quantile: the order statistic of {@link ReserveBounds#rank} when the
   * weight learned allows one, else the log-normal tolerance bound (never below the largest value
   * seen).
   */
  private double bound(DecayedLogHistogram h, LogMoments m, double c) {
    long n = (long) Math.floor(weight + 1e-6);
    long k = rank(n, c);
    if (n >= 1 && k <= n) {
      return h.quantile(Math.min(1.0, (double) k / n));
    }
    double kf = ReserveBounds.toleranceFactor(weight, quantile, c);
    if (!Double.isFinite(kf)) {
      return Double.POSITIVE_INFINITY;
    }
    double mean = m.s1 / weight;
    double var = Math.max(0, m.s2 / weight - mean * mean) * weight / (weight - 1);
    double sd = Math.max(MIN_LOG_SD, Math.sqrt(var));
    return Math.max(Math.exp(mean + kf * sd), h.quantile(1.0));
  }

  /**
   * The logarithm of an answer's relative value as {@link #record} learns it: {@code
   * Math.log(Math.max(1, rel))} of {@code rel = min(1, actual / cap) × REL_SCALE}.
   */
  static double relativeLog(double actual, long cap) {
    return Math.log(Math.max(1, Math.min(1.0, actual / cap) * REL_SCALE));
  }

  /**
   * Learns one answer ({@code cut}: one cut short, a lower bound). On a coarse key {@code tenant}
   * names who sent it, and it weighs at most what keeps that tenant {@code lead} answers ahead of
   * all other tenants together (so its share tends to half as the key fills). {@code la} and {@code
   * lr} are {@code Math.log(Math.max(1, actual))} and {@link #relativeLog}, computed once for both
   * keys of an answer; NaN: computed here (a cut answer, rarely learned).
   */
  synchronized void record(
      long cap,
      double actual,
      double la,
      double lr,
      double growth,
      double alpha,
      boolean cut,
      @Nullable String tenant,
      double lead) {
    if (cut && !(samples > 0 && actual > absQuantile && actual / cap > relQuantile)) {
      return; // not past the learned quantile: it says nothing usable
    }
    double factor = 1;
    Weight held = null; // the tenant's weight, looked up once for its allowance and its update
    if (tenant != null) {
      LinkedHashMap<String, Weight> t = tenants;
      held = t == null ? null : t.get(tenant);
      factor = allowance(held == null ? 0 : held.value, growth, lead);
      if (!(factor > 0)) {
        return;
      }
    }
    if (samples > 0 && !cut) { // score both forms' predictions before they see this answer
      lossAbs += alpha * (pinball(actual, Math.min(cap, absQuantile)) - lossAbs);
      lossRel += alpha * (pinball(actual, Math.min(cap, relQuantile * cap)) - lossRel);
    }
    double rel = Math.min(1.0, actual / cap) * REL_SCALE;
    // each value's logarithm once: its bucket, its log moments and this replica's additions read
    // the same Math.log(Math.max(1, v)) (they computed it three times each)
    if (Double.isNaN(la)) {
      la = Math.log(Math.max(1, actual));
      lr = Math.log(Math.max(1, rel));
    }
    int ai = absolute.index(actual, la);
    int ri = relative.index(rel, lr);
    // the next sample's weight growth once for both histograms (a part answer's is a pow())
    double step = factor == 1 ? growth : Math.pow(growth, factor);
    absolute.addAtStep(ai, factor, step);
    relative.addAtStep(ri, factor, step);
    double decay = factor == 1 ? 1 / growth : Math.pow(growth, -factor);
    absLog.add(la, decay, factor);
    relLog.add(lr, decay, factor);
    weight = weight * decay + factor;
    if (tenant != null) {
      weigh(tenant, held, decay, factor);
    }
    samples++;
    addition(ai, ri, la, lr, factor);
    absQuantile = absolute.quantile(quantile);
    relQuantile = relative.quantile(quantile) / REL_SCALE;
    boundsStale();
  }

  /**
   * How much of a full answer {@code tenant} may add so that afterwards it is at most {@code lead}
   * answers ahead of all other tenants together (its share tends to half as the key fills; one
   * tenant alone holds {@code lead} answers' weight): {@code lead + (W_others - W_t) / growth}
   * within [0, 1].
   */
  private double allowance(double own, double growth, double lead) {
    double ahead = weight - 2 * own; // others' weight minus its own
    return Math.min(1, Math.max(0, lead + (ahead >= 0 ? ahead / growth : ahead)));
  }

  /**
   * Ages every tenant's weight by {@code decay} and adds {@code factor} to {@code tenant}'s ({@code
   * held}, its weight found by {@link #record}, or null: a new tenant, last in order).
   */
  private void weigh(String tenant, @Nullable Weight held, double decay, double factor) {
    LinkedHashMap<String, Weight> t = tenants;
    if (t == null) {
      t = new LinkedHashMap<>();
      tenants = t;
    }
    for (Weight w : t.values()) {
      w.value = w.value * decay;
    }
    if (held != null) {
      held.value = held.value + factor;
    } else {
      t.put(tenant, new Weight(factor));
    }
    if (t.size()
        > OutputReserves
            .MAX_TENANTS_PER_KEY) { // forget the least weighty (its weight stays learned)
      String lightest = null;
      double least = Double.POSITIVE_INFINITY;
      for (Map.Entry<String, Weight> e : t.entrySet()) {
        if (!e.getKey().equals(tenant) && e.getValue().value < least) {
          least = e.getValue().value;
          lightest = e.getKey();
        }
      }
      if (lightest != null) {
        t.remove(lightest);
      }
    }
  }

  /**
   * One answer's additions: its buckets {@code ai}, {@code ri} and logarithms {@code la}, {@code
   * lr}.
   */
  private void addition(int ai, int ri, double la, double lr, double factor) {
    if (addAbs.length == 0) {
      addAbs = new double[absolute.bucketCount()];
      addRel = new double[relative.bucketCount()];
    }
    addAbs[ai] += factor;
    addRel[ri] += factor;
    addSums[0] += factor;
    addSums[1] += 1;
    addSums[2] += factor * la;
    addSums[3] += factor * la * la;
    addSums[4] += factor * lr;
    addSums[5] += factor * lr * lr;
  }

  private static final String[] SUMS = {"w", "n", "la", "la2", "lr", "lr2"};

  /** The additions since the last call as {@link ReserveSnapshot} fields, or null if none. */
  synchronized @Nullable Map<String, Double> takeAdditions() {
    if (!(addSums[1] > 0)) {
      return null;
    }
    Map<String, Double> f = new java.util.HashMap<>();
    for (int i = 0; i < SUMS.length; i++) {
      f.put(SUMS[i], addSums[i]);
    }
    for (int i = 0; i < addAbs.length; i++) {
      if (addAbs[i] > 0) {
        f.put("a" + i, addAbs[i]);
      }
    }
    for (int i = 0; i < addRel.length; i++) {
      if (addRel[i] > 0) {
        f.put("r" + i, addRel[i]);
      }
    }
    java.util.Arrays.fill(addAbs, 0);
    java.util.Arrays.fill(addRel, 0);
    java.util.Arrays.fill(addSums, 0);
    return f;
  }

  /** The shared state of the key, plus this replica's additions not yet in it. */
  synchronized void adopt(Map<String, Double> f) {
    double w = f.getOrDefault("w", 0.0);
    if (!(w > 0) || !Double.isFinite(w)) {
      return;
    }
    absolute.clear();
    relative.clear();
    absolute.addWeights(buckets(f, "a", absolute.bucketCount(), addAbs));
    relative.addWeights(buckets(f, "r", relative.bucketCount(), addRel));
    weight = w + addSums[0];
    absLog.s1 = f.getOrDefault("la", 0.0) + addSums[2];
    absLog.s2 = f.getOrDefault("la2", 0.0) + addSums[3];
    relLog.s1 = f.getOrDefault("lr", 0.0) + addSums[4];
    relLog.s2 = f.getOrDefault("lr2", 0.0) + addSums[5];
    samples = (long) Math.floor(f.getOrDefault("n", 0.0) + addSums[1] + 1e-6);
    absQuantile = absolute.quantile(quantile);
    relQuantile = relative.quantile(quantile) / REL_SCALE;
    boundsStale();
  }

  private static double[] buckets(Map<String, Double> f, String prefix, int n, double[] plus) {
    double[] b = new double[n];
    for (int i = 0; i < n; i++) {
      Double v = f.get(prefix + i);
      b[i] = (v == null ? 0 : Math.max(0, v)) + (i < plus.length ? plus[i] : 0);
    }
    return b;
  }

  private double pinball(double actual, double predicted) {
    double d = actual - predicted;
    return d >= 0 ? quantile * d : (quantile - 1) * d;
  }

  synchronized OutputReserves.KeyView view(
      String pool, String model, String scope, String tenant, int warmup, double confidence) {
    double shownBound = absBound(confidence);
    LinkedHashMap<String, Weight> t = tenants;
    return new OutputReserves.KeyView(
        pool,
        model,
        scope,
        tenant,
        quantile,
        samples,
        uses,
        (tenant.isEmpty() && t != null) ? warm(weight, warmup) : samples >= warmup,
        relativeWins() ? "relative" : "absolute",
        absQuantile,
        relQuantile,
        lossAbs,
        lossRel,
        weight,
        shownBound,
        t == null ? 0 : t.size());
  }

  /**
   * A tenant key's bound, still loose, capped by the pool's (the coarse key's, tenants bounded)
   * while the tenant's own answers agree with it: a tenant whose answers look like the others' is
   * bounded with the others' evidence too. They disagree when fewer of them lie at or below the
   * pool's bound than a binomial draw at the key's quantile would give with probability {@code 1 −
   * confidence}: such a tenant (its answers run longer) keeps its own bound. Never below the
   * tenant's own largest answer.
   */
  static long withPool(
      long perAnswer,
      ReserveStats own,
      ReserveStats coarse,
      long capPerAnswer,
      OutputReserves.Settings s) {
    if (!warm(coarse.weighed(), s.warmup())) {
      return perAnswer;
    }
    Estimate pool = coarse.estimate(capPerAnswer, s.confidence(), false);
    if (!pool.bounded() || pool.tokens() >= perAnswer) {
      return perAnswer;
    }
    if (!own.agreesWith(pool.tokens(), 1 - s.confidence())) {
      return perAnswer;
    }
    return Math.min(perAnswer, Math.max(pool.tokens(), (long) Math.ceil(own.largest())));
  }

  /** A tenant's decayed weight on a coarse key. */
  private static final class Weight {
    double value;

    Weight(double value) {
      this.value = value;
    }
  }

  /** Decayed sums of the weights and of the logarithms of the values and their squares. */
  private static final class LogMoments {
    double s1;
    double s2;

    /** One value, as its {@code l = Math.log(Math.max(1, value))}. */
    void add(double l, double decay, double factor) {
      s1 = s1 * decay + factor * l;
      s2 = s2 * decay + factor * l * l;
    }
  }
}
