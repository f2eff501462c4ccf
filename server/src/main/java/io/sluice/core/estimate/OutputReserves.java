package io.sluice.core.estimate;

import com.github.benmanes.caffeine.cache.Cache;
import java.util.ArrayList;
import java.util.Comparator;
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
 *       pool, model and scope learned across tenants (each tenant at most {@code warmup - 1}
 *       answers ahead of all others together, so no tenant sets it alone), else the class's {@code
 *       defaultOutputTokens};
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

  /** It waited in its queue and started with the smaller reserve learned meanwhile. */
  public static final String RULE_STARTED = "started";

  /** Every rule, the metric's closed tag set. */
  public static final List<String> RULES =
      List.of(RULE_PRIOR, RULE_BOUND, RULE_LEARNED, RULE_CAP, RULE_OFF, RULE_STARTED);

  /** Tenants whose weight a coarse key tracks (the least weighty forgotten beyond). */
  public static final int MAX_TENANTS_PER_KEY = 64;

  private static final int MAX_NAME_CHARS = 128;

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

  private volatile Settings settings;
  // growth and alpha of the settings' half-life: two pow() per answer before, now once per reload
  private volatile ReserveDecay decay;
  private final Cache<ReserveKey, ReserveStats> keys;
  private final LongAdder evictions = new LongAdder();
  private volatile boolean noKeys = true; // until the first key is made: every lookup would miss

  public OutputReserves(Settings settings) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.decay = ReserveDecay.of(settings.halfLife());
    this.keys = BoundedKeys.of(settings.maxKeys(), evictions);
  }

  /** A learner that never learns (tests, tools). */
  public static OutputReserves off() {
    return new OutputReserves(Settings.OFF);
  }

  /** A reload's settings; learned keys are kept (the coldest evicted if {@code maxKeys} shrank). */
  public void reconfigure(Settings next) {
    settings = Objects.requireNonNull(next, "settings");
    decay = ReserveDecay.of(next.halfLife());
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
    // the coarse key read only where used (a prior, a pool bound); every answer learned reads it
    ReserveStats own = find(pool, model, scope, quantile, s.tenantKeys() ? tenant : "");
    long perAnswer;
    String rule;
    // the warm-up check and the estimate under one lock (null: fewer than warmup answers)
    ReserveStats.Estimate e =
        own == null ? null : own.estimateIfWarm(s.warmup(), capPerAnswer, s.confidence());
    if (e != null && e.bounded()) {
      perAnswer = e.tokens();
      rule = e.learned() ? RULE_LEARNED : RULE_BOUND;
      ReserveStats coarse = e.learned() ? null : poolKey(s, pool, model, scope, quantile);
      if (coarse != null && own != null && own != coarse) {
        perAnswer = ReserveStats.withPool(perAnswer, own, coarse, capPerAnswer, s);
      }
    } else { // not warmed, or too few answers for any bound (warmup 1 or 2)
      rule = RULE_PRIOR;
      perAnswer = classDefault > 0 ? classDefault : capPerAnswer;
      ReserveStats coarse = poolKey(s, pool, model, scope, quantile);
      ReserveStats.Estimate shared =
          coarse == null
              ? null
              : coarse.estimateIfWeighed(s.warmup(), capPerAnswer, s.confidence());
      if (shared != null && shared.bounded()) {
        perAnswer = shared.tokens();
      }
    }
    long total = Math.max(1, perAnswer) * answers;
    if (perAnswer >= capPerAnswer || total >= oldReserve) { // never above the cap nor the old rule
      return new Reserve(oldReserve, rule.equals(RULE_PRIOR) ? RULE_PRIOR : RULE_CAP);
    }
    return new Reserve(total, rule);
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
    ReserveDecay d =
        decay.halfLife() == s.halfLife() ? decay : ReserveDecay.of(s.halfLife()); // mid-reload
    // the answer's logarithms once for both keys (a cut one's, rarely learned, where it is); the
    // loader does not capture (a lambda was built per lookup); the losses decay at the half-life
    double la = cut ? Double.NaN : Math.log(Math.max(1, actual));
    double lr = cut ? Double.NaN : ReserveStats.relativeLog(actual, capPerAnswer);
    // the tenant by its own key's name, hashed with that key (the request's was hashed per answer)
    ReserveKey own = s.tenantKeys() ? key(pool, model, scope, quantile, tenant) : null;
    String t = own == null ? null : own.tenant();
    noKeys = false;
    keys.get(key(pool, model, scope, quantile, ""), ReserveStats::of)
        .record(capPerAnswer, actual, la, lr, d.growth(), d.alpha(), cut, t, leadOnCoarseKey(s));
    if (own != null) {
      keys.get(own, ReserveStats::of)
          .record(capPerAnswer, actual, la, lr, d.growth(), d.alpha(), cut, null, 0);
    }
  }

  /** The coarse key, where it is a tenant key's pool prior (tenant keys on, pool prior on). */
  private @Nullable ReserveStats poolKey(
      Settings s, String pool, @Nullable String model, String scope, double quantile) {
    return s.tenantKeys() && s.poolPrior() ? find(pool, model, scope, quantile, "") : null;
  }

  /** A key's stats; none while no key was made (a one-shot front end never sees an answer). */
  private @Nullable ReserveStats find(
      String pool, @Nullable String model, String scope, double quantile, String tenant) {
    return noKeys ? null : keys.getIfPresent(key(pool, model, scope, quantile, tenant));
  }

  /**
   * How many answers one tenant may be ahead of all others together on a coarse key: {@code warmup
   * - 1} (at least 1). Alone it can never warm the key into a prior for others; with a single
   * answer of any other tenant it can, and the prior's bound is never below the largest answer
   * learned, that other tenant's included.
   */
  private static double leadOnCoarseKey(Settings s) {
    return Math.max(1, s.warmup() - 1);
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
    ReserveKey k =
        key(shared.pool(), shared.model(), shared.scope(), shared.quantile(), shared.tenant());
    noKeys = false;
    keys.get(k, ReserveStats::of).adopt(shared.fields());
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

  /** The {@code limit} most used keys (decisions, then samples), for {@code /debug/estimates}. */
  public List<KeyView> top(int limit) {
    Settings s = settings;
    List<KeyView> all = new ArrayList<>();
    keys.asMap()
        .forEach(
            (k, v) ->
                all.add(
                    v.view(
                        k.pool(), k.model(), k.scope(), k.tenant(), s.warmup(), s.confidence())));
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

  private static ReserveKey key(
      String pool, @Nullable String model, String scope, double quantile, String tenant) {
    return ReserveKey.of(pool, bounded(model), bounded(scope), quantile, bounded(tenant));
  }

  /** Client-chosen names are cut: a key's memory is bounded too. */
  private static String bounded(@Nullable String name) {
    if (name == null) {
      return "";
    }
    return name.length() <= MAX_NAME_CHARS ? name : name.substring(0, MAX_NAME_CHARS);
  }
}
