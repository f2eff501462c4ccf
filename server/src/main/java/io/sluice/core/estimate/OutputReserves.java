package io.sluice.core.estimate;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * The learned output reserve (docs/estimation.md, "Learned output reserve"): per key (pool, model,
 * route or class, quantile; and the same with the tenant), a decayed quantile of the output tokens
 * one answer actually used, absolute and relative to the requested cap. Once a key has {@code
 * warmup} completions, a request reserves {@code min(its cap, learned quantile)} per answer, times
 * its answers; before, the cap (or the class default), as without learning.
 *
 * <p>Thread-safe: one per process (it outlives config snapshots, so a reload keeps what was
 * learned); keys are bounded by {@code maxKeys} (Caffeine, the coldest evicted), each key by its
 * own lock.
 */
public final class OutputReserves {
  /** The learned value was below the cap (or class default) and was used. */
  public static final String RULE_LEARNED = "learned";

  /** The key was warmed, and the client's cap (or the class default) was lower or equal. */
  public static final String RULE_CAP = "cap";

  /** No cap in the request and the key not warmed: the class default, as without learning. */
  public static final String RULE_DEFAULT = "default";

  /** The client's cap, because the key has not seen {@code warmup} completions yet. */
  public static final String RULE_WARMUP = "warmup";

  /** Learning is disabled ({@code estimation.learnedReserve.enabled: false}). */
  public static final String RULE_OFF = "off";

  /** Every rule, the metric's closed tag set. */
  public static final List<String> RULES =
      List.of(RULE_LEARNED, RULE_CAP, RULE_DEFAULT, RULE_WARMUP, RULE_OFF);

  /** Relative samples (actual / cap, in (0, 1]) are stored scaled to [1, REL_SCALE]. */
  private static final double REL_SCALE = 4096;

  private static final double ABS_MAX = 1 << 20;
  private static final int MAX_NAME_CHARS = 128;

  /**
   * @param enabled learn and apply (false: the reserve is the cap or class default, rule {@code
   *     off})
   * @param warmup completions a key needs before its learned value is used ({@code >= 1})
   * @param halfLife completions after which a completion weighs half as much as the newest
   * @param maxKeys keys kept (coarse and tenant keys together); the coldest are evicted
   * @param tenantKeys also learn per tenant, used where the tenant's key is warmed
   */
  public record Settings(
      boolean enabled, int warmup, int halfLife, int maxKeys, boolean tenantKeys) {
    public static final Settings DEFAULTS = new Settings(true, 100, 200, 2048, true);
    public static final Settings OFF = new Settings(false, 100, 200, 1, false);

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
      double lossRelative) {}

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
   * @param answers how many answers it asks for ({@code n}, {@code best_of}; {@code >= 1})
   * @param capSet whether the client set a cap
   * @param oldReserve the reserve by the old rule (the estimate's), returned when nothing is
   *     learned
   */
  public Reserve reserve(
      String pool,
      @Nullable String model,
      String scope,
      String tenant,
      double quantile,
      long capPerAnswer,
      int answers,
      boolean capSet,
      long oldReserve) {
    Settings s = settings;
    if (!s.enabled()) {
      return new Reserve(oldReserve, RULE_OFF);
    }
    if (capPerAnswer <= 0 || answers < 1) {
      return new Reserve(oldReserve, RULE_CAP); // nothing to learn (embeddings): the cap is 0
    }
    Stats stats = null;
    if (s.tenantKeys()) {
      Stats fine = keys.getIfPresent(key(pool, model, scope, quantile, tenant));
      if (fine != null && fine.samples() >= s.warmup()) {
        stats = fine;
      }
    }
    if (stats == null) {
      Stats coarse = keys.getIfPresent(key(pool, model, scope, quantile, ""));
      if (coarse != null && coarse.samples() >= s.warmup()) {
        stats = coarse;
      }
    }
    if (stats == null) {
      return new Reserve(oldReserve, capSet ? RULE_WARMUP : RULE_DEFAULT);
    }
    long learned = stats.perAnswer(capPerAnswer);
    if (learned >= capPerAnswer) {
      return new Reserve(oldReserve, RULE_CAP);
    }
    long total = learned * answers;
    return total < oldReserve
        ? new Reserve(total, RULE_LEARNED)
        : new Reserve(oldReserve, RULE_CAP); // never above the old rule
  }

  /**
   * A completed answer whose end was seen: {@code outputTokens} over {@code answers} is one
   * answer's actual output, learned under the coarse key and (with {@code tenantKeys}) the
   * tenant's.
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
    Settings s = settings;
    if (!s.enabled() || capPerAnswer <= 0 || answers < 1 || outputTokens < 0) {
      return;
    }
    double actual = (double) outputTokens / answers;
    double growth = Math.pow(2, 1.0 / s.halfLife());
    double alpha = 1 - 1 / growth; // the loss averages decay at the same half-life
    keys.get(key(pool, model, scope, quantile, ""), k -> new Stats(quantile))
        .record(capPerAnswer, actual, growth, alpha);
    if (s.tenantKeys()) {
      keys.get(key(pool, model, scope, quantile, tenant), k -> new Stats(quantile))
          .record(capPerAnswer, actual, growth, alpha);
    }
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
    keys.asMap().forEach((k, v) -> all.add(v.view(k, s.warmup())));
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

  /** One key's learned state. */
  private static final class Stats {
    private final double quantile;
    private final DecayedLogHistogram absolute = new DecayedLogHistogram(ABS_MAX);
    private final DecayedLogHistogram relative = new DecayedLogHistogram(REL_SCALE);
    private long samples;
    private long uses;
    private double absQuantile = Double.NaN; // tokens of one answer
    private double relQuantile = Double.NaN; // fraction of the cap, in (0, 1]
    private double lossAbs; // decayed mean pinball loss of each form at the key's quantile
    private double lossRel;

    Stats(double quantile) {
      this.quantile = quantile;
    }

    synchronized long samples() {
      return samples;
    }

    /** The learned reserve of one answer whose cap is {@code cap}, at least 1. */
    synchronized long perAnswer(long cap) {
      uses++;
      double v = relativeWins() ? relQuantile * cap : absQuantile;
      return Math.max(1, (long) Math.ceil(Math.min(v, (double) cap)));
    }

    private boolean relativeWins() {
      return lossRel < lossAbs;
    }

    synchronized void record(long cap, double actual, double growth, double alpha) {
      if (samples > 0) { // score both forms' predictions before they see this answer
        lossAbs += alpha * (pinball(actual, Math.min(cap, absQuantile)) - lossAbs);
        lossRel += alpha * (pinball(actual, Math.min(cap, relQuantile * cap)) - lossRel);
      }
      absolute.add(actual, growth);
      relative.add(Math.min(1.0, actual / cap) * REL_SCALE, growth);
      samples++;
      absQuantile = absolute.quantile(quantile);
      relQuantile = relative.quantile(quantile) / REL_SCALE;
    }

    private double pinball(double actual, double predicted) {
      double d = actual - predicted;
      return d >= 0 ? quantile * d : (quantile - 1) * d;
    }

    synchronized KeyView view(Key k, int warmup) {
      return new KeyView(
          k.pool(),
          k.model(),
          k.scope(),
          k.tenant(),
          quantile,
          samples,
          uses,
          samples >= warmup,
          relativeWins() ? "relative" : "absolute",
          absQuantile,
          relQuantile,
          lossAbs,
          lossRel);
    }
  }
}
