package io.sluice.bootstrap;

import io.sluice.config.EnvValues;
import io.sluice.store.StoreSettings;
import io.sluice.store.memory.InMemoryStore;
import io.sluice.store.redis.RedisSettings;
import java.util.Locale;
import java.util.Map;

/**
 * The store settings read from environment variables with the reference's names (the bootstrap
 * merges {@code rateLimit.env} from the policy file with the process environment, which wins). The
 * stores take the plain values; reading the environment, and its errors naming the variable, is the
 * bootstrap's.
 */
public final class StoreEnv {
  private StoreEnv() {}

  /** The backend and its settings ({@link StoreSettings}: the variables and their defaults). */
  public static StoreSettings settings(Map<String, String> env) {
    return new StoreSettings(
        env.getOrDefault("BACKEND_TYPE", "memory").toLowerCase(Locale.ROOT),
        redis(env),
        new InMemoryStore.Bounds(
            EnvValues.bytes(
                env, "SLUICE_RLS_MEMORY_MAX_BYTES", InMemoryStore.Bounds.DEFAULT.maxBytes()),
            EnvValues.integer(env, "SLUICE_RLS_MEMORY_MAX_ENTRIES", 0)));
  }

  /** The {@code REDIS_*} settings ({@link RedisSettings}: the variables and their defaults). */
  public static RedisSettings redis(Map<String, String> env) {
    return new RedisSettings(
        env.getOrDefault("REDIS_TYPE", "single").toLowerCase(Locale.ROOT),
        env.getOrDefault("REDIS_URL", "127.0.0.1:6379"),
        env.getOrDefault("REDIS_SOCKET_TYPE", "tcp").toLowerCase(Locale.ROOT),
        env.getOrDefault("REDIS_AUTH", ""),
        env.getOrDefault("REDIS_SENTINEL_AUTH", ""),
        EnvValues.bool("REDIS_TLS", env.getOrDefault("REDIS_TLS", "false")),
        EnvValues.bool(
            "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION",
            env.getOrDefault("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", "false")),
        EnvValues.duration("REDIS_TIMEOUT", env.getOrDefault("REDIS_TIMEOUT", "10s")),
        EnvValues.duration(
            "REDIS_COMMAND_TIMEOUT", env.getOrDefault("REDIS_COMMAND_TIMEOUT", "50ms")),
        EnvValues.duration(
            "REDIS_RECONNECT_INTERVAL", env.getOrDefault("REDIS_RECONNECT_INTERVAL", "1s")));
  }
}
