package io.sluice.core.store;

/**
 * What a bounded in-process store reports about its bound, for metrics ({@code
 * sluice.rls.store.memory.*}).
 */
public interface MemoryStoreStats {
  /** Accounted bytes of all entries (keys + per-entry overhead), at most {@link #maxBytes()}. */
  long bytes();

  /** The byte bound. */
  long maxBytes();

  /** Counters and token buckets held. */
  long entries();

  /** Entries removed to make room whose window or bucket had already run out (nothing lost). */
  long expiredEvictions();

  /** Entries removed to make room while still live (a counter or bucket reset). */
  long liveEvictions();

  /** Keys larger than the whole bound, answered fresh and not kept. */
  long unstored();

  /** Hits (counts, or tokens owed) lost by live evictions. */
  long evictedHits();
}
