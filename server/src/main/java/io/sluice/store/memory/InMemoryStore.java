package io.sluice.store.memory;

import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.KeyValueStore;
import io.sluice.core.store.MemoryStoreStats;
import io.sluice.core.store.StoreHealth;
import io.sluice.core.store.TokenBucketResult;
import io.sluice.core.store.TokenBucketSpec;
import io.sluice.core.store.TokenBuckets;
import java.time.Clock;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * Counters and token buckets in this process: the default store for a single replica. Stages
 * complete before the method returns.
 *
 * <p>Expiry uses wall time from the injected {@link Clock} (the keys embed wall-clock window
 * starts, so expiry follows the same clock). A counter whose increment names its window's end
 * ({@link CounterIncrement#windowEndMillis()}) expires {@value #WINDOW_END_GRACE_MILLIS} ms after
 * that end at the latest: its key embeds the window start and is never used again, so keeping it
 * for Redis's EXPIRE jitter would only hold memory. A bucket expires once it has refilled (an
 * absent bucket starts full, so nothing is lost). Expired entries are dropped lazily on access, by
 * a sweep every {@value #SWEEP_EVERY_OPS} operations, and first when room is needed.
 *
 * <p>Bound ({@link Bounds}): every entry is accounted as its key's bytes (1 per Latin-1 char, else
 * 2) plus {@value #ENTRY_OVERHEAD_BYTES} bytes of map node, key and value objects, and optionally
 * counted against an entry limit. A new key that does not fit makes room first: a sample of {@value
 * #SAMPLE} entries is read (round-robin over the maps); expired entries in it are dropped (no
 * loss); if none were expired, the live entry whose loss admits the fewest extra hits is evicted —
 * the counter with the smallest count, or the bucket owing the fewest tokens — ties broken by the
 * nearest expiry. Evicting a live entry resets it (a counter restarts at 0, a bucket starts full):
 * at most {@link #evictedHits()} extra hits in total can be admitted because of evictions, and both
 * are counted. A flood of fresh keys (count 1 each) therefore evicts other fresh keys first, not
 * the counters that are actually limiting someone. A key larger than the whole bound is never
 * stored ({@link #unstored()}): it is answered as a fresh entry.
 *
 * <p>Concurrency: a counter of a live window is incremented atomically without a lock (saturating
 * at {@link Long#MAX_VALUE}, never wrapping to negative); a missing or expired one is (re)created
 * inside {@link ConcurrentHashMap#compute} after its bytes were reserved (so the byte bound holds
 * under concurrency). Eviction runs under one lock, outside any {@code compute}. Keys embed their
 * window start, so a key is not used once its window has ended: an increment racing with the expiry
 * or eviction of its own key could be lost. Buckets are updated inside compute. A batch is not
 * atomic as a whole (like the Redis pipeline it mirrors).
 */
public final class InMemoryStore implements KeyValueStore, MemoryStoreStats {
  static final int SWEEP_EVERY_OPS = 4096;

  /** Bytes accounted per entry on top of its key (node, key object, value objects). */
  public static final long ENTRY_OVERHEAD_BYTES = 160;

  /** Entries read per eviction round. */
  static final int SAMPLE = 16;

  static final long WINDOW_END_GRACE_MILLIS = 1000;

  private static final int MAX_RESERVE_ROUNDS = 64;

  /**
   * Size bound of one store.
   *
   * @param maxBytes accounted bytes (keys + {@value #ENTRY_OVERHEAD_BYTES} per entry), &gt; 0
   * @param maxEntries entries (counters + buckets); 0 = no entry bound, only bytes
   */
  public record Bounds(long maxBytes, long maxEntries) {
    /** 64 MiB: about 11 % of the heap of a 768 MiB pod (75 % heap), no entry bound. */
    public static final Bounds DEFAULT = new Bounds(64L << 20, 0);

    public Bounds {
      if (maxBytes < 64 * 1024) {
        throw new IllegalArgumentException(
            "SLUICE_RLS_MEMORY_MAX_BYTES: " + maxBytes + " (expected: >= 65536)");
      }
      if (maxEntries < 0) {
        throw new IllegalArgumentException(
            "SLUICE_RLS_MEMORY_MAX_ENTRIES: " + maxEntries + " (expected: >= 0, 0 = no bound)");
      }
    }
  }

  /** A window's count; the value moves without a lock, the expiry with the last increment. */
  private static final class Counter {
    final AtomicLong value;
    volatile long expiresAtMillis;

    Counter(long value, long expiresAtMillis) {
      this.value = new AtomicLong(value);
      this.expiresAtMillis = expiresAtMillis;
    }

    long add(long hits) {
      long after = value.addAndGet(hits);
      if (after < 0) { // both non-negative: the sum overflowed; saturate (never wrap below a limit)
        value.set(Long.MAX_VALUE);
        return Long.MAX_VALUE;
      }
      return after;
    }
  }

  private record Bucket(
      TokenBucketSpec spec, double tokens, long updatedAtMillis, long expiresAtMillis) {}

  private final Clock clock;
  private final Bounds bounds;
  private final ConcurrentHashMap<String, Counter> counters = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Bucket> buckets = new ConcurrentHashMap<>();
  private final AtomicLong bytes = new AtomicLong();
  private final AtomicLong entries = new AtomicLong();
  private final ReentrantLock evictLock = new ReentrantLock();
  private @Nullable Iterator<Map.Entry<String, Counter>> counterCursor; // @GuardedBy("evictLock")
  private @Nullable Iterator<Map.Entry<String, Bucket>> bucketCursor; // @GuardedBy("evictLock")
  private boolean bucketTurn; // @GuardedBy("evictLock")
  private final LongAdder expiredEvictions = new LongAdder();
  private final LongAdder liveEvictions = new LongAdder();
  private final LongAdder evictedHits = new LongAdder();
  private final LongAdder unstored = new LongAdder();

  public InMemoryStore(Clock clock, Bounds bounds) {
    this.clock = clock;
    this.bounds = bounds;
  }

  public Bounds bounds() {
    return bounds;
  }

  @Override
  public long maxBytes() {
    return bounds.maxBytes();
  }

  @Override
  public CompletionStage<long[]> increment(List<CounterIncrement> batch) {
    long now = clock.millis();
    long[] after = new long[batch.size()];
    for (int i = 0; i < after.length; i++) {
      after[i] = increment(batch.get(i), now);
    }
    maybeSweep(now, batch.size());
    return CompletableFuture.completedFuture(after);
  }

  private long increment(CounterIncrement inc, long now) {
    long expires = now + inc.expirySeconds() * 1000;
    if (inc.windowEndMillis() > 0) {
      expires = Math.min(expires, inc.windowEndMillis() + WINDOW_END_GRACE_MILLIS);
    }
    long expiresAt = expires;
    Counter live = counters.get(inc.key());
    if (live != null && live.expiresAtMillis - now > 0) {
      // The common case, a window already counting: one atomic add, no lock on the key.
      live.expiresAtMillis = expiresAt;
      return live.add(inc.hits());
    }
    long size = sizeOf(inc.key());
    if (!reserve(size, now)) {
      unstored.increment();
      return inc.hits(); // answered as a fresh counter, not kept
    }
    long[] value = new long[1];
    boolean[] created = new boolean[1];
    counters.compute(
        inc.key(),
        (k, old) -> {
          if (old != null && old.expiresAtMillis - now > 0) { // another thread created it
            old.expiresAtMillis = expiresAt;
            value[0] = old.add(inc.hits());
            return old;
          }
          created[0] = old == null; // an expired entry is replaced in place: already accounted
          value[0] = inc.hits();
          return new Counter(inc.hits(), expiresAt);
        });
    if (!created[0]) {
      release(size);
    }
    return value[0];
  }

  /** Current value of a counter, 0 when absent or expired (for tests and diagnostics). */
  public long counterValue(String key) {
    Counter c = counters.get(key);
    return c == null || c.expiresAtMillis - clock.millis() <= 0 ? 0 : c.value.get();
  }

  /** Number of live and not-yet-swept entries (counters and buckets). */
  public int size() {
    return counters.size() + buckets.size();
  }

  /** Accounted bytes of all entries (keys + overhead), at most {@link Bounds#maxBytes()}. */
  @Override
  public long bytes() {
    return bytes.get();
  }

  /** Entries accounted against the bound (counters and buckets). */
  @Override
  public long entries() {
    return entries.get();
  }

  /** Expired entries dropped to make room (no accuracy loss). */
  @Override
  public long expiredEvictions() {
    return expiredEvictions.sum();
  }

  /** Live entries evicted to make room: each reset a counter to 0 or refilled a bucket. */
  @Override
  public long liveEvictions() {
    return liveEvictions.sum();
  }

  /**
   * Hits (counters: the count; buckets: the tokens owed) lost by live evictions: the most extra
   * hits that evictions can have admitted.
   */
  @Override
  public long evictedHits() {
    return evictedHits.sum();
  }

  /** Keys larger than the whole bound, answered as fresh entries and not kept. */
  @Override
  public long unstored() {
    return unstored.sum();
  }

  @Override
  public CompletionStage<TokenBucketResult> take(
      String key, TokenBucketSpec spec, long tokens, long nowMillis) {
    return CompletableFuture.completedFuture(apply(key, spec, tokens, nowMillis, false));
  }

  @Override
  public CompletionStage<TokenBucketResult> charge(
      String key, TokenBucketSpec spec, long tokens, long nowMillis) {
    return CompletableFuture.completedFuture(apply(key, spec, tokens, nowMillis, true));
  }

  private TokenBucketResult apply(
      String key, TokenBucketSpec spec, long requested, long nowMillis, boolean force) {
    long now = clock.millis();
    long size = 0;
    if (buckets.get(key) == null) {
      size = sizeOf(key);
      if (!reserve(size, now)) {
        unstored.increment();
        return update(null, spec, requested, nowMillis, force).result;
      }
    }
    Updated[] out = new Updated[1];
    boolean[] created = new boolean[1];
    buckets.compute(
        key,
        (k, old) -> {
          created[0] = old == null;
          out[0] = update(old, spec, requested, nowMillis, force);
          return out[0].bucket;
        });
    if (size > 0 && !created[0]) {
      release(size);
    } else if (size == 0 && created[0]) {
      // removed between get and compute: account for it now (may exceed the bound by one entry)
      bytes.addAndGet(sizeOf(key));
      entries.incrementAndGet();
    }
    maybeSweep(now, 1);
    return out[0].result;
  }

  private record Updated(Bucket bucket, TokenBucketResult result) {}

  private static Updated update(
      @Nullable Bucket old, TokenBucketSpec spec, long requested, long nowMillis, boolean force) {
    double tokens =
        old == null || old.expiresAtMillis() - nowMillis <= 0
            ? spec.capacity()
            : TokenBuckets.refill(spec, old.tokens(), old.updatedAtMillis(), nowMillis);
    boolean granted = force || TokenBuckets.fits(tokens, requested);
    if (granted) {
      tokens = Math.min(spec.capacity(), tokens - requested);
    }
    long full = TokenBuckets.fullAfterMillis(spec, tokens);
    TokenBucketResult result =
        new TokenBucketResult(
            granted,
            tokens,
            granted ? 0 : TokenBuckets.retryAfterMillis(spec, tokens, requested),
            full);
    long updatedAt = old == null ? nowMillis : Math.max(nowMillis, old.updatedAtMillis());
    return new Updated(new Bucket(spec, tokens, updatedAt, nowMillis + full + 1000), result);
  }

  @Override
  public boolean inProcess() {
    return true;
  }

  @Override
  public StoreHealth health() {
    return StoreHealth.ALWAYS_HEALTHY;
  }

  /** Accounted size of an entry with this key. */
  static long sizeOf(String key) {
    long b = key.length();
    for (int i = 0; i < key.length(); i++) {
      if (key.charAt(i) > 0xFF) { // not Latin-1: the string is stored in UTF-16
        b = 2L * key.length();
        break;
      }
    }
    return ENTRY_OVERHEAD_BYTES + b;
  }

  /** Reserves room for one entry of {@code size} bytes, evicting if needed; false if impossible. */
  private boolean reserve(long size, long now) {
    if (size > bounds.maxBytes()) {
      return false;
    }
    long maxEntries = bounds.maxEntries();
    int rounds = 0;
    while (true) {
      long e = entries.get();
      if (maxEntries == 0 || e < maxEntries) {
        if (entries.compareAndSet(e, e + 1)) {
          break;
        }
      } else if (!evictSome(now) && ++rounds > MAX_RESERVE_ROUNDS) {
        return false;
      }
    }
    while (true) {
      long b = bytes.get();
      if (b + size <= bounds.maxBytes()) {
        if (bytes.compareAndSet(b, b + size)) {
          return true;
        }
      } else if (!evictSome(now) && ++rounds > MAX_RESERVE_ROUNDS) {
        entries.decrementAndGet();
        return false;
      }
    }
  }

  private void release(long size) {
    bytes.addAndGet(-size);
    entries.decrementAndGet();
  }

  /**
   * One eviction round over a sample: drops its expired entries, else evicts its cheapest live
   * entry. Returns whether anything was removed.
   */
  private boolean evictSome(long now) {
    evictLock.lock();
    try {
      String victimCounter = null;
      Counter victimCounterValue = null;
      String victimBucket = null;
      Bucket victimBucketValue = null;
      double victimRisk = Double.MAX_VALUE;
      long victimExpiry = Long.MAX_VALUE;
      boolean removedExpired = false;
      for (int i = 0; i < SAMPLE; i++) {
        Map.Entry<String, Counter> c = null;
        Map.Entry<String, Bucket> b = null;
        bucketTurn = !bucketTurn;
        if (bucketTurn) {
          b = nextBucket();
          c = b == null ? nextCounter() : null;
        } else {
          c = nextCounter();
          b = c == null ? nextBucket() : null;
        }
        if (c != null) {
          Counter v = c.getValue();
          if (v.expiresAtMillis - now <= 0) {
            if (counters.remove(c.getKey(), v)) {
              release(sizeOf(c.getKey()));
              expiredEvictions.increment();
              removedExpired = true;
            }
            continue;
          }
          double risk = v.value.get();
          if (risk < victimRisk || (risk == victimRisk && v.expiresAtMillis < victimExpiry)) {
            victimRisk = risk;
            victimExpiry = v.expiresAtMillis;
            victimCounter = c.getKey();
            victimCounterValue = v;
            victimBucket = null;
            victimBucketValue = null;
          }
        } else if (b != null) {
          Bucket v = b.getValue();
          if (v.expiresAtMillis() - now <= 0) {
            if (buckets.remove(b.getKey(), v)) {
              release(sizeOf(b.getKey()));
              expiredEvictions.increment();
              removedExpired = true;
            }
            continue;
          }
          double owed =
              v.spec().capacity()
                  - TokenBuckets.refill(v.spec(), v.tokens(), v.updatedAtMillis(), now);
          double risk = Math.max(0, owed);
          if (risk < victimRisk || (risk == victimRisk && v.expiresAtMillis() < victimExpiry)) {
            victimRisk = risk;
            victimExpiry = v.expiresAtMillis();
            victimBucket = b.getKey();
            victimBucketValue = v;
            victimCounter = null;
            victimCounterValue = null;
          }
        } else {
          break; // both maps empty
        }
      }
      if (removedExpired) {
        return true;
      }
      // a victim's key and value are set and cleared together
      if (victimCounter != null
          && victimCounterValue != null
          && counters.remove(victimCounter, victimCounterValue)) {
        release(sizeOf(victimCounter));
        liveEvictions.increment();
        evictedHits.add(victimCounterValue.value.get());
        return true;
      }
      if (victimBucket != null && buckets.remove(victimBucket, victimBucketValue)) {
        release(sizeOf(victimBucket));
        liveEvictions.increment();
        evictedHits.add((long) Math.ceil(victimRisk));
        return true;
      }
      return false;
    } finally {
      evictLock.unlock();
    }
  }

  private Map.@Nullable Entry<String, Counter> nextCounter() {
    if (counterCursor == null || !counterCursor.hasNext()) {
      counterCursor = counters.entrySet().iterator();
    }
    return counterCursor.hasNext() ? counterCursor.next() : null;
  }

  private Map.@Nullable Entry<String, Bucket> nextBucket() {
    if (bucketCursor == null || !bucketCursor.hasNext()) {
      bucketCursor = buckets.entrySet().iterator();
    }
    return bucketCursor.hasNext() ? bucketCursor.next() : null;
  }

  /** Sweeps once every {@value #SWEEP_EVERY_OPS} operations on average (no shared op counter). */
  private void maybeSweep(long now, int n) {
    if (ThreadLocalRandom.current().nextInt(SWEEP_EVERY_OPS) < n) {
      sweep(now);
    }
  }

  /** Drops expired entries. */
  public void sweep(long nowMillis) {
    for (Map.Entry<String, Counter> e : counters.entrySet()) {
      if (e.getValue().expiresAtMillis - nowMillis <= 0
          && counters.remove(e.getKey(), e.getValue())) {
        release(sizeOf(e.getKey()));
      }
    }
    for (Map.Entry<String, Bucket> e : buckets.entrySet()) {
      if (e.getValue().expiresAtMillis() - nowMillis <= 0
          && buckets.remove(e.getKey(), e.getValue())) {
        release(sizeOf(e.getKey()));
      }
    }
  }
}
