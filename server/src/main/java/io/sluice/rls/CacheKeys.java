package io.sluice.rls;

import io.sluice.rls.config.Algorithm;
import io.sluice.rls.config.LimitSpec;
import io.sluice.rls.config.RateLimitConfig.Entry;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The store keys of a limit (layout in {@link RateLimitEvaluator}), built once per descriptor and
 * window and handed out again while they stay the same: a call whose domain, entries, cache values
 * and limit window give the key of a recent call gets that call's string back. The store then
 * hashes nothing (a string's hash is kept in it) and finds its own key by identity; nothing is
 * built. A recent key is found in a small table indexed by the descriptor's hash and checked
 * character by character against what would be built, so the answer is always the string {@link
 * #build} would give (two descriptors that build the same characters share a key, as in the
 * reference).
 *
 * <p>Shared by all threads without a lock: a slot holds one immutable {@link Recent}, replaced
 * whole; a racing reader sees the old one or the new one, each checked before use.
 */
final class CacheKeys {
  private static final int SLOTS = 256; // power of two
  private static final int SHIFT = 32 - Integer.numberOfTrailingZeros(SLOTS);

  /** A key built for one call, and the numbers of its tail (not read back from the string). */
  private static final class Recent {
    final String key;
    final int bodyLength; // prefix, domain and the entries, up to the tail
    final boolean bucket;
    final int index;
    final long window;
    final boolean referenceLayout;
    final long windowStart;

    Recent(
        String key,
        int bodyLength,
        boolean bucket,
        int index,
        long window,
        boolean referenceLayout,
        long windowStart) {
      this.key = key;
      this.bodyLength = bodyLength;
      this.bucket = bucket;
      this.index = index;
      this.window = window;
      this.referenceLayout = referenceLayout;
      this.windowStart = windowStart;
    }
  }

  private final String prefix;
  private final @Nullable Recent[] recent = new Recent[SLOTS];

  CacheKeys(String prefix) {
    this.prefix = prefix;
  }

  /** The key of limit {@code l} for one descriptor at {@code nowSeconds}: see the class. */
  String key(
      String domain, List<Entry> entries, List<String> values, LimitSpec l, long nowSeconds) {
    boolean bucket = l.algorithm() == Algorithm.TOKEN_BUCKET;
    long window = l.windowSeconds();
    long start = bucket ? 0 : Math.floorDiv(nowSeconds, window) * window;
    boolean reference = l.referenceKeyLayout();
    int slot = slot(domain, entries, values, l.index());
    Recent r = recent[slot];
    if (r != null
        && r.windowStart == start
        && r.window == window
        && r.index == l.index()
        && r.bucket == bucket
        && r.referenceLayout == reference
        && sameBody(r, domain, entries, values)) {
      return r.key;
    }
    StringBuilder b = new StringBuilder(64).append(prefix).append(domain).append('_');
    for (int i = 0; i < entries.size(); i++) {
      b.append(entries.get(i).key()).append('_').append(values.get(i)).append('_');
    }
    int bodyLength = b.length();
    String key = tail(b, bucket, l.index(), window, reference, start);
    recent[slot] = new Recent(key, bodyLength, bucket, l.index(), window, reference, start);
    return key;
  }

  /** The key as built on every call (tests: {@link #key} gives the same characters). */
  String build(
      String domain, List<Entry> entries, List<String> values, LimitSpec l, long nowSeconds) {
    StringBuilder b = new StringBuilder(64).append(prefix).append(domain).append('_');
    for (int i = 0; i < entries.size(); i++) {
      b.append(entries.get(i).key()).append('_').append(values.get(i)).append('_');
    }
    boolean bucket = l.algorithm() == Algorithm.TOKEN_BUCKET;
    long window = l.windowSeconds();
    long start = bucket ? 0 : Math.floorDiv(nowSeconds, window) * window;
    return tail(b, bucket, l.index(), window, l.referenceKeyLayout(), start);
  }

  private static String tail(
      StringBuilder b, boolean bucket, int index, long window, boolean reference, long start) {
    if (bucket) {
      return b.append("tb").append(index).append('w').append(window).toString();
    }
    if (!reference) {
      b.append('l').append(index).append('w').append(window).append('_');
    }
    return b.append(start).toString();
  }

  /** Whether {@code r}'s key starts with exactly what this call's body would be. */
  private boolean sameBody(Recent r, String domain, List<Entry> entries, List<String> values) {
    String k = r.key;
    int pos = prefix.length();
    if (!k.regionMatches(pos, domain, 0, domain.length())) {
      return false;
    }
    pos += domain.length();
    if (pos >= r.bodyLength || k.charAt(pos++) != '_') {
      return false;
    }
    for (int i = 0; i < entries.size(); i++) {
      String key = entries.get(i).key();
      String value = values.get(i);
      if (pos + key.length() + value.length() + 2 > r.bodyLength
          || !k.regionMatches(pos, key, 0, key.length())
          || k.charAt(pos + key.length()) != '_'
          || !k.regionMatches(pos + key.length() + 1, value, 0, value.length())
          || k.charAt(pos + key.length() + 1 + value.length()) != '_') {
        return false;
      }
      pos += key.length() + value.length() + 2;
    }
    return pos == r.bodyLength;
  }

  /**
   * The slot of a descriptor: the domain's and keys' hashes (kept in those strings, which the
   * reader hands out again) and each value's length and first and last char (a value is a new
   * string per call: its hash would be taken here first).
   */
  private static int slot(String domain, List<Entry> entries, List<String> values, int index) {
    int h = domain.hashCode() * 31 + index;
    for (int i = 0; i < entries.size(); i++) {
      String v = values.get(i);
      int n = v.length();
      h = (h * 31 + entries.get(i).key().hashCode()) * 31 + n;
      if (n > 0) {
        h = (h * 31 + v.charAt(0)) * 31 + v.charAt(n - 1);
      }
    }
    return (h * 0x9E3779B9) >>> SHIFT;
  }
}
