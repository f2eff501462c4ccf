package io.sluice.emulator;

import io.sluice.upstream.HttpHeaders;
import io.sluice.upstream.Upstream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The emulated route configuration (one virtual host, routes tried in order, first match wins) and
 * the options of the router filter ({@code envoy.filters.http.router}) that forwards to them.
 *
 * <p>How the emulated Envoy uses it (docs/emulator.md, "Routes and router timeouts"): the route is
 * picked from the request headers as the client sent them and cached; a request-path ext_proc
 * response may clear the cache, and the router then picks again from the mutated headers. No route
 * ⇒ 404 local reply {@code route_not_found}.
 *
 * @param routes in match order
 * @param respectExpectedRqTimeout router {@code respect_expected_rq_timeout}: a request header
 *     {@code x-envoy-expected-rq-timeout-ms} sets the timeout (before {@code
 *     x-envoy-upstream-rq-timeout-ms})
 * @param suppressEnvoyHeaders router {@code suppress_envoy_headers}: no {@code
 *     x-envoy-expected-rq-timeout-ms} is set on the upstream request
 */
public record RouteTable(
    List<Route> routes, boolean respectExpectedRqTimeout, boolean suppressEnvoyHeaders) {

  /** The name of the route {@link #single} builds. */
  public static final String DEFAULT_ROUTE = "default";

  public RouteTable {
    routes = List.copyOf(routes);
  }

  /**
   * What the emulator did before it had routes: one catch-all route named {@value #DEFAULT_ROUTE}
   * to {@code upstream}, with the route timeout <b>disabled</b> (0), so long generations are never
   * cut. Timeout headers set on the request still apply.
   */
  public static RouteTable single(Upstream upstream) {
    return new RouteTable(
        List.of(Route.catchAll(DEFAULT_ROUTE, upstream).withTimeout(Duration.ZERO)), false, false);
  }

  /** Routes in match order, router defaults. */
  public static RouteTable of(Route... routes) {
    return new RouteTable(List.of(routes), false, false);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The first route whose match holds for {@code requestHeaders}; empty ⇒ 404. */
  public Optional<Route> select(HttpHeaders requestHeaders) {
    for (Route r : routes) {
      if (r.match().matches(requestHeaders)) {
        return Optional.of(r);
      }
    }
    return Optional.empty();
  }

  /** Builder: routes in the order added; router options default to Envoy's (false). */
  public static final class Builder {
    private final List<Route> routes = new ArrayList<>();
    private boolean respectExpectedRqTimeout;
    private boolean suppressEnvoyHeaders;

    private Builder() {}

    public Builder route(Route route) {
      routes.add(route);
      return this;
    }

    /** Router {@code respect_expected_rq_timeout}. */
    public Builder respectExpectedRqTimeout(boolean respect) {
      this.respectExpectedRqTimeout = respect;
      return this;
    }

    /** Router {@code suppress_envoy_headers}. */
    public Builder suppressEnvoyHeaders(boolean suppress) {
      this.suppressEnvoyHeaders = suppress;
      return this;
    }

    public RouteTable build() {
      return new RouteTable(routes, respectExpectedRqTimeout, suppressEnvoyHeaders);
    }
  }
}
