package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import java.util.Objects;

/**
 * What the admission core needs to decide on one request. Built by an adapter once the route,
 * tenant and estimate are known.
 *
 * @param workUnits token-weighted work (input + reserved output, pool coefficients applied)
 * @param arrivalNanos ticker time the request arrived (request headers received)
 * @param deadlineNanos ticker time after which the answer is no longer useful
 */
public record AdmissionRequest(
    PoolPolicy pool,
    ClassPolicy requestClass,
    Tenant tenant,
    long workUnits,
    long arrivalNanos,
    long deadlineNanos) {

  public AdmissionRequest {
    Objects.requireNonNull(pool, "pool");
    Objects.requireNonNull(requestClass, "requestClass");
    Objects.requireNonNull(tenant, "tenant");
    if (workUnits <= 0) {
      throw new IllegalArgumentException("workUnits: " + workUnits + " (expected: > 0)");
    }
  }
}
