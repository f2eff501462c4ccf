package io.sluice.core.session;

import io.sluice.core.policy.PoolPolicy;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * How a request runs upstream, as its {@link Planner} planned it: an immutable value the session
 * holds ({@link RunningRequest#plan}) and the front end reads when it answers the decision.
 *
 * @param pool the pool the request runs in: its own, or the reroute rung's
 * @param body the body the upstream gets instead of the client's, or null when it is unchanged
 * @param headers request headers to set for the upstream (reroute, engine priority); empty when
 *     none
 * @param clearRouteCache whether Envoy must pick the route again (the reroute rung changed the
 *     routing header)
 * @param enginePriority the engine priority written for the upstream, or null when none
 * @param rung the rung that degraded the request ({@code concise}, {@code reroute}), or null
 * @param trigger what fired the ladder for a degraded request ({@code wait}, {@code headroom}), or
 *     null
 */
@SuppressWarnings("ArrayRecordComponent") // the body by reference: never compared or hashed
public record UpstreamPlan(
    PoolPolicy pool,
    byte @Nullable [] body,
    Map<String, String> headers,
    boolean clearRouteCache,
    @Nullable String enginePriority,
    @Nullable String rung,
    @Nullable String trigger) {

  // the last pool's plan as asked: immutable, shared by its requests (most run as asked)
  private static volatile @Nullable UpstreamPlan lastAsAsked;

  /** The request runs as asked, in {@code pool}: nothing rewritten, nothing added. */
  public static UpstreamPlan asAsked(PoolPolicy pool) {
    UpstreamPlan last = lastAsAsked;
    if (last != null && last.pool == pool) {
      return last;
    }
    UpstreamPlan plan = new UpstreamPlan(pool, null, Map.of(), false, null, null, null);
    lastAsAsked = plan;
    return plan;
  }

  /** Where and how the request runs, for the events ({@code p}: its permit, or null). */
  RequestFacts.Run facts(io.sluice.core.admission.@Nullable Permit p) {
    return new RequestFacts.Run(
        pool, p != null, rung, trigger, enginePriority, p == null ? 0 : p.admittedAtNanos());
  }

  /** This plan without its degrade (a refused request is not degraded: it may have waited so). */
  UpstreamPlan notDegraded() {
    return new UpstreamPlan(pool, null, headers, clearRouteCache, enginePriority, null, null);
  }
}
