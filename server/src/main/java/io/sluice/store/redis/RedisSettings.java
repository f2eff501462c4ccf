package io.sluice.store.redis;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Redis connection settings, read once from the environment with envoyproxy/ratelimit's names.
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

  public static RedisSettings fromEnv(Map<String, String> env) {
    return new RedisSettings(
        env.getOrDefault("REDIS_TYPE", "single").toLowerCase(Locale.ROOT),
        env.getOrDefault("REDIS_URL", "127.0.0.1:6379"),
        env.getOrDefault("REDIS_SOCKET_TYPE", "tcp").toLowerCase(Locale.ROOT),
        env.getOrDefault("REDIS_AUTH", ""),
        env.getOrDefault("REDIS_SENTINEL_AUTH", ""),
        parseBool("REDIS_TLS", env.getOrDefault("REDIS_TLS", "false")),
        parseBool(
            "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION",
            env.getOrDefault("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", "false")),
        parseDuration("REDIS_TIMEOUT", env.getOrDefault("REDIS_TIMEOUT", "10s")),
        parseDuration("REDIS_COMMAND_TIMEOUT", env.getOrDefault("REDIS_COMMAND_TIMEOUT", "50ms")),
        parseDuration(
            "REDIS_RECONNECT_INTERVAL", env.getOrDefault("REDIS_RECONNECT_INTERVAL", "1s")));
  }

  /** Local Redis with defaults, for tests and examples. */
  public static RedisSettings local(int port) {
    return fromEnv(Map.of("REDIS_URL", "127.0.0.1:" + port));
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

  private static final Pattern DURATION_PART =
      Pattern.compile("(\\d+(?:\\.\\d+)?)(ns|us|µs|ms|s|m|h)");

  /**
   * Parses Go-style durations ({@code 50ms}, {@code 1m30s}, {@code 10s}); a bare number is seconds.
   */
  public static Duration parseDuration(String name, String text) {
    String t = text.trim();
    if (t.matches("\\d+")) {
      return Duration.ofSeconds(Long.parseLong(t));
    }
    Matcher m = DURATION_PART.matcher(t);
    long nanos = 0;
    int end = 0;
    while (m.find() && m.start() == end) {
      double v = Double.parseDouble(m.group(1));
      long unit =
          switch (m.group(2)) {
            case "ns" -> 1L;
            case "us", "µs" -> 1_000L;
            case "ms" -> 1_000_000L;
            case "s" -> 1_000_000_000L;
            case "m" -> 60_000_000_000L;
            default -> 3_600_000_000_000L;
          };
      nanos += (long) (v * unit);
      end = m.end();
    }
    if (end != t.length() || t.isEmpty()) {
      throw new IllegalArgumentException(
          name + ": " + text + " (expected: a duration like 50ms or 10s)");
    }
    return Duration.ofNanos(nanos);
  }

  public static boolean parseBool(String name, String text) {
    return switch (text.trim().toLowerCase(Locale.ROOT)) {
      case "true", "1", "t", "yes" -> true;
      case "false", "0", "f", "no", "" -> false;
      default ->
          throw new IllegalArgumentException(name + ": " + text + " (expected: true or false)");
    };
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
