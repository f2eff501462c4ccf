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
 * @param runtimeRoot {@code RUNTIME_ROOT} (default {@code /srv/runtime_data/current})
 * @param runtimeSubdirectory {@code RUNTIME_SUBDIRECTORY} (default empty)
 * @param runtimeAppDirectory {@code RUNTIME_APPDIRECTORY} (default {@code config})
 * @param runtimeIgnoreDotFiles {@code RUNTIME_IGNOREDOTFILES} (default false)
 * @param runtimeWatchRoot {@code RUNTIME_WATCH_ROOT} (default true: reload when the root symlink
 *     changes target; false: reload when any file in the config directory changes)
 * @param mergeDomainConfig {@code MERGE_DOMAIN_CONFIG} (default false)
 * @param configPollInterval {@code SLUICE_RLS_CONFIG_POLL_INTERVAL} (default 1s; 0 disables the
 *     watcher)
 * @param cacheKeyPrefix {@code CACHE_KEY_PREFIX} (default empty)
 * @param expirationJitterMaxSeconds {@code EXPIRATION_JITTER_MAX_SECONDS} (default 300)
 * @param nearLimitRatio {@code NEAR_LIMIT_RATIO} (default 0.8)
 * @param shadowMode {@code SHADOW_MODE} (global; default false)
 * @param quotaMode {@code QUOTA_MODE} (global; default false)
 * @param limitResponseHeadersEnabled {@code LIMIT_RESPONSE_HEADERS_ENABLED} (default false)
 * @param limitHeader {@code LIMIT_LIMIT_HEADER} (default {@code RateLimit-Limit})
 * @param remainingHeader {@code LIMIT_REMAINING_HEADER} (default {@code RateLimit-Remaining})
 * @param resetHeader {@code LIMIT_RESET_HEADER} (default {@code RateLimit-Reset})
 * @param strict {@code SLUICE_RLS_STRICT}: strict drop-in mode (no Retry-After, failure mode {@code
 *     error}); default false
 * @param retryAfter {@code SLUICE_RLS_RETRY_AFTER}: add {@code retry-after} on OVER_LIMIT (default:
 *     true unless strict)
 * @param failureMode {@code SLUICE_RLS_FAILURE_MODE}: default for limits without {@code
 *     failure_mode} (default: {@code error} when strict, else {@code open})
 * @param expectedReplicas {@code SLUICE_RLS_EXPECTED_REPLICAS} for failure mode {@code local}
 *     (default 1)
 * @param healthyWithAtLeastOneConfigLoaded {@code HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED}
 * @param grpcHost {@code GRPC_HOST} (default 0.0.0.0), for the bootstrap
 * @param grpcPort {@code GRPC_PORT} (default 8081), for the bootstrap
 * @param httpHost {@code HOST} (default 0.0.0.0), for the bootstrap
 * @param httpPort {@code PORT} (default 8080), for the bootstrap
 * @param warmupTimeout {@code SLUICE_RLS_WARMUP_TIMEOUT}: how long {@code ready()} waits for the
 *     store warm-up before giving up (default 10s)
 */
public record RlsSettings(
    Path runtimeRoot,
    String runtimeSubdirectory,
    String runtimeAppDirectory,
    boolean runtimeIgnoreDotFiles,
    boolean runtimeWatchRoot,
    boolean mergeDomainConfig,
    Duration configPollInterval,
    String cacheKeyPrefix,
    long expirationJitterMaxSeconds,
    double nearLimitRatio,
    boolean shadowMode,
    boolean quotaMode,
    boolean limitResponseHeadersEnabled,
    String limitHeader,
    String remainingHeader,
    String resetHeader,
    boolean strict,
    boolean retryAfter,
    FailureMode failureMode,
    int expectedReplicas,
    boolean healthyWithAtLeastOneConfigLoaded,
    String grpcHost,
    int grpcPort,
    String httpHost,
    int httpPort,
    Duration warmupTimeout) {

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
        Path.of(env.getOrDefault("RUNTIME_ROOT", "/srv/runtime_data/current")),
        env.getOrDefault("RUNTIME_SUBDIRECTORY", ""),
        env.getOrDefault("RUNTIME_APPDIRECTORY", "config"),
        bool(env, "RUNTIME_IGNOREDOTFILES", false),
        bool(env, "RUNTIME_WATCH_ROOT", true),
        bool(env, "MERGE_DOMAIN_CONFIG", false),
        EnvValues.duration(
            "SLUICE_RLS_CONFIG_POLL_INTERVAL",
            env.getOrDefault("SLUICE_RLS_CONFIG_POLL_INTERVAL", "1s")),
        env.getOrDefault("CACHE_KEY_PREFIX", ""),
        integer(env, "EXPIRATION_JITTER_MAX_SECONDS", 300),
        dbl(env, "NEAR_LIMIT_RATIO", 0.8),
        bool(env, "SHADOW_MODE", false),
        bool(env, "QUOTA_MODE", false),
        bool(env, "LIMIT_RESPONSE_HEADERS_ENABLED", false),
        env.getOrDefault("LIMIT_LIMIT_HEADER", "RateLimit-Limit"),
        env.getOrDefault("LIMIT_REMAINING_HEADER", "RateLimit-Remaining"),
        env.getOrDefault("LIMIT_RESET_HEADER", "RateLimit-Reset"),
        strict,
        bool(env, "SLUICE_RLS_RETRY_AFTER", !strict),
        FailureMode.parse(
            "SLUICE_RLS_FAILURE_MODE",
            env.getOrDefault("SLUICE_RLS_FAILURE_MODE", strict ? "error" : "open")),
        (int) integer(env, "SLUICE_RLS_EXPECTED_REPLICAS", 1),
        bool(env, "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", false),
        env.getOrDefault("GRPC_HOST", "0.0.0.0"),
        (int) integer(env, "GRPC_PORT", 8081),
        env.getOrDefault("HOST", "0.0.0.0"),
        (int) integer(env, "PORT", 8080),
        EnvValues.duration(
            "SLUICE_RLS_WARMUP_TIMEOUT", env.getOrDefault("SLUICE_RLS_WARMUP_TIMEOUT", "10s")));
  }

  /** {@code RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY}. */
  public Path configDirectory() {
    Path p = runtimeRoot;
    if (!runtimeSubdirectory.isEmpty()) {
      p = p.resolve(runtimeSubdirectory);
    }
    if (!runtimeAppDirectory.isEmpty()) {
      p = p.resolve(runtimeAppDirectory);
    }
    return p;
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
