package io.sluice.feature;

import io.sluice.config.SluiceConfig;
import io.sluice.core.time.Ticker;
import io.sluice.store.redis.RedisConnection;
import org.jspecify.annotations.Nullable;

/**
 * A feature's shared state as a port ({@code P}, an interface in {@code core/<feature>}): how it is
 * built on each backend. The bootstrap's stores build every registered port once per process,
 * without naming it, and hand it out by this key ({@link StorePorts#port}).
 *
 * @param <P> the port
 */
public interface StorePort<P> {
  /** The port's name (logs, errors). */
  String name();

  /**
   * The in-process port (backend memory, or Redis off).
   *
   * @param ticker the process's ticker
   * @param isolated the warm-up's private store: a small bound, its own clock
   */
  P memory(Ticker ticker, boolean isolated);

  /** The port on the process's Redis connection (its script registered there). */
  P redis(RedisConnection redis);

  /**
   * The store name its late writes are undone under ({@code
   * sluice_store_late_writes_undone_total{store}}), or null when it writes no holder.
   */
  default @Nullable String lateWriteStore() {
    return null;
  }

  /**
   * Applies a snapshot's policy to the built port (an in-process port's bound follows the policy);
   * called at start and at each reload. Nothing by default.
   */
  default void configure(P port, SluiceConfig config) {}

  /**
   * The process ends (drain): writes what the feature still owes the built port's store, while the
   * store still answers (bounded: it returns within a few seconds). Called once, before the stores
   * close. Nothing by default.
   */
  default void close(P port) {}
}
