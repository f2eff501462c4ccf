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
 * @param inputTokens estimated input tokens, or -1 if unknown (for the service-time model; -1 and
 *     -1: only the work units are known)
 * @param outputTokens reserved output tokens, or -1 if unknown (for the service-time model)
 */
public record AdmissionRequest(
    PoolPolicy pool,
    ClassPolicy requestClass,
    Tenant tenant,
    long workUnits,
    long arrivalNanos,
    long deadlineNanos,
    long inputTokens,
    long outputTokens) {

  public AdmissionRequest {
    Objects.requireNonNull(pool, "pool");
    Objects.requireNonNull(requestClass, "requestClass");
    Objects.requireNonNull(tenant, "tenant");
    if (workUnits <= 0) {
      throw new IllegalArgumentException("workUnits: " + workUnits + " (expected: > 0)");
    }
    if (inputTokens < -1 || outputTokens < -1) {
      throw new IllegalArgumentException(
          "inputTokens/outputTokens: " + inputTokens + "/" + outputTokens + " (expected: >= -1)");
    }
  }

  /** True when both token counts are known. */
  public boolean hasTokenSplit() {
    return inputTokens >= 0 && outputTokens >= 0;
  }
}
