package io.sluice.core.session;

import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The request a session decides on, as the front end resolved it.
 *
 * @param format the request body format (null or AUTO: detected from the body)
 * @param route the matched route's name (a label for the decision record)
 * @param arrivalNanos ticker time the request arrived
 * @param deadlineNanos ticker time after which the answer is no longer useful
 * @param operationId the client's operation id, or null
 * @param maxHoldNanos how long the front end can hold the request (0 = never queue)
 * @param shadow observe only (the route's or pool's {@code mode: shadow}): every decision is made
 *     and recorded, but a request that would be refused or queued is let through at once, without a
 *     permit ({@link AdmissionSession})
 * @param fanout downstream calls the trusted {@code fanout} signal declares (0: none), priced by
 *     the pool's {@code fanout.perDeclaredCall}
 * @param workflow the trusted {@code workflow} signal (agent run / workflow id, at most {@code
 *     WorkflowBudget.MAX_ID_CHARS} characters), or null
 * @param signals the trusted signals the snapshot's features read (e.g. an SDK's retry counter);
 *     {@link Signals#NONE} when none
 */
public record Subject(
    String route,
    PoolPolicy pool,
    ClassPolicy requestClass,
    RequestFormat format,
    Tenant tenant,
    long arrivalNanos,
    long deadlineNanos,
    @Nullable String operationId,
    long maxHoldNanos,
    boolean shadow,
    int fanout,
    @Nullable String workflow,
    Signals signals) {
  public Subject {
    Objects.requireNonNull(pool, "pool");
    Objects.requireNonNull(requestClass, "requestClass");
    Objects.requireNonNull(tenant, "tenant");
    Objects.requireNonNull(signals, "signals");
  }
}
