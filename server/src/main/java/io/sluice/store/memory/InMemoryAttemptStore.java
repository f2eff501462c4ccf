package io.sluice.store.memory;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import io.sluice.core.retry.AttemptStore;
import io.sluice.core.time.Ticker;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * {@link AttemptStore} of one replica: one Caffeine map of every key (operations seen, in-flight
 * claims, remembered refusals, budget buckets), bounded by {@code maxEntries} (the least recently
 * used goes first) and each entry expiring at its own deadline on the injected {@link Ticker}. One
 * lock makes each call one atomic step, as the Redis script is.
 */
public final class InMemoryAttemptStore implements AttemptStore {
  private final Ticker ticker;
  private final Cache<String, Entry> entries;
  private final ReentrantLock lock = new ReentrantLock();

  /**
   * Until when some budget bucket may be below full: the latest expiry of a bucket written below
   * full. Past it every bucket is full (none was drawn on since, so each expired or refilled), and
   * an original needs no lookup at all; {@code bucketsDrawn} false: none ever was.
   */
  private volatile long drawnUntilNanos;

  private volatile boolean bucketsDrawn;

  public InMemoryAttemptStore(Ticker ticker, long maxEntries) {
    this.ticker = ticker;
    this.entries =
        Caffeine.newBuilder()
            .maximumSize(Math.max(1, maxEntries))
            .ticker(ticker::nanos)
            .expireAfter(new PerEntry())
            .executor(Runnable::run)
            .build();
  }

  /** Entries held now (expired ones may linger until the next maintenance). */
  public long size() {
    entries.cleanUp();
    return entries.estimatedSize();
  }

  /** A new bound (on reload). */
  public void resize(long maxEntries) {
    entries.policy().eviction().ifPresent(e -> e.setMaximum(Math.max(1, maxEntries)));
  }

  @Override
  public CompletionStage<Observation> observe(Observe o) {
    Observation quick = fullBucketOriginal(o);
    if (quick != null) {
      return CompletableFuture.completedFuture(quick);
    }
    lock.lock();
    try {
      return CompletableFuture.completedFuture(observeLocked(o, ticker.nanos()));
    } finally {
      lock.unlock();
    }
  }

  /**
   * The common request, answered without the lock: no operation id, not a retry by its headers, and
   * its budget bucket full (absent; while no bucket was drawn on within its idle time, not even
   * looked up). Such an original only refills the bucket, which is full already, so it writes
   * nothing; a retry that spends from the bucket under the lock meanwhile is ordered after it. Null
   * when the request needs the locked step.
   */
  private @Nullable Observation fullBucketOriginal(Observe o) {
    String budgetKey = o.budgetKey();
    if (o.seenKey() != null || o.retryByHeaders() || (o.claim() && o.operationKey() != null)) {
      return null;
    }
    if (!quietOriginal(budgetKey)) {
      return null;
    }
    return new Observation(
        0,
        Observation.NO_DUPLICATE,
        0,
        false,
        Long.MIN_VALUE,
        0,
        "",
        true,
        budgetKey == null ? Double.NaN : o.maxTokens());
  }

  /**
   * No bucket, or a full one: absent, or not even looked up while no bucket was drawn on within its
   * idle time ({@link #fullBucketOriginal}, without the question or the answer built).
   */
  @Override
  public boolean quietOriginal(@Nullable String budgetKey) {
    if (budgetKey == null || !bucketsDrawn) {
      return true;
    }
    long now = ticker.nanos();
    return now - drawnUntilNanos >= 0 || live(budgetKey, now) == null;
  }

  private Observation observeLocked(Observe o, long now) {
    long seen = 0;
    String seenKey = o.seenKey();
    if (seenKey != null) {
      Entry e = live(seenKey, now);
      seen = (e == null ? 0 : e.count) + 1;
      entries.put(seenKey, new Entry(seen, 0, "", false, now, now + millis(o.seenWindowMillis())));
    }
    boolean retry = o.retryByHeaders() || seen > 1;
    int duplicate = Observation.NO_DUPLICATE;
    long age = 0;
    boolean claimed = false;
    String opKey = o.operationKey();
    if (o.claim() && opKey != null) {
      Entry e = live(opKey, now);
      if (e != null && !e.done) {
        duplicate = Observation.IN_FLIGHT;
        age = (now - e.startedNanos) / 1_000_000L;
      } else if (e != null && o.refuseReplay()) {
        duplicate = Observation.COMPLETED;
        age = (now - e.startedNanos) / 1_000_000L;
      } else {
        entries.put(
            opKey, new Entry(0, 0, o.owner(), false, now, now + millis(o.inFlightTtlMillis())));
        claimed = true;
      }
    }
    long remaining = Long.MIN_VALUE;
    long given = 0;
    String reason = "";
    Entry r = retry ? live(o.refusalKey(), now) : null; // a refusal is read for retries only
    if (r != null) {
      remaining = (r.startedNanos - now) / 1_000_000L; // startedNanos holds the Retry-After's end
      if (r.startedNanos - now > 0 && remaining == 0) {
        remaining = 1;
      }
      given = r.count;
      reason = r.text;
    }
    boolean stop =
        (duplicate == Observation.IN_FLIGHT && o.refuseInFlight())
            || duplicate == Observation.COMPLETED
            || (retry && remaining != Long.MIN_VALUE && remaining > 0 && o.refuseEarly());
    boolean allowed = true;
    double tokens = Double.NaN;
    String budgetKey = o.budgetKey();
    if (budgetKey != null && !stop) {
      Entry b = live(budgetKey, now);
      tokens = b == null ? o.maxTokens() : b.tokens;
      if (o.deferredOriginals() > 0) { // originals this replica did not send refill first
        tokens = Math.min(o.maxTokens(), tokens + o.deferredOriginals() * o.tokenRatio());
      }
      if (retry) {
        if (tokens > o.maxTokens() / 2) {
          tokens -= 1;
        } else {
          allowed = false;
        }
      } else {
        tokens = Math.min(o.maxTokens(), tokens + o.tokenRatio());
      }
      // a full bucket is what a missing one reads as: an original on a full bucket writes nothing
      // (the common case), and a bucket left full expires into the same state
      if (b == null ? tokens < o.maxTokens() : tokens != b.tokens) {
        long expires = now + millis(o.idleMillis());
        if (tokens < o.maxTokens() && (!bucketsDrawn || expires - drawnUntilNanos > 0)) {
          // before the put, under the lock (one writer): an original that reads the flags before
          // this is ordered before this retry; one that reads them after looks the bucket up
          drawnUntilNanos = expires;
          bucketsDrawn = true;
        }
        entries.put(budgetKey, new Entry(0, tokens, "", false, now, expires));
      }
    }
    return new Observation(
        seen, duplicate, age, claimed, remaining, given, reason, allowed, tokens);
  }

  @Override
  public CompletionStage<Void> complete(String operationKey, String owner, long replayMillis) {
    lock.lock();
    try {
      long now = ticker.nanos();
      Entry e = live(operationKey, now);
      if (e != null && !e.done && e.text.equals(owner)) {
        if (replayMillis > 0) {
          entries.put(operationKey, new Entry(0, 0, owner, true, now, now + millis(replayMillis)));
        } else {
          entries.invalidate(operationKey);
        }
      }
    } finally {
      lock.unlock();
    }
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public CompletionStage<Void> remember(
      String refusalKey, long retryAfterSeconds, String reason, long keepMillis) {
    lock.lock();
    try {
      long now = ticker.nanos();
      long until = now + millis(retryAfterSeconds * 1000);
      entries.put(
          refusalKey,
          new Entry(
              retryAfterSeconds,
              0,
              reason,
              false,
              until,
              now + millis(Math.max(keepMillis, retryAfterSeconds * 1000))));
    } finally {
      lock.unlock();
    }
    return CompletableFuture.completedFuture(null);
  }

  private @Nullable Entry live(String key, long now) {
    Entry e = entries.getIfPresent(key);
    return e == null || e.expiresNanos - now <= 0 ? null : e;
  }

  private static long millis(long ms) {
    return Math.max(1, Math.min(ms, 365L * 24 * 3600 * 1000)) * 1_000_000L;
  }

  /**
   * One key's value: a count (seen attempts; a refusal's Retry-After seconds), budget tokens, a
   * text (a claim's owner; a refusal's reason), whether a claim completed (a replay marker), a
   * start (a claim's; a refusal's Retry-After end), and its own expiry.
   */
  private record Entry(
      long count, double tokens, String text, boolean done, long startedNanos, long expiresNanos) {}

  /** Each entry expires at its own deadline. */
  private static final class PerEntry implements Expiry<String, Entry> {
    @Override
    public long expireAfterCreate(String key, Entry value, long currentTime) {
      return Math.max(0, value.expiresNanos() - currentTime);
    }

    @Override
    public long expireAfterUpdate(String key, Entry value, long currentTime, long currentDuration) {
      return Math.max(0, value.expiresNanos() - currentTime);
    }

    @Override
    public long expireAfterRead(String key, Entry value, long currentTime, long currentDuration) {
      return currentDuration;
    }
  }
}
