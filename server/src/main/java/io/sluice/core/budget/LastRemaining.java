package io.sluice.core.budget;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import org.jspecify.annotations.Nullable;

/**
 * What the shared store last said remains of each budget (per key: limit less spent and reserved,
 * after the reservation it answered; 0 when it refused one as spent), and in which window: the base
 * of failure mode {@code local}'s allowance. While the store does not answer, a replica may reserve
 * {@code localShare} of that remaining budget on its local share, in the same window. A key the
 * store never answered for (or not since its window rolled over: a calendar period's next window, a
 * rolling period's next slice) falls back to {@code localShare} of the whole limit.
 *
 * <p>Bounded: at most {@code maxEntries} keys ({@code budgets.maxEntries}), the coldest forgotten
 * first (a forgotten key falls back as above). Kept across a hot reload with the write-back: one
 * per shared store. Thread-safe.
 */
public final class LastRemaining {
  /** What the store said of one key: {@code remaining} units in window {@code windowId}. */
  private record Heard(String windowId, long remaining) {}

  private final Cache<String, Heard> heard;

  /**
   * @param maxEntries the most keys remembered at a time
   */
  public LastRemaining(int maxEntries) {
    this.heard =
        Caffeine.newBuilder().maximumSize(Math.max(1, maxEntries)).executor(Runnable::run).build();
  }

  /** Follows a reloaded policy's bound. */
  public void resize(int maxEntries) {
    heard.policy().eviction().ifPresent(e -> e.setMaximum(Math.max(1, maxEntries)));
  }

  /**
   * The store answered a reservation of {@code key} in window {@code windowId} with {@code o}: an
   * admission says what remains, a refusal (spent) that nothing does, a wait nothing new.
   */
  void heard(String key, String windowId, Ledger.Outcome o) {
    if (o instanceof Ledger.Outcome.Admit ad) {
      heard.put(key, new Heard(windowId, Math.max(0, ad.remaining())));
    } else if (o instanceof Ledger.Outcome.Exhausted) {
      heard.put(key, new Heard(windowId, 0));
    }
  }

  /**
   * The terms a replica reserves {@code key} on while the store does not answer: {@code share} of
   * what the store last said remains in {@code windowId}, else of {@code t}'s limit; at least one
   * unit (a budget's terms allow one). The thresholds stay {@code t}'s; the burst is capped at the
   * allowance.
   */
  Terms localTerms(String key, String windowId, Terms t, double share) {
    long base = t.limit();
    @Nullable Heard h = heard.getIfPresent(key);
    if (h != null && h.windowId().equals(windowId)) {
      base = Math.min(base, h.remaining());
    }
    long limit = Math.max(1, (long) Math.floor(base * share));
    return new Terms(limit, t.thresholds(), Math.min(t.burst(), limit));
  }

  /** Whether {@code key}'s allowance in {@code windowId} is a share of what remained (metrics). */
  boolean knows(String key, String windowId) {
    @Nullable Heard h = heard.getIfPresent(key);
    return h != null && h.windowId().equals(windowId);
  }
}
