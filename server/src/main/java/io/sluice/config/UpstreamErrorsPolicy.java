package io.sluice.config;

import java.time.Duration;
import java.util.Map;

/**
 * How an upstream's own failure (a 429, 502/503, 504 or 529 from the model server or provider, or
 * an Envoy reply for an upstream reset or timeout that reaches ext_proc) is answered to the client
 * ({@code upstreamErrors}, docs/configuration.md): the defaults, overridden per pool, then per
 * route (the route's rule wins).
 *
 * @param defaults the rule of every request no override names
 * @param pools rules by pool name
 * @param routes rules by route name
 */
public record UpstreamErrorsPolicy(
    Rule defaults, Map<String, Rule> pools, Map<String, Rule> routes) {
  public static final UpstreamErrorsPolicy DEFAULTS =
      new UpstreamErrorsPolicy(Rule.DEFAULTS, Map.of(), Map.of());

  public UpstreamErrorsPolicy {
    pools = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(pools));
    routes = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(routes));
  }

  /**
   * One rule.
   *
   * @param rewrite answer in Sluice's typed shape ({@code x-sluice-reason}, Retry-After, scope
   *     {@code upstream}); false: the upstream's answer passes untouched (still counted)
   * @param keepProviderBody with {@code rewrite}: keep the provider's status and body and add only
   *     Sluice's headers; false: replace the answer with Sluice's JSON error
   * @param retryAfter the Retry-After when the upstream gives none, and the least one given
   */
  public record Rule(boolean rewrite, boolean keepProviderBody, Duration retryAfter) {
    public static final Rule DEFAULTS = new Rule(true, false, Duration.ofSeconds(1));
  }

  /**
   * The rule of a request of {@code pool} on {@code route}: the route's, the pool's, else the
   * defaults.
   */
  public Rule rule(String pool, String route) {
    Rule r = routes.get(route);
    if (r != null) {
      return r;
    }
    r = pools.get(pool);
    return r != null ? r : defaults;
  }
}
