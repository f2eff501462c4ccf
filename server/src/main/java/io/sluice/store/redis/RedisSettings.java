package io.sluice.store.redis;

import java.time.Duration;

/**
 * Redis connection settings, read once from the environment with envoyproxy/ratelimit's names (by
 * the bootstrap: {@code bootstrap.StoreEnv}).
 *
 * @param type {@code single}, {@code sentinel} or {@code cluster} ({@code REDIS_TYPE})
 * @param url {@code host:port}, a socket path, {@code master,host:port,...} (sentinel) or {@code
 *     host:port,...} (cluster) ({@code REDIS_URL})
 * @param socketType {@code tcp} or {@code unix} ({@code REDIS_SOCKET_TYPE})
 * @param auth {@code pass} or {@code user:pass}, empty for none ({@code REDIS_AUTH})
 * @param sentinelAuth password for the sentinels ({@code REDIS_SENTINEL_AUTH})
 * @param tls ({@code REDIS_TLS})
 * @param tlsSkipHostnameVerification ({@code REDIS_TLS_SKIP_HOSTNAME_VERIFICATION})
 * @param connectTimeout ({@code REDIS_TIMEOUT}, default 10s as in the reference)
 * @param commandTimeout per-command timeout ({@code REDIS_COMMAND_TIMEOUT}, default 50ms; the
 *     reference has no separate setting and waits up to REDIS_TIMEOUT)
 * @param reconnectInterval how long to wait before retrying a failed initial connection ({@code
 *     REDIS_RECONNECT_INTERVAL}, default 1s)
 */
public record RedisSettings(
    String type,
    String url,
    String socketType,
    String auth,
    String sentinelAuth,
    boolean tls,
    boolean tlsSkipHostnameVerification,
    Duration connectTimeout,
    Duration commandTimeout,
    Duration reconnectInterval) {

  public RedisSettings {
    if (!type.equals("single") && !type.equals("sentinel") && !type.equals("cluster")) {
      throw new IllegalArgumentException(
          "REDIS_TYPE: " + type + " (expected: single, sentinel or cluster)");
    }
    if (!socketType.equals("tcp") && !socketType.equals("unix")) {
      throw new IllegalArgumentException(
          "REDIS_SOCKET_TYPE: " + socketType + " (expected: tcp or unix)");
    }
    if (url.isBlank()) {
      throw new IllegalArgumentException("REDIS_URL: " + url + " (expected: non-empty)");
    }
    if (commandTimeout.isZero() || commandTimeout.isNegative()) {
      throw new IllegalArgumentException(
          "REDIS_COMMAND_TIMEOUT: " + commandTimeout + " (expected: > 0)");
    }
  }

  /** Local Redis with defaults, for tests and examples. */
  public static RedisSettings local(int port) {
    return new RedisSettings(
        "single",
        "127.0.0.1:" + port,
        "tcp",
        "",
        "",
        false,
        false,
        Duration.ofSeconds(10),
        Duration.ofMillis(50),
        Duration.ofSeconds(1));
  }

  public RedisSettings withCommandTimeout(Duration timeout) {
    return new RedisSettings(
        type,
        url,
        socketType,
        auth,
        sentinelAuth,
        tls,
        tlsSkipHostnameVerification,
        connectTimeout,
        timeout,
        reconnectInterval);
  }

  /** Never prints a credential: auth, sentinel auth and a URL's password are masked. */
  @Override
  public String toString() {
    return "RedisSettings[type="
        + type
        + ", url="
        + io.sluice.config.Secrets.redactUrls(url)
        + ", socketType="
        + socketType
        + ", auth="
        + (auth.isEmpty() ? "" : io.sluice.config.Secrets.MASK)
        + ", sentinelAuth="
        + (sentinelAuth.isEmpty() ? "" : io.sluice.config.Secrets.MASK)
        + ", tls="
        + tls
        + ", tlsSkipHostnameVerification="
        + tlsSkipHostnameVerification
        + ", connectTimeout="
        + connectTimeout
        + ", commandTimeout="
        + commandTimeout
        + ", reconnectInterval="
        + reconnectInterval
        + "]";
  }
}
