package io.sluice.core.estimate;

import com.github.benmanes.caffeine.cache.Cache;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * The learned bytes-per-token of a headers-only decision (docs/estimation.md, "Learned
 * bytes-per-token"): a request decided at its headers costs {@code content-length ÷ ratio} input
 * tokens, and the ratio is learned from answers whose input tokens were reported in full (Envoy's
 * native {@code TokenUsage} with status {@code COMPLETE}, or Sluice's own parse of a whole answer),
 * per pool and model, and per pool across models (the fallback of a model not warmed, or of a
 * request whose model is not declared at the headers).
 *
 * <p>Each answer's ratio ({@code body bytes ÷ input tokens}, clamped to {@code [min, max]}) joins
 * its tenant's decayed mean of log ratios ({@code halfLife} in ticker time). A key's ratio is the
 * weighted median of its tenants' means, each tenant weighing at most {@code warmup} answers: one
 * tenant with odd bodies moves the ratio only when no other tenant speaks (two honest tenants hold
 * the median within their own range). Until a key has {@code warmup} answers it is the pool's
 * ratio, and until that one is warmed the configured {@code prior} ({@code
 * estimation.bytesPerToken}).
 *
 * <p>Shared across replicas and restarts (docs/estimation.md, "Learned bytes-per-token"): each
 * tenant's sums on a key are additive, so this replica's additions since the last exchange ({@link
 * #takeAdditions}) go to the store the replicas share, one entry per pool, model and tenant, and
 * each entry the store answers replaces the tenant's state here ({@link #adopt}). The median is
 * taken over the tenants here as over the tenants of one replica: one tenant, at one replica or at
 * all, weighs at most {@code warmup} answers on every replica.
 *
 * <p>Concurrency: thread-safe. One per process (it outlives config snapshots: a reload keeps what
 * was learned). Keys are bounded by {@code maxKeys} (Caffeine, the coldest evicted), each key's
 * tenants by {@link #MAX_TENANTS_PER_KEY} (the lightest forgotten), each key by its own lock; the
 * read side is one volatile read per key.
 */
public final class LearnedBytesPerToken {
  /** Tenants a key weighs (the lightest forgotten beyond). */
  public static final int MAX_TENANTS_PER_KEY = 64;

  private static final int MAX_NAME_CHARS = 128;
  private static final double FORGOTTEN_WEIGHT = 1e-3;

  /**
   * @param enabled learn and apply (false: the prior always)
   * @param prior the ratio of a key not warmed ({@code estimation.bytesPerToken})
   * @param warmup answers a key needs before its own ratio is used; also the most answers one
   *     tenant weighs on a key
   * @param min the smallest ratio learned (an answer's ratio is clamped into {@code [min, max]})
   * @param max the largest
   * @param maxKeys keys kept (pool keys and pool-and-model keys together)
   * @param halfLifeMillis ticker time after which an answer weighs half
   */
  public record Settings(
      boolean enabled,
      double prior,
      int warmup,
      double min,
      double max,
      int maxKeys,
      long halfLifeMillis) {
    public static final Settings DEFAULTS =
        new Settings(true, EstimatorSettings.DEFAULT_BYTES_PER_TOKEN, 8, 1.5, 16, 1024, 3_600_000);

    public Settings {
      String p = "nativeMetadata.learnedBytesPerToken.";
      if (!(min >= 0.5 && min <= max && max <= 64)) {
        throw new IllegalArgumentException(
            p + "min/max: " + min + "/" + max + " (expected: 0.5 <= min <= max <= 64)");
      }
      if (!(prior >= 0.5 && prior <= 64)) {
        throw new IllegalArgumentException(
            p + "prior: " + prior + " (expected: 0.5 <= value <= 64)");
      }
      if (warmup < 1) {
        throw new IllegalArgumentException(p + "warmup: " + warmup + " (expected: >= 1)");
      }
      if (maxKeys < 1) {
        throw new IllegalArgumentException(p + "maxKeys: " + maxKeys + " (expected: >= 1)");
      }
      if (halfLifeMillis < 1_000) {
        throw new IllegalArgumentException(
            p + "halfLife: " + halfLifeMillis + "ms (expected: >= 1s)");
      }
    }

    /** These settings with another prior (a reload's {@code estimation.bytesPerToken}). */
    public Settings withPrior(double p) {
      return new Settings(enabled, p, warmup, min, max, maxKeys, halfLifeMillis);
    }
  }

  /** The scope of the entries this learner shares ({@link ReserveSnapshot#scope()}). */
  public static final String SHARED_SCOPE = "bytes-per-token";

  /** Where a pool's ratio comes from (the gauge {@code sluice_native_bytes_per_token_source}). */
  public enum Source {
    /** Not warmed: {@code estimation.bytesPerToken}. */
    PRIOR,
    /** Warmed by this replica's own answers only. */
    LEARNED,
    /** Warmed, with answers the other replicas (or this one before a restart) shared. */
    SHARED;

    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /** A key as shown by the gauges and {@code /debug}: {@code model} empty for the pool's key. */
  public record KeyView(String pool, String model, long samples, int tenants, double ratio) {}

  /**
   * A pool and model ({@code model} empty: the pool's own key), its hash made once: a request's
   * lookup hashes it, and the last one asked is reused ({@link #poolKey}, {@link #modelKey}). The
   * hash is the one a record of the two names would have, so the cache's order is unchanged.
   */
  private static final class Key {
    final String pool;
    final String model;
    private final int hash;

    Key(String pool, String model) {
      this.pool = pool;
      this.model = model;
      this.hash = 31 * pool.hashCode() + model.hashCode();
    }

    @Override
    public int hashCode() {
      return hash;
    }

    @Override
    public boolean equals(@Nullable Object o) {
      return o == this
          || (o instanceof Key k && hash == k.hash && pool.equals(k.pool) && model.equals(k.model));
    }

    boolean is(String p, String m) {
      return pool.equals(p) && model.equals(m);
    }
  }

  private volatile Settings settings;
  private final Cache<Key, KeyStats> keys;
  private volatile @Nullable Key lastPoolKey; // poolKey's
  private volatile @Nullable Key lastModelKey; // modelKey's
  // no key made yet (nothing learned nor adopted: a one-shot front end never sees usage), so every
  // lookup would miss: the prior without one; set before the first key is made
  private volatile boolean noKeys = true;
  private final LongAdder evictions = new LongAdder();

  public LearnedBytesPerToken(Settings settings) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.keys = BoundedKeys.of(settings.maxKeys(), evictions);
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
   * The ratio a request of {@code pool} asking {@code model} (null: not declared) is estimated
   * with: its key's once warmed, else its pool's once warmed, else the prior.
   */
  public double bytesPerToken(String pool, @Nullable String model) {
    Settings s = settings;
    if (!s.enabled() || noKeys) {
      return s.prior();
    }
    if (model != null && !model.isEmpty()) {
      KeyStats k = keys.getIfPresent(modelKey(pool, model));
      if (k != null && k.warmed(s.warmup())) {
        return k.ratio;
      }
    }
    KeyStats p = keys.getIfPresent(poolKey(pool));
    return p != null && p.warmed(s.warmup()) ? p.ratio : s.prior();
  }

  /**
   * An answer whose input tokens were reported in full: {@code bodyBytes} of request body were
   * {@code inputTokens} tokens. Learned under the pool's key and the pool-and-model key; answers
   * false when nothing was learned (disabled, or a count of zero).
   */
  public boolean learn(
      String pool,
      @Nullable String model,
      String tenant,
      long bodyBytes,
      long inputTokens,
      long nowNanos) {
    Settings s = settings;
    if (!s.enabled() || bodyBytes <= 0 || inputTokens <= 0) {
      return false;
    }
    double ratio = Math.min(s.max(), Math.max(s.min(), (double) bodyBytes / inputTokens));
    double lr = Math.log(ratio);
    String t = bounded(tenant);
    String p = bounded(pool);
    noKeys = false;
    keys.get(new Key(p, ""), x -> new KeyStats()).add(t, lr, nowNanos, s);
    if (model != null && !model.isEmpty()) {
      keys.get(new Key(p, bounded(model)), x -> new KeyStats()).add(t, lr, nowNanos, s);
    }
    return true;
  }

  /** Every key held (gauges and {@code /debug}); bounded by {@code maxKeys}. */
  public List<KeyView> keys() {
    List<KeyView> out = new ArrayList<>();
    keys.asMap().forEach((k, v) -> out.add(v.view(k.pool, k.model)));
    return out;
  }

  /**
   * The ratio a pool's requests of no declared model are estimated with: its pool key's once
   * warmed, else the prior (the gauge {@code sluice_native_bytes_per_token{pool}}).
   */
  public double poolRatio(String pool) {
    return bytesPerToken(pool, null);
  }

  /** Where the ratio of a pool's requests of no declared model comes from now. */
  public Source poolSource(String pool) {
    Settings s = settings;
    KeyStats p = s.enabled() ? keys.getIfPresent(poolKey(pool)) : null;
    if (p == null || !p.warmed(s.warmup())) {
      return Source.PRIOR;
    }
    return p.shared ? Source.SHARED : Source.LEARNED;
  }

  /**
   * This replica's additions since the last call, one entry per key and tenant that learned (the
   * sums {@code w}, the answers, and {@code ls}, their log ratios); each starts again from nothing.
   */
  public List<ReserveSnapshot> takeAdditions() {
    List<ReserveSnapshot> out = new ArrayList<>();
    keys.asMap().forEach((k, v) -> v.takeAdditions(k, out));
    return out;
  }

  /**
   * An entry as the shared store holds it (every replica's answers of one tenant on one key,
   * decayed there): it replaces the tenant's state here, plus what this replica learned of it since
   * its last {@link #takeAdditions}. An entry of another scope, or without answers, is ignored.
   */
  public void adopt(ReserveSnapshot shared, long nowNanos) {
    Settings s = settings;
    Double w = shared.fields().get("w");
    Double ls = shared.fields().get("ls");
    if (!s.enabled()
        || !SHARED_SCOPE.equals(shared.scope())
        || w == null
        || !(w > 0 && Double.isFinite(w))) {
      return;
    }
    double logSum = ls == null || !Double.isFinite(ls) ? 0 : ls;
    noKeys = false;
    keys.get(new Key(bounded(shared.pool()), bounded(shared.model())), x -> new KeyStats())
        .adopt(bounded(shared.tenant()), w, logSum, nowNanos, s);
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

  /** The pool's own key: the last one made is kept (one pool asks most), not one per request. */
  private Key poolKey(String pool) {
    String b = bounded(pool);
    Key k = lastPoolKey;
    if (k == null || !k.is(b, "")) {
      k = new Key(b, "");
      lastPoolKey = k; // immutable: any thread may read it
    }
    return k;
  }

  /**
   * A pool-and-model key: the last one made is kept (one reference, whatever the models clients
   * name; the keys themselves are bounded by {@code maxKeys}), not one per request.
   */
  private Key modelKey(String pool, String model) {
    String b = bounded(pool);
    String m = bounded(model);
    Key k = lastModelKey;
    if (k == null || !k.is(b, m)) {
      k = new Key(b, m);
      lastModelKey = k; // immutable: any thread may read it
    }
    return k;
  }

  /** Test hook: the key {@link #bytesPerToken} looks {@code pool} and {@code model} up with. */
  Object lookupKey(String pool, @Nullable String model) {
    return model == null || model.isEmpty() ? poolKey(pool) : modelKey(pool, model);
  }

  /** Client-chosen names are cut: a key's memory is bounded too. */
  private static String bounded(@Nullable String name) {
    if (name == null) {
      return "";
    }
    return name.length() <= MAX_NAME_CHARS ? name : name.substring(0, MAX_NAME_CHARS);
  }

  /** One key: each tenant's decayed log ratios, and the median ratio they give. */
  private static final class KeyStats {
    private final LinkedHashMap<String, Tenant> tenants = new LinkedHashMap<>();
    private long samples;
    private volatile long warmSamples; // samples, as the read side sees them
    private volatile double ratio = Double.NaN;
    private volatile boolean shared; // holds answers adopted from the shared store

    boolean warmed(int warmup) {
      return warmSamples >= warmup && !Double.isNaN(ratio);
    }

    synchronized void add(String tenant, double logRatio, long now, Settings s) {
      Tenant t = tenants.computeIfAbsent(tenant, x -> new Tenant(now));
      double d = decay(now, t.lastNanos, s.halfLifeMillis());
      t.weight = t.weight * d + 1;
      t.logSum = t.logSum * d + logRatio;
      t.lastNanos = now;
      t.addW += 1;
      t.addLs += logRatio;
      samples++;
      forgetBeyondBound(tenant, now, s);
      ratio = Math.min(s.max(), Math.max(s.min(), median(now, s)));
      warmSamples = samples;
    }

    /** The shared entry of {@code tenant}, plus its additions not sent yet. */
    synchronized void adopt(String tenant, double w, double logSum, long now, Settings s) {
      Tenant t = tenants.computeIfAbsent(tenant, x -> new Tenant(now));
      t.weight = w + t.addW;
      t.logSum = logSum + t.addLs;
      t.lastNanos = now;
      shared = true;
      forgetBeyondBound(tenant, now, s);
      double total = 0;
      for (Tenant x : tenants.values()) {
        total += x.weightAt(now, s);
      }
      samples = Math.max(samples, (long) Math.floor(total + 1e-6)); // warm from the shared answers
      ratio = Math.min(s.max(), Math.max(s.min(), median(now, s)));
      warmSamples = samples;
    }

    synchronized void takeAdditions(Key k, List<ReserveSnapshot> out) {
      tenants.forEach(
          (name, t) -> {
            if (t.addW > 0) {
              out.add(
                  new ReserveSnapshot(
                      k.pool, k.model, SHARED_SCOPE, 0, name, Map.of("w", t.addW, "ls", t.addLs)));
              t.addW = 0;
              t.addLs = 0;
            }
          });
    }

    /** The weighted median of the tenants' mean log ratios, each weighing at most warmup. */
    private double median(long now, Settings s) {
      int n = tenants.size();
      double[] means = new double[n];
      double[] weights = new double[n];
      Integer[] order = new Integer[n];
      double total = 0;
      int i = 0;
      var it = tenants.values().iterator();
      while (it.hasNext()) {
        Tenant t = it.next();
        double w = t.weightAt(now, s);
        if (w < FORGOTTEN_WEIGHT && n > 1) {
          it.remove(); // faded out: its answers are too old to speak
          n--;
          continue;
        }
        means[i] = t.logSum / t.weight;
        weights[i] = Math.min(w, s.warmup());
        total += weights[i];
        order[i] = i;
        i++;
      }
      Integer[] idx = java.util.Arrays.copyOf(order, i);
      java.util.Arrays.sort(idx, (a, b) -> Double.compare(means[a], means[b]));
      double half = total / 2;
      double seen = 0;
      for (int k = 0; k < idx.length; k++) {
        seen += weights[idx[k]];
        if (seen > half + 1e-9) {
          return Math.exp(means[idx[k]]);
        }
        if (seen >= half - 1e-9 && k + 1 < idx.length) { // an even split: between the two
          return Math.exp((means[idx[k]] + means[idx[k + 1]]) / 2);
        }
      }
      return idx.length == 0 ? Double.NaN : Math.exp(means[idx[idx.length - 1]]);
    }

    private void forgetBeyondBound(String keep, long now, Settings s) {
      if (tenants.size() <= MAX_TENANTS_PER_KEY) {
        return;
      }
      String lightest = null;
      double least = Double.POSITIVE_INFINITY;
      for (Map.Entry<String, Tenant> e : tenants.entrySet()) {
        double w = e.getValue().weightAt(now, s);
        if (!e.getKey().equals(keep) && w < least) {
          least = w;
          lightest = e.getKey();
        }
      }
      if (lightest != null) {
        tenants.remove(lightest);
      }
    }

    synchronized KeyView view(String pool, String model) {
      return new KeyView(pool, model, samples, tenants.size(), ratio);
    }

    /** One tenant's decayed answers on a key. */
    private static final class Tenant {
      double weight; // decayed count of its answers
      double logSum; // decayed sum of their log ratios
      long lastNanos; // ticker time of its last answer
      double addW; // answers since the last exchange (not in the shared store yet)
      double addLs; // their log ratios

      Tenant(long now) {
        lastNanos = now;
      }

      double weightAt(long now, Settings s) {
        return weight * decay(now, lastNanos, s.halfLifeMillis());
      }
    }

    /** {@code 2^(-age / halfLife)}, the age by subtraction (never negative). */
    private static double decay(long now, long then, long halfLifeMillis) {
      long age = now - then;
      if (age <= 0) {
        return 1;
      }
      return Math.pow(0.5, age / (halfLifeMillis * 1e6));
    }
  }
}
