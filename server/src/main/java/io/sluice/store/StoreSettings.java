package io.sluice.store;

import io.sluice.store.memory.InMemoryStore;
import io.sluice.store.redis.RedisSettings;

/**
 * Which store backend the process runs on, read once from environment variables with the
 * reference's names by the bootstrap ({@code bootstrap.StoreEnv}, which merges {@code
 * rateLimit.env} from the policy file with the process environment, which wins). The bootstrap
 * builds the store from these and hands it to both the rate limit service and the tenant quotas.
 *
 * @param backendType {@code BACKEND_TYPE}: {@code memory} (default) or {@code redis}
 * @param redis the {@code REDIS_*} settings (parsed always, used when the backend is redis)
 * @param memoryBounds {@code SLUICE_RLS_MEMORY_MAX_BYTES} (byte bound of the in-memory store: keys
 *     + 160 bytes per entry; default 64 MiB; a number of bytes or with a {@code KiB}, {@code MiB}
 *     or {@code GiB} suffix; at least 64 KiB) and {@code SLUICE_RLS_MEMORY_MAX_ENTRIES} (default 0
 *     = only the byte bound); they bound the backend store when it is memory, and the in-process
 *     store of failure mode {@code local} when it is redis
 */
public record StoreSettings(
    String backendType, RedisSettings redis, InMemoryStore.Bounds memoryBounds) {
  public StoreSettings {
    if (!backendType.equals("memory") && !backendType.equals("redis")) {
      throw new IllegalArgumentException(
          "BACKEND_TYPE: " + backendType + " (expected: memory or redis)");
    }
  }

  /** Whether the backend is Redis (shared by replicas) rather than this process's memory. */
  public boolean redisBackend() {
    return backendType.equals("redis");
  }
}
