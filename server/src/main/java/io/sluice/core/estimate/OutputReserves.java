package io.sluice.core.estimate;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * The learned output reserve (docs/estimation.md, "Learned output reserve"): per key (pool, model,
 * route or class, quantile; and the same with the tenant), a decayed histogram of the output tokens
 * one answer actually used, absolute and relative to the requested cap. A request reserves {@code
 * min(its cap, estimate)} per answer, times its answers, where the estimate is:
 *
 * <ul>
 *   <li>{@code prior}, while the tenant's key has fewer than {@code warmup} answers: what the same
 *       pool, model and scope learned across tenants (each tenant at most half of that weight, so
 *       no tenant sets it alone), else the class's {@code defaultOutputTokens};
 *   <li>{@code bound}, from {@code warmup} answers on: an upper confidence bound on the key's
 *       quantile ({@link ReserveBounds}) at {@code confidence}, which tightens as answers arrive;
 *   <li>{@code learned}, once that bound is within one bucket (10 %) of the learned quantile.
 * </ul>
 *
 * <p>An answer cut short (client cancel, reset) is a censored sample: its true length is above what
 * it streamed. It is learned when that is above the key's current quantile (it then counts as one
 * answer above it, which is all the quantile needs to know), and ignored below (it would teach the
 * key its cut). The reserve is never above the request's cap (or the class default when it set
 * none); an answer that outgrows it grows its permit in flight ({@code Permit.grow}).
 *
 * <p>Thread-safe: one per process (it outlives config snapshots, so a reload keeps what was
 * learned); keys are bounded by {@code maxKeys} (Caffeine, the coldest evicted), each key by its
 * own lock, the tenants weighed on a coarse key by {@link #MAX_TENANTS_PER_KEY}.
 */
public final class OutputReserves {
  /** The key's bound reached its learned quantile (within a bucket) and was below the cap. */
  public static final String RULE_LEARNED = "learned";

  /** The key's upper confidence bound, still above its learned quantile, was below the cap. */
  public static final String RULE_BOUND = "bound";

  /**
   * The key has fewer than {@code warmup} answers: the pool's learned value across tenants, or the
   * class default, and never above the cap.
   */
  public static final String RULE_PRIOR = "prior";

  /** The key was warmed, and the client's cap (or the class default) was lower or equal. */
  public static final String RULE_CAP = "cap";

  /** Learning is disabled ({@code estimation.learnedReserve.enabled: false}). */
  public static final String RULE_OFF = "off";

  /** Every rule, the metric's closed tag set. */
  public static final List<String> RULES =
      List.of(RULE_PRIOR, RULE_BOUND, RULE_LEARNED, RULE_CAP, RULE_OFF);

  /** Tenants whose weight a coarse key tracks (the least weighty forgotten beyond). */
  public static final int MAX_TENANTS_PER_KEY = 64;

  /** Relative samples (actual / cap, in (0, 1]) are stored scaled to [1, REL_SCALE]. */
  private static final double REL_SCALE = 4096;

  private static final double ABS_MAX = 1 << 20;
  private static final int MAX_NAME_CHARS = 128;
  private static final double MIN_LOG_SD = 0.05;

  /**
   * @param enabled learn and apply (false: the reserve is the cap or class default, rule {@code
   *     off})
   * @param warmup answers a tenant's key needs before its own bound is used ({@code >= 1})
   * @param halfLife answers after which an answer weighs half as much as the newest
   * @param maxKeys keys kept (coarse and tenant keys together); the coldest are evicted
   * @param tenantKeys learn per tenant (each tenant's own key first, the coarse key its prior)
   * @param confidence the confidence of the upper bound on the quantile, in [0.5, 0.999]
   * @param poolPrior a key not warmed starts from what its pool, model and scope learned across
   *     tenants (false: from the class's {@code defaultOutputTokens})
   * @param shareIntervalMillis how often a replica exchanges its new answers through the shared
   *     store
   * @param shareWindowMillis the stored state's half-life in time: an answer older than this weighs
   *     half as much, and a key not written for twice this is forgotten
   */
  public record Settings(
      boolean enabled,
      int warmup,
      int halfLife,
      int maxKeys,
      boolean tenantKeys,
      double confidence,
      boolean poolPrior,
      long shareIntervalMillis,
      long shareWindowMillis) {
    public static final Settings DEFAULTS = builder().build();
    public static final Settings OFF =
        builder().enabled(false).maxKeys(1).tenantKeys(false).build();

    public Settings {
      String p = "estimation.learnedReserve.";
      if (warmup < 1) {
        throw new IllegalArgumentException(p + "warmup: " + warmup + " (expected: >= 1)");
      }
      if (halfLife < 1) {
        throw new IllegalArgumentException(p + "halfLife: " + halfLife + " (expected: >= 1)");
      }
      if (maxKeys < 1) {
        throw new IllegalArgumentException(p + "maxKeys: " + maxKeys + " (expected: >= 1)");
      }
      if (!(confidence >= 0.5 && confidence <= 0.999)) {
        throw new IllegalArgumentException(
            p + "confidence: " + confidence + " (expected: 0.5 <= value <= 0.999)");
      }
      if (shareIntervalMillis < 100) {
        throw new IllegalArgumentException(
            p + "shareInterval: " + shareIntervalMillis + "ms (expected: >= 100ms)");
      }
      if (shareWindowMillis < shareIntervalMillis) {
        throw new IllegalArgumentException(
            p
                + "shareWindow: "
                + shareWindowMillis
                + "ms (expected: >= shareInterval, "
                + shareIntervalMillis
                + "ms)");
      }
    }

    public static Builder builder() {
      return new Builder();
    }

    public Builder toBuilder() {
      return new Builder()
          .enabled(enabled)
          .warmup(warmup)
          .halfLife(halfLife)
          .maxKeys(maxKeys)
          .tenantKeys(tenantKeys)
          .confidence(confidence)
          .poolPrior(poolPrior)
          .shareIntervalMillis(shareIntervalMillis)
          .shareWindowMillis(shareWindowMillis);
    }

    /** Builds {@link Settings}; starts from the documented defaults. */
    public static final class Builder {
      private boolean enabled = true;
      private int warmup = 5;
      private int halfLife = 200;
      private int maxKeys = 2048;
      private boolean tenantKeys = true;
      private double confidence = 0.9;
      private boolean poolPrior = true;
      private long shareIntervalMillis = 10_000;
      private long shareWindowMillis = 3_600_000;

      private Builder() {}

      public Builder enabled(boolean v) {
        enabled = v;
        return this;
      }

      public Builder warmup(int v) {
        warmup = v;
        return this;
      }

      public Builder halfLife(int v) {
        halfLife = v;
        return this;
      }

      public Builder maxKeys(int v) {
        maxKeys = v;
        return this;
      }

      public Builder tenantKeys(boolean v) {
        tenantKeys = v;
        return this;
      }

      public Builder confidence(double v) {
        confidence = v;
        return this;
      }

      public Builder poolPrior(boolean v) {
        poolPrior = v;
        return this;
      }

      public Builder shareIntervalMillis(long v) {
        shareIntervalMillis = v;
        return this;
      }

      public Builder shareWindowMillis(long v) {
        shareWindowMillis = v;
        return this;
      }

      public Settings build() {
        return new Settings(
            enabled,
            warmup,
            halfLife,
            maxKeys,
            tenantKeys,
            confidence,
            poolPrior,
            shareIntervalMillis,
            shareWindowMillis);
      }
    }
  }

  /** A request's output reserve and the rule that gave it. */
  public record Reserve(long outputTokens, String rule) {}

  /** What {@code /debug/estimates} shows of one key. */
  public record KeyView(
      String pool,
      String model,
      String scope,
      String tenant,
      double quantile,
      long samples,
      long uses,
      boolean warmed,
      String form,
      double absolute,
      double relative,
      double lossAbsolute,
      double lossRelative,
      double effectiveSamples,
      double absoluteBound,
      int tenantsWeighed) {}

  private record Key(String pool, String model, String scope, double quantile, String tenant) {}

  private volatile Settings settings;
  private final Cache<Key, Stats> keys;
  private final LongAdder evictions = new LongAdder();

  public OutputReserves(Settings settings) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.keys =
        Caffeine.newBuilder()
            .maximumSize(settings.maxKeys())
            .executor(Runnable::run) // evict on the caller's thread: the bound holds at once
            .removalListener(
                (@Nullable Key k, @Nullable Stats v, RemovalCause cause) -> {
                  if (cause.wasEvicted()) {
                    evictions.increment();
                  }
                })
            .build();
  }

  /** A learner that never learns (tests, tools). */
  public static OutputReserves off() {
    return new OutputReserves(Settings.OFF);
  }

  /** A reload's settings; learned keys are kept (the coldest evicted if {@code maxKeys} shrank). */
  public void reconfigure(Settings next) {
    settings = Objects.requireNonNull(next, "settings");
    keys.policy().eviction().ifPresent(e -> e.setMaximum(next.maxKeys()));
    keys.cleanUp();
  }

  public Settings settings() {
    return settings;
  }

  /**
   * The reserve of a request.
   *
   * @param capPerAnswer the reserve of one answer by the old rule: the client's cap clamped to the
   *     class maximum, or the class default when it set none
   * @param classDefault the class's {@code defaultOutputTokens}: the prior of a key with nothing
   *     learned (never above {@code capPerAnswer})
   * @param answers how many answers it asks for ({@code n}, {@code best_of}; {@code >= 1})
   * @param oldReserve the reserve by the old rule (the estimate's); never exceeded
   */
  public Reserve reserve(
      String pool,
      @Nullable String model,
      String scope,
      String tenant,
      double quantile,
      long capPerAnswer,
      long classDefault,
      int answers,
      long oldReserve) {
    Settings s = settings;
    if (!s.enabled()) {
      return new Reserve(oldReserve, RULE_OFF);
    }
    if (capPerAnswer <= 0 || answers < 1) {
      return new Reserve(oldReserve, RULE_CAP); // nothing to learn (embeddings): the cap is 0
    }
    Stats coarse = keys.getIfPresent(key(pool, model, scope, quantile, ""));
    Stats own =
        s.tenantKeys() ? keys.getIfPresent(key(pool, model, scope, quantile, tenant)) : coarse;
    long perAnswer;
    String rule;
    Stats.Estimate e =
        own != null && own.samples() >= s.warmup()
            ? own.estimate(capPerAnswer, s.confidence(), true)
            : null;
    if (e != null && e.bounded()) {
      perAnswer = e.tokens();
      rule = e.learned() ? RULE_LEARNED : RULE_BOUND;
      if (!e.learned() && own != null && own != coarse && s.poolPrior() && coarse != null) {
        perAnswer = withPool(perAnswer, own, coarse, capPerAnswer, s);
      }
    } else { // not warmed, or too few answers for any bound (warmup 1 or 2)
      rule = RULE_PRIOR;
      perAnswer = classDefault > 0 ? classDefault : capPerAnswer;
      if (s.poolPrior() && s.tenantKeys() && coarse != null && coarse.weighed() >= s.warmup()) {
        Stats.Estimate shared = coarse.estimate(capPerAnswer, s.confidence(), false);
        if (shared.bounded()) {
          perAnswer = shared.tokens();
        }
      }
    }
    if (perAnswer >= capPerAnswer) {
      return new Reserve(oldReserve, rule.equals(RULE_PRIOR) ? RULE_PRIOR : RULE_CAP);
    }
    long total = Math.max(1, perAnswer) * answers;
    if (total >= oldReserve) { // never above the old rule
      return new Reserve(oldReserve, rule.equals(RULE_PRIOR) ? RULE_PRIOR : RULE_CAP);
    }
    return new Reserve(total, rule);
  }

  /**
   * A tenant key's bound, still loose, capped by the pool's (the coarse key's, tenants bounded)
   * while the tenant's own answers agree with it: a tenant whose answers look like the others' is
   * bounded with the others' evidence too. They disagree when fewer of them lie at or below the
   * pool's bound than a binomial draw at the key's quantile would give with probability {@code 1 −
   * confidence}: such a tenant (its answers run longer) keeps its own bound. Never below the
   * tenant's own largest answer.
   */
  private static long withPool(
      long perAnswer, Stats own, Stats coarse, long capPerAnswer, Settings s) {
    if (coarse.weighed() < s.warmup()) {
      return perAnswer;
    }
    Stats.Estimate pool = coarse.estimate(capPerAnswer, s.confidence(), false);
    if (!pool.bounded() || pool.tokens() >= perAnswer) {
      return perAnswer;
    }
    if (!own.agreesWith(pool.tokens(), 1 - s.confidence())) {
      return perAnswer;
    }
    return Math.min(perAnswer, Math.max(pool.tokens(), (long) Math.ceil(own.largest())));
  }

  /**
   * An answer whose end was seen: {@code outputTokens} over {@code answers} is one answer's actual
   * output, learned under the tenant's key (with {@code tenantKeys}) and the coarse key (there
   * weighed so that no tenant holds more than half of the key's weight).
   */
  public void record(
      String pool,
      @Nullable String model,
      String scope,
      String tenant,
      double quantile,
      long capPerAnswer,
      int answers,
      long outputTokens) {
    learn(pool, model, scope, tenant, quantile, capPerAnswer, answers, outputTokens, false);
  }

  /**
   * An answer cut short (client cancel, reset) after {@code outputTokens}: its length is at least
   * that. Learned as one answer on each key whose learned quantile it already passed; ignored on
   * the others.
   */
  public void recordCut(
      String pool,
      @Nullable String model,
      String scope,
      String tenant,
      double quantile,
      long capPerAnswer,
      int answers,
      long outputTokens) {
    learn(pool, model, scope, tenant, quantile, capPerAnswer, answers, outputTokens, true);
  }

  private void learn(
      String pool,
      @Nullable String model,
      String scope,
      String tenant,
      double quantile,
      long capPerAnswer,
      int answers,
      long outputTokens,
      boolean cut) {
    Settings s = settings;
    if (!s.enabled() || capPerAnswer <= 0 || answers < 1 || outputTokens < 0) {
      return;
    }
    double actual = (double) outputTokens / answers;
    double growth = Math.pow(2, 1.0 / s.halfLife());
    double alpha = 1 - 1 / growth; // the loss averages decay at the same half-life
    Stats coarse = keys.get(key(pool, model, scope, quantile, ""), k -> new Stats(quantile));
    coarse.record(
        capPerAnswer, actual, growth, alpha, cut, s.tenantKeys() ? bounded(tenant) : null);
    if (s.tenantKeys()) {
      keys.get(key(pool, model, scope, quantile, tenant), k -> new Stats(quantile))
          .record(capPerAnswer, actual, growth, alpha, cut, null);
    }
  }

  /**
   * This replica's additions since the last call, one snapshot per key that learned (for the shared
   * store, {@link ReserveStore}); each key's additions start again from nothing.
   */
  public List<ReserveSnapshot> takeAdditions() {
    List<ReserveSnapshot> out = new ArrayList<>();
    keys.asMap()
        .forEach(
            (k, v) -> {
              Map<String, Double> f = v.takeAdditions();
              if (f != null) {
                out.add(
                    new ReserveSnapshot(
                        k.pool(), k.model(), k.scope(), k.quantile(), k.tenant(), f));
              }
            });
    return out;
  }

  /**
   * A key's state as the shared store holds it (every replica's answers, decayed there): it
   * replaces what this replica held for the key, plus what it learned since its last {@link
   * #takeAdditions} (not in the store yet). The tenants' weights and the forms' losses stay this
   * replica's.
   */
  public void adopt(ReserveSnapshot shared) {
    Settings s = settings;
    if (!s.enabled() || !(shared.quantile() > 0 && shared.quantile() < 1)) {
      return;
    }
    Key k = key(shared.pool(), shared.model(), shared.scope(), shared.quantile(), shared.tenant());
    keys.get(k, x -> new Stats(shared.quantile())).adopt(shared.fields());
  }

  /** Keys held now. */
  public long keyCount() {
    keys.cleanUp();
    return keys.estimatedSize();
  }

  /** Keys evicted to keep within {@code maxKeys}, since start. */
  public long evictions() {
    return evictions.sum();
  }

  /**
   * The {@code limit} most used keys (by decisions, then samples), for {@code /debug/estimates}.
   */
  public List<KeyView> top(int limit) {
    Settings s = settings;
    List<KeyView> all = new ArrayList<>();
    keys.asMap().forEach((k, v) -> all.add(v.view(k, s.warmup(), s.confidence())));
    all.sort(
        Comparator.comparingLong(KeyView::uses)
            .thenComparingLong(KeyView::samples)
            .reversed()
            .thenComparing(KeyView::pool)
            .thenComparing(KeyView::model)
            .thenComparing(KeyView::scope)
            .thenComparing(KeyView::tenant));
    return all.size() <= limit ? all : List.copyOf(all.subList(0, Math.max(0, limit)));
  }

  private static Key key(
      String pool, @Nullable String model, String scope, double quantile, String tenant) {
    return new Key(pool, bounded(model), bounded(scope), quantile, bounded(tenant));
  }

  /** Client-chosen names are cut: a key's memory is bounded too. */
  private static String bounded(@Nullable String name) {
    if (name == null) {
      return "";
    }
    return name.length() <= MAX_NAME_CHARS ? name : name.substring(0, MAX_NAME_CHARS);
  }

  /** Decayed sums of the weights and of the logarithms of the values and their squares. */
  private static final class LogMoments {
    double s1;
    double s2;

    void add(double value, double decay, double factor) {
      double l = Math.log(Math.max(1, value));
      s1 = s1 * decay + factor * l;
      s2 = s2 * decay + factor * l * l;
    }
  }

  /** One key's learned state. */
  private static final class Stats {
    /**
     * One answer's estimate, whether it reached the learned quantile, and whether there was any
     * bound (false with too few answers for one: the estimate is then the cap).
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
    // bounds at the last confidence asked (recomputed after an answer or a new confidence)
    private double boundFor = Double.NaN;
    private double absBound = Double.NaN;
    private double relBound = Double.NaN;
    // coarse keys with tenant keys on: each tenant's decayed weight here (insertion order)
    private @Nullable LinkedHashMap<String, Double> tenants;
    // this replica's additions since the last exchange (sums over answers, as ReserveSnapshot)
    private double[] addAbs = new double[0];
    private double[] addRel = new double[0];
    private final double[] addSums = new double[6]; // w, n, la, la2, lr, lr2

    Stats(double quantile) {
      this.quantile = quantile;
    }

    synchronized long samples() {
      return samples;
    }

    /**
     * Whether its answers could come from a distribution whose quantile is {@code bound}: the
     * answers at or below it are not fewer than a binomial draw at the quantile gives with
     * probability {@code alpha}.
     */
    synchronized boolean agreesWith(double bound, double alpha) {
      long n = (long) Math.floor(weight + 1e-6);
      double below = absolute.fractionAtMost(bound) * weight;
      if (n < 1 || Double.isNaN(below)) {
        return true;
      }
      // the smallest count c with P(Bin(n, q) <= c) >= alpha: fewer is improbable
      long least = ReserveBounds.rank(n, quantile, alpha) - 1;
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
     * One answer's estimate for a cap: the upper bound on the quantile at {@code confidence} in the
     * form that predicted better, at least 1 and at most the cap.
     */
    synchronized Estimate estimate(long cap, double confidence, boolean use) {
      if (use) {
        uses++;
      }
      if (boundFor != confidence) {
        bounds(confidence);
      }
      boolean rel = relativeWins();
      double bound = rel ? relBound / REL_SCALE * cap : absBound;
      double point = rel ? relQuantile * cap : absQuantile;
      long tokens = Math.max(1, (long) Math.ceil(Math.min(bound, (double) cap)));
      return new Estimate(
          tokens, bound <= point * DecayedLogHistogram.BASE, bound < Double.POSITIVE_INFINITY);
    }

    private boolean relativeWins() {
      return lossRel < lossAbs;
    }

    private void bounds(double confidence) {
      boundFor = confidence;
      absBound = bound(absolute, absLog, confidence);
      relBound = Math.min(REL_SCALE, bound(relative, relLog, confidence));
    }

    /**
     * The upper bound on the quantile: the order statistic of {@link ReserveBounds#rank} when the
     * weight learned allows one, else the log-normal tolerance bound (never below the largest value
     * seen).
     */
    private double bound(DecayedLogHistogram h, LogMoments m, double c) {
      long n = (long) Math.floor(weight + 1e-6);
      long k = ReserveBounds.rank(n, quantile, c);
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
     * Learns one answer ({@code cut}: one cut short, a lower bound). On a coarse key {@code tenant}
     * names who sent it, and it weighs at most what keeps that tenant at half the key's weight.
     */
    synchronized void record(
        long cap,
        double actual,
        double growth,
        double alpha,
        boolean cut,
        @Nullable String tenant) {
      if (cut && !(samples > 0 && actual > absQuantile && actual / cap > relQuantile)) {
        return; // not past the learned quantile: it says nothing usable
      }
      double factor = 1;
      if (tenant != null) {
        factor = allowance(tenant, growth);
        if (!(factor > 0)) {
          return;
        }
      }
      if (samples > 0 && !cut) { // score both forms' predictions before they see this answer
        lossAbs += alpha * (pinball(actual, Math.min(cap, absQuantile)) - lossAbs);
        lossRel += alpha * (pinball(actual, Math.min(cap, relQuantile * cap)) - lossRel);
      }
      double rel = Math.min(1.0, actual / cap) * REL_SCALE;
      absolute.add(actual, growth, factor);
      relative.add(rel, growth, factor);
      double decay = factor == 1 ? 1 / growth : Math.pow(growth, -factor);
      absLog.add(actual, decay, factor);
      relLog.add(rel, decay, factor);
      weight = weight * decay + factor;
      if (tenant != null) {
        weigh(tenant, decay, factor);
      }
      samples++;
      addition(actual, rel, factor);
      absQuantile = absolute.quantile(quantile);
      relQuantile = relative.quantile(quantile) / REL_SCALE;
      boundFor = Double.NaN;
    }

    /**
     * How much of a full answer {@code tenant} may add so that afterwards it is at most one answer
     * ahead of all other tenants together (its share tends to half as the key fills; one tenant
     * alone holds one answer's weight): {@code 1 + (W_others - W_t) / growth} within [0, 1].
     */
    private double allowance(String tenant, double growth) {
      LinkedHashMap<String, Double> t = tenants;
      double own = t == null ? 0 : t.getOrDefault(tenant, 0.0);
      double ahead = weight - 2 * own; // others' weight minus its own
      return Math.min(1, Math.max(0, 1 + (ahead >= 0 ? ahead / growth : ahead)));
    }

    private void weigh(String tenant, double decay, double factor) {
      LinkedHashMap<String, Double> t = tenants;
      if (t == null) {
        t = new LinkedHashMap<>();
        tenants = t;
      }
      t.replaceAll((k, v) -> v * decay);
      t.merge(tenant, factor, Double::sum);
      if (t.size() > MAX_TENANTS_PER_KEY) { // forget the least weighty (its weight stays learned)
        String lightest = null;
        double least = Double.POSITIVE_INFINITY;
        for (Map.Entry<String, Double> e : t.entrySet()) {
          if (!e.getKey().equals(tenant) && e.getValue() < least) {
            least = e.getValue();
            lightest = e.getKey();
          }
        }
        if (lightest != null) {
          t.remove(lightest);
        }
      }
    }

    private void addition(double actual, double rel, double factor) {
      if (addAbs.length == 0) {
        addAbs = new double[absolute.bucketCount()];
        addRel = new double[relative.bucketCount()];
      }
      addAbs[absolute.index(actual)] += factor;
      addRel[relative.index(rel)] += factor;
      double la = Math.log(Math.max(1, actual));
      double lr = Math.log(Math.max(1, rel));
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
      boundFor = Double.NaN;
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

    synchronized KeyView view(Key k, int warmup, double confidence) {
      if (boundFor != confidence) {
        bounds(confidence);
      }
      LinkedHashMap<String, Double> t = tenants;
      return new KeyView(
          k.pool(),
          k.model(),
          k.scope(),
          k.tenant(),
          quantile,
          samples,
          uses,
          (k.tenant().isEmpty() && t != null) ? weight >= warmup : samples >= warmup,
          relativeWins() ? "relative" : "absolute",
          absQuantile,
          relQuantile,
          lossAbs,
          lossRel,
          weight,
          absBound,
          t == null ? 0 : t.size());
    }
  }
}
