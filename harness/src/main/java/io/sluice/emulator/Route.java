package io.sluice.emulator;

import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.Upstream;
import java.time.Duration;
import java.util.List;

/**
 * One route of the emulated {@code RouteConfiguration} (a single virtual host): a name, a match on
 * the request headers, the {@link Upstream} (cluster) it sends to, and the route's {@code timeout}.
 * Build with {@link #header}, {@link #pathPrefix} or {@link #catchAll}, then {@link #withTimeout}.
 *
 * @param name the route's {@code name} ({@code xds.route_name})
 * @param match what the request headers must satisfy
 * @param upstream where a request on this route goes
 * @param timeout {@code RouteAction.timeout}: Envoy's default is 15 s; {@link Duration#ZERO}
 *     disables it
 */
public record Route(String name, Match match, Upstream upstream, Duration timeout) {

  /** Envoy's default {@code RouteAction.timeout}. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(15);

  public Route {
    if (name.isBlank()) {
      throw new IllegalArgumentException("name: '" + name + "' (expected: non-blank)");
    }
    if (timeout.isNegative()) {
      throw new IllegalArgumentException("timeout: " + timeout + " (expected: >= 0)");
    }
  }

  /** A route condition ({@code RouteMatch}); {@code case_sensitive} matching, as by default. */
  public sealed interface Match permits ExactHeader, PathPrefix, Any {
    boolean matches(HttpHeaders requestHeaders);
  }

  /**
   * {@code headers: [{name, string_match: {exact}}]}: the header's values, joined with {@code ,} as
   * Envoy joins repeated headers ({@code HeaderUtility::getAllOfHeaderAsString}), equal {@code
   * value}.
   */
  public record ExactHeader(String name, String value) implements Match {
    public ExactHeader {
      name = name.toLowerCase(java.util.Locale.ROOT);
    }

    @Override
    public boolean matches(HttpHeaders requestHeaders) {
      List<String> values = requestHeaders.all(name);
      return !values.isEmpty() && String.join(",", values).equals(value);
    }
  }

  /** {@code prefix}: {@code :path} starts with {@code prefix}. */
  public record PathPrefix(String prefix) implements Match {
    @Override
    public boolean matches(HttpHeaders requestHeaders) {
      return requestHeaders.first(":path").orElse("").startsWith(prefix);
    }
  }

  /** {@code prefix: "/"}: every request. */
  public record Any() implements Match {
    @Override
    public boolean matches(HttpHeaders requestHeaders) {
      return true;
    }
  }

  /** A route for requests whose header {@code headerName} equals {@code value} exactly. */
  public static Route header(String name, String headerName, String value, Upstream upstream) {
    return new Route(name, new ExactHeader(headerName, value), upstream, DEFAULT_TIMEOUT);
  }

  /** A route for requests whose {@code :path} starts with {@code prefix}. */
  public static Route pathPrefix(String name, String prefix, Upstream upstream) {
    return new Route(name, new PathPrefix(prefix), upstream, DEFAULT_TIMEOUT);
  }

  /** A route for every request (put it last). */
  public static Route catchAll(String name, Upstream upstream) {
    return new Route(name, new Any(), upstream, DEFAULT_TIMEOUT);
  }

  /** This route with another {@code timeout} ({@link Duration#ZERO} = disabled). */
  public Route withTimeout(Duration routeTimeout) {
    return new Route(name, match, upstream, routeTimeout);
  }
}
