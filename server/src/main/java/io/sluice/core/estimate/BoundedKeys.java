package io.sluice.core.estimate;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/** The learners' keys: at most {@code maxKeys}, the coldest evicted at once and counted. */
final class BoundedKeys {
  private BoundedKeys() {}

  /**
   * A cache of at most {@code maxKeys} entries that evicts on the caller's thread (the bound holds
   * at once) and counts each eviction in {@code evictions}.
   */
  static <K, V> Cache<K, V> of(long maxKeys, LongAdder evictions) {
    return Caffeine.newBuilder()
        .maximumSize(maxKeys)
        .executor(Runnable::run)
        .removalListener(
            (@Nullable K k, @Nullable V v, RemovalCause cause) -> {
              if (cause.wasEvicted()) {
                evictions.increment();
              }
            })
        .build();
  }
}
