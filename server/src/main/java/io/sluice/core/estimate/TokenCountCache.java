package io.sluice.core.estimate;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.knuddels.jtokkit.api.Encoding;

/**
 * BPE token counts of text pieces already seen, per encoding. LLM traffic resends the same pieces
 * over and over: an application's system prompt in every request, tool definitions in every agent
 * step, the whole conversation so far in every chat turn. Each is tokenized once; later requests
 * pay a hash and an equality check instead of BPE (about 30 µs per KB here).
 *
 * <p>Bounded by weight: every entry weighs its characters plus {@link #ENTRY_OVERHEAD_CHARS}, and
 * the total stays under {@code maxChars} (Caffeine's W-TinyLFU admission keeps pieces seen once
 * from pushing out pieces seen often). A Latin-1 piece costs one byte per character, any other two,
 * so the heap held is at most about {@code 2 × maxChars} bytes. Pieces shorter than {@code
 * minChars} are counted directly (BPE on them costs little more than the lookup). {@code maxChars =
 * 0} turns the cache off.
 *
 * <p>Concurrency: thread-safe; one instance is shared by every request and kept across config
 * reloads ({@link #resize}).
 */
public final class TokenCountCache {
  /** Bookkeeping per entry (key, node, boxed count), counted as characters in the weight. */
  static final int ENTRY_OVERHEAD_CHARS = 64;

  public static final long DEFAULT_MAX_CHARS = 4L << 20;
  public static final int DEFAULT_MIN_CHARS = 32;

  private record Key(Encoding encoding, String text) {}

  private final Cache<Key, Integer> cache;
  private volatile long maxChars;
  private volatile int minChars;

  public TokenCountCache(long maxChars, int minChars) {
    checkArguments(maxChars, minChars);
    this.maxChars = maxChars;
    this.minChars = minChars;
    this.cache =
        Caffeine.newBuilder()
            .maximumWeight(maxChars)
            .weigher((Key k, Integer v) -> weight(k.text()))
            .recordStats()
            .executor(Runnable::run) // maintenance on the caller: no pool thread per server
            .build();
  }

  /** A cache that never holds anything: every count is computed. */
  public static TokenCountCache disabled() {
    return new TokenCountCache(0, DEFAULT_MIN_CHARS);
  }

  /** The token count of {@code text} in {@code encoding} (BPE, no special tokens). */
  int count(Encoding encoding, String text) {
    if (text.length() < minChars || maxChars == 0) {
      return encoding.countTokensOrdinary(text);
    }
    Key key = new Key(encoding, text);
    Integer known = cache.getIfPresent(key);
    if (known != null) {
      return known;
    }
    int counted = encoding.countTokensOrdinary(text);
    if (weight(text) <= maxChars) {
      cache.put(key, counted);
    }
    return counted;
  }

  /** Applies new bounds (config reload); entries beyond the new weight are evicted. */
  public void resize(long maxChars, int minChars) {
    checkArguments(maxChars, minChars);
    this.minChars = minChars;
    this.maxChars = maxChars;
    cache.policy().eviction().ifPresent(e -> e.setMaximum(maxChars));
    if (maxChars == 0) {
      cache.invalidateAll();
    }
    cache.cleanUp();
  }

  public long maxChars() {
    return maxChars;
  }

  public int minChars() {
    return minChars;
  }

  /** Lookups that found the piece (pieces shorter than {@code minChars} are not looked up). */
  public long hits() {
    return cache.stats().hitCount();
  }

  /** Lookups that had to tokenize the piece. */
  public long misses() {
    return cache.stats().missCount();
  }

  /** Weight held now: characters of the cached pieces plus the per-entry overhead. */
  public long weightedChars() {
    return cache.policy().eviction().map(e -> e.weightedSize().orElse(0L)).orElse(0L);
  }

  public long entries() {
    return cache.estimatedSize();
  }

  private static int weight(String text) {
    return (int) Math.min(Integer.MAX_VALUE, (long) text.length() + ENTRY_OVERHEAD_CHARS);
  }

  private static void checkArguments(long maxChars, int minChars) {
    if (maxChars < 0) {
      throw new IllegalArgumentException(
          "tokenCacheChars: " + maxChars + " (expected: >= 0; 0 = off)");
    }
    if (minChars < 0) {
      throw new IllegalArgumentException("tokenCacheMinChars: " + minChars + " (expected: >= 0)");
    }
  }
}
