package io.sluice.rls.config;

import io.sluice.config.EnvValues;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/**
 * Process settings of the rate limit service, read once from environment variables with
 * envoyproxy/ratelimit's names (plus a few {@code SLUICE_RLS_*} ones). Tests pass maps. The store
 * settings ({@code BACKEND_TYPE}, {@code REDIS_*}, {@code SLUICE_RLS_MEMORY_*}) are read by the
 * bootstrap, which builds the store once and hands it to this service and to the tenant quotas
 * ({@code io.sluice.store.StoreSettings}).
 *
 * @param files where the rate limit config files are and how they are watched ({@code RUNTIME_*},
 *     {@code MERGE_DOMAIN_CONFIG}, {@code SLUICE_RLS_CONFIG_POLL_INTERVAL})
 * @param cacheKeyPrefix {@code CACHE_KEY_PREFIX} (default empty)
 * @param expirationJitterMaxSeconds {@code EXPIRATION_JITTER_MAX_SECONDS} (default 300)
 * @param nearLimitRatio {@code NEAR_LIMIT_RATIO} (default 0.8)
 * @param shadowMode {@code SHADOW_MODE} (global; default false)
 * @param quotaMode {@code QUOTA_MODE} (global; default false)
 * @param headers the {@code RateLimit-*} response headers ({@code LIMIT_*})
 * @param strict {@code SLUICE_RLS_STRICT}: strict drop-in mode (no Retry-After, failure mode {@code
 *     error}); default false
 * @param retryAfter {@code SLUICE_RLS_RETRY_AFTER}: add {@code retry-after} on OVER_LIMIT (default:
 *     true unless strict)
 * @param failureMode {@code SLUICE_RLS_FAILURE_MODE}: default for limits without {@code
 *     failure_mode} (default: {@code error} when strict, else {@code open})
 * @param expectedReplicas {@code SLUICE_RLS_EXPECTED_REPLICAS} for failure mode {@code local}
 *     (default 1)
 * @param healthyWithAtLeastOneConfigLoaded {@code HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED}
 * @param listen the addresses envoyproxy/ratelimit listens on ({@code GRPC_HOST}, {@code
 *     GRPC_PORT}, {@code HOST}, {@code PORT}), read for the bootstrap
 * @param warmupTimeout {@code SLUICE_RLS_WARMUP_TIMEOUT}: how long {@code ready()} waits for the
 *     store warm-up before giving up (default 10s)
 */
public record RlsSettings(
    ConfigFiles files,
    String cacheKeyPrefix,
    long expirationJitterMaxSeconds,
    double nearLimitRatio,
    boolean shadowMode,
    boolean quotaMode,
    Headers headers,
    boolean strict,
    boolean retryAfter,
    FailureMode failureMode,
    int expectedReplicas,
    boolean healthyWithAtLeastOneConfigLoaded,
    Listen listen,
    Duration warmupTimeout) {

  /**
   * Where the rate limit config files are and how they are watched.
   *
   * @param root {@code RUNTIME_ROOT} (default {@code /srv/runtime_data/current})
   * @param subdirectory {@code RUNTIME_SUBDIRECTORY} (default empty)
   * @param appDirectory {@code RUNTIME_APPDIRECTORY} (default {@code config})
   * @param ignoreDotFiles {@code RUNTIME_IGNOREDOTFILES} (default false)
   * @param watchRoot {@code RUNTIME_WATCH_ROOT} (default true: reload when the root symlink changes
   *     target; false: reload when any file in the config directory changes)
   * @param mergeDomainConfig {@code MERGE_DOMAIN_CONFIG} (default false)
   * @param pollInterval {@code SLUICE_RLS_CONFIG_POLL_INTERVAL} (default 1s; 0 disables the
   *     watcher)
   */
  public record ConfigFiles(
      Path root,
      String subdirectory,
      String appDirectory,
      boolean ignoreDotFiles,
      boolean watchRoot,
      boolean mergeDomainConfig,
      Duration pollInterval) {

    /** {@code RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY}. */
    public Path directory() {
      Path p = root;
      if (!subdirectory.isEmpty()) {
        p = p.resolve(subdirectory);
      }
      if (!appDirectory.isEmpty()) {
        p = p.resolve(appDirectory);
      }
      return p;
    }
  }

  /**
   * The {@code RateLimit-*} response headers.
   *
   * @param enabled {@code LIMIT_RESPONSE_HEADERS_ENABLED} (default false)
   * @param limit {@code LIMIT_LIMIT_HEADER} (default {@code RateLimit-Limit})
   * @param remaining {@code LIMIT_REMAINING_HEADER} (default {@code RateLimit-Remaining})
   * @param reset {@code LIMIT_RESET_HEADER} (default {@code RateLimit-Reset})
   */
  public record Headers(boolean enabled, String limit, String remaining, String reset) {}

  /**
   * The addresses envoyproxy/ratelimit listens on, for the bootstrap.
   *
   * @param grpcHost {@code GRPC_HOST} (default 0.0.0.0)
   * @param grpcPort {@code GRPC_PORT} (default 8081)
   * @param httpHost {@code HOST} (default 0.0.0.0)
   * @param httpPort {@code PORT} (default 8080)
   */
  public record Listen(String grpcHost, int grpcPort, String httpHost, int httpPort) {}

  public RlsSettings {
    if (nearLimitRatio < 0 || nearLimitRatio > 1) {
      throw new IllegalArgumentException(
          "NEAR_LIMIT_RATIO: " + nearLimitRatio + " (expected: 0..1)");
    }
    if (expectedReplicas < 1) {
      throw new IllegalArgumentException(
          "SLUICE_RLS_EXPECTED_REPLICAS: " + expectedReplicas + " (expected: >= 1)");
    }
    if (expirationJitterMaxSeconds < 0) {
      throw new IllegalArgumentException(
          "EXPIRATION_JITTER_MAX_SECONDS: " + expirationJitterMaxSeconds + " (expected: >= 0)");
    }
    if (warmupTimeout.isNegative() || warmupTimeout.isZero()) {
      throw new IllegalArgumentException(
          "SLUICE_RLS_WARMUP_TIMEOUT: " + warmupTimeout + " (expected: > 0)");
    }
  }

  public static RlsSettings fromEnv(Map<String, String> env) {
    boolean strict = bool(env, "SLUICE_RLS_STRICT", false);
    return new RlsSettings(
        new ConfigFiles(
            Path.of(env.getOrDefault("RUNTIME_ROOT", "/srv/runtime_data/current")),
            env.getOrDefault("RUNTIME_SUBDIRECTORY", ""),
            env.getOrDefault("RUNTIME_APPDIRECTORY", "config"),
            bool(env, "RUNTIME_IGNOREDOTFILES", false),
            bool(env, "RUNTIME_WATCH_ROOT", true),
            bool(env, "MERGE_DOMAIN_CONFIG", false),
            EnvValues.duration(
                "SLUICE_RLS_CONFIG_POLL_INTERVAL",
                env.getOrDefault("SLUICE_RLS_CONFIG_POLL_INTERVAL", "1s"))),
        env.getOrDefault("CACHE_KEY_PREFIX", ""),
        integer(env, "EXPIRATION_JITTER_MAX_SECONDS", 300),
        dbl(env, "NEAR_LIMIT_RATIO", 0.8),
        bool(env, "SHADOW_MODE", false),
        bool(env, "QUOTA_MODE", false),
        new Headers(
            bool(env, "LIMIT_RESPONSE_HEADERS_ENABLED", false),
            env.getOrDefault("LIMIT_LIMIT_HEADER", "RateLimit-Limit"),
            env.getOrDefault("LIMIT_REMAINING_HEADER", "RateLimit-Remaining"),
            env.getOrDefault("LIMIT_RESET_HEADER", "RateLimit-Reset")),
        strict,
        bool(env, "SLUICE_RLS_RETRY_AFTER", !strict),
        FailureMode.parse(
            "SLUICE_RLS_FAILURE_MODE",
            env.getOrDefault("SLUICE_RLS_FAILURE_MODE", strict ? "error" : "open")),
        (int) integer(env, "SLUICE_RLS_EXPECTED_REPLICAS", 1),
        bool(env, "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", false),
        new Listen(
            env.getOrDefault("GRPC_HOST", "0.0.0.0"),
            (int) integer(env, "GRPC_PORT", 8081),
            env.getOrDefault("HOST", "0.0.0.0"),
            (int) integer(env, "PORT", 8080)),
        EnvValues.duration(
            "SLUICE_RLS_WARMUP_TIMEOUT", env.getOrDefault("SLUICE_RLS_WARMUP_TIMEOUT", "10s")));
  }

  /**
   * {@code RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY} ({@link ConfigFiles#directory}).
   */
  public Path configDirectory() {
    return files.directory();
  }

  private static boolean bool(Map<String, String> env, String name, boolean dflt) {
    return EnvValues.bool(env, name, dflt);
  }

  private static long integer(Map<String, String> env, String name, long dflt) {
    return EnvValues.integer(env, name, dflt);
  }

  private static double dbl(Map<String, String> env, String name, double dflt) {
    return EnvValues.number(env, name, dflt);
  }
}
