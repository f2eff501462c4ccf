package io.sluice.routing;

import io.sluice.config.SluiceConfig.EstimateFrom;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.session.Subject;
import org.jspecify.annotations.Nullable;

/**
 * The request's place in the policy, resolved at request headers from trusted sources.
 *
 * @param rejectReason non-null when the request must be refused before estimation (unknown route,
 *     unknown tenant)
 * @param deadlineNanos absolute ticker time of the deadline
 * @param maxMessageTimeoutMillis Envoy's max_message_timeout for this route (0 = queue-hold off)
 * @param shadow observe only: the route's {@code mode}, else its pool's, is {@code shadow}
 * @param fanout declared downstream calls (the trusted {@code fanout} signal; 0 when absent or
 *     unreadable, at most {@code FanOutPolicy.MAX_DECLARED_CALLS})
 * @param workflow the trusted {@code workflow} signal (length-capped), or null
 * @param noDegrade never degrade this request: its route says {@code degrade: false}, or the
 *     trusted {@code noDegrade} signal is {@code true}, {@code 1} or {@code yes}
 * @param signals the trusted signals the snapshot's features read ({@code ConfigSection.signals})
 */
public record ResolvedRequest(
    String route,
    PoolPolicy pool,
    ClassPolicy requestClass,
    RequestFormat format,
    EstimateFrom estimateFrom,
    Tenant tenant,
    long deadlineNanos,
    @Nullable String operationId,
    long maxMessageTimeoutMillis,
    @Nullable Reason rejectReason,
    @Nullable String rejectMessage,
    boolean shadow,
    int fanout,
    @Nullable String workflow,
    boolean noDegrade,
    io.sluice.core.session.Signals signals) {

  /**
   * The request as the admission session sees it, arrived at {@code arrivalNanos}. The operation id
   * is null when it was not read or is absent.
   */
  public Subject subject(long arrivalNanos) {
    return new Subject(
        route,
        pool,
        requestClass,
        format,
        tenant,
        arrivalNanos,
        deadlineNanos,
        operationId,
        maxMessageTimeoutMillis * 1_000_000L,
        shadow,
        fanout,
        workflow,
        signals);
  }
}
