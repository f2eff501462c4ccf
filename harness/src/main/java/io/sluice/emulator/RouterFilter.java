package io.sluice.emulator;

import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.sluice.upstream.HttpHeaders;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The route cache and the router filter of one exchange: which route the request takes, when it is
 * picked again, and the router's final timeout. The local replies and the timer stay with the
 * exchange; this part only decides.
 */
final class RouterFilter {
  // Router request headers (Envoy's Http::Headers), read in FilterUtility::finalTimeout
  static final String UPSTREAM_RQ_TIMEOUT_MS = "x-envoy-upstream-rq-timeout-ms";
  static final String EXPECTED_RQ_TIMEOUT_MS = "x-envoy-expected-rq-timeout-ms";
  static final String UPSTREAM_RQ_TIMEOUT_ALT_RESPONSE = "x-envoy-upstream-rq-timeout-alt-response";
  static final String RESPONSE_TIMEOUT_DETAILS = "upstream_response_timeout";
  static final String ROUTE_NOT_FOUND_DETAILS = "route_not_found";

  private final FilterConfig config;
  private final Stats stats;
  private final RouteTable routes;
  private final HttpHeaders requestHeaders;
  // HCM resolves the route from the client's headers before the filter chain runs (and ext_proc's
  // decodeHeaders reads it): cached, including "no route", until a clear_route_cache
  private Optional<Route> cachedRoute;
  private boolean routeCacheCleared;
  private boolean decoded;
  private @Nullable Route route;
  private long timeoutMillis;
  private int timeoutResponseStatus = 504;

  RouterFilter(FilterConfig config, Stats stats, RouteTable routes, HttpHeaders requestHeaders) {
    this.config = config;
    this.stats = stats;
    this.routes = routes;
    this.requestHeaders = requestHeaders;
    this.cachedRoute = routes.select(requestHeaders);
  }

  /** The route the router took; null until {@link #decodeHeaders} found one. */
  @Nullable Route route() {
    return route;
  }

  boolean decoded() {
    return decoded;
  }

  /** The final timeout of the route taken (0: none). */
  long timeoutMillis() {
    return timeoutMillis;
  }

  /** The status a global timeout answers with: 504, or 204 when the alt-response header asked. */
  int timeoutResponseStatus() {
    return timeoutResponseStatus;
  }

  /**
   * Envoy's {@code DecodingProcessorState::clearRouteCache} ({@code processor_state.cc}), run after
   * every request-path headers or body response (the encoding side's is a no-op): without a {@code
   * header_mutation} nothing is cleared ({@code clear_route_cache_ignored} if it was asked for);
   * with one, DEFAULT clears iff {@code clear_route_cache}, CLEAR always, RETAIN never ({@code
   * clear_route_cache_disabled} if it was asked for). The route is picked again, from the headers
   * as they are then, when the router next asks for it.
   */
  void clearRouteCache(CommonResponse common) {
    boolean asked = common.getClearRouteCache();
    if (!common.hasHeaderMutation()) {
      if (asked) {
        stats.clearRouteCacheIgnored.increment();
      }
      return;
    }
    switch (config.effectiveRouteCacheAction()) {
      case DEFAULT -> routeCacheCleared |= asked;
      case CLEAR -> routeCacheCleared = true;
      case RETAIN -> {
        if (asked) {
          stats.clearRouteCacheDisabled.increment();
        }
      }
    }
  }

  /** {@code StreamDecoderFilterCallbacks::route()}: the cached route, re-picked after a clear. */
  private Optional<Route> cachedRoute() {
    if (routeCacheCleared) {
      routeCacheCleared = false;
      cachedRoute = routes.select(requestHeaders);
    }
    return cachedRoute;
  }

  /**
   * The router's {@code Filter::decodeHeaders} ({@code source/common/router/router.cc}), the first
   * time: takes the route and its final timeout. False if there is none ({@code no_route}: the
   * caller answers 404, {@code route_not_found}, empty body).
   */
  boolean decodeHeaders() {
    decoded = true;
    Optional<Route> selected = cachedRoute();
    if (selected.isEmpty()) {
      return false;
    }
    route = selected.get();
    timeoutMillis = finalTimeoutMillis(route);
    if (requestHeaders.contains(UPSTREAM_RQ_TIMEOUT_ALT_RESPONSE)) {
      // decodeHeaders: any value makes a global timeout answer 204 (no body)
      timeoutResponseStatus = 204;
      requestHeaders.remove(UPSTREAM_RQ_TIMEOUT_ALT_RESPONSE);
    }
    return true;
  }

  /**
   * Envoy's {@code FilterUtility::finalTimeout} + {@code setTimeoutHeaders} ({@code
   * source/common/router/router.cc}; per-try and gRPC timeouts not emulated). The route's {@code
   * timeout}, overridden by a parseable {@code x-envoy-upstream-rq-timeout-ms}, which is removed
   * from the request whether it parsed or not. With {@code respect_expected_rq_timeout} a present
   * {@code x-envoy-expected-rq-timeout-ms} is used instead (and {@code
   * x-envoy-upstream-rq-timeout-ms} is then left alone). Unless {@code suppress_envoy_headers}, a
   * final timeout above 0 is written to {@code x-envoy-expected-rq-timeout-ms} on the request the
   * upstream receives. 0 means no timeout.
   */
  private long finalTimeoutMillis(Route selected) {
    long timeout = selected.timeout().toMillis();
    Optional<String> expected = requestHeaders.first(EXPECTED_RQ_TIMEOUT_MS);
    if (routes.respectExpectedRqTimeout() && expected.isPresent()) {
      timeout = parseTimeoutHeader(expected.get()).orElse(timeout);
    } else {
      Optional<String> upstreamTimeout = requestHeaders.first(UPSTREAM_RQ_TIMEOUT_MS);
      if (upstreamTimeout.isPresent()) {
        timeout = parseTimeoutHeader(upstreamTimeout.get()).orElse(timeout);
        requestHeaders.remove(UPSTREAM_RQ_TIMEOUT_MS);
      }
    }
    if (timeout > 0 && !routes.suppressEnvoyHeaders()) {
      requestHeaders.set(EXPECTED_RQ_TIMEOUT_MS, Long.toString(timeout));
    }
    return timeout;
  }

  /** {@code FilterUtility::tryParseHeaderTimeout}: {@code absl::SimpleAtoi} into a uint64. */
  private static Optional<Long> parseTimeoutHeader(String value) {
    String v = value.strip();
    if (v.startsWith("+")) {
      v = v.substring(1);
    }
    if (v.isEmpty() || !v.chars().allMatch(c -> c >= '0' && c <= '9')) {
      return Optional.empty();
    }
    try {
      return Optional.of(Long.parseLong(v));
    } catch (NumberFormatException e) {
      return Optional.empty(); // beyond what the emulator represents
    }
  }
}
