package io.sluice.core.quota;

import io.sluice.core.admission.Reason;

/**
 * Result of a tenant quota check.
 *
 * @param allowed whether the request may go on
 * @param reason {@link Reason#TENANT_RATE} or {@link Reason#TENANT_TOKENS} when refused, {@link
 *     Reason#ADMITTED} otherwise
 * @param retryAfterMillis when refused: time until the bucket holds what was asked
 * @param storeFailed the store did not answer; {@code allowed} then follows the failure mode
 */
public record QuotaCheck(
    boolean allowed, Reason reason, long retryAfterMillis, boolean storeFailed) {
  public static final QuotaCheck ALLOWED = new QuotaCheck(true, Reason.ADMITTED, 0, false);
}
