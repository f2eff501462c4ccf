package io.sluice.core.policy;

import java.util.Objects;

/**
 * A tenant tier such as free/pro/enterprise. Tier names are bounded and used as metric labels;
 * tenant ids never are.
 *
 * @param weight fair-share weight inside a class queue
 * @param maxInFlight concurrent requests a tenant of this tier may hold, 0 = no cap
 * @param requestsPerMinute per-tenant request budget (RPM), 0 = none
 * @param inputTokensPerMinute per-tenant input token budget (TPM), 0 = none
 * @param outputTokensPerMinute per-tenant output token budget (TPM), 0 = none
 */
public record TierPolicy(
    String name,
    double weight,
    int maxInFlight,
    long requestsPerMinute,
    long inputTokensPerMinute,
    long outputTokensPerMinute) {
  public TierPolicy {
    Objects.requireNonNull(name, "name");
    if (!(weight > 0)) {
      throw new IllegalArgumentException(
          "tiers." + name + ".weight: " + weight + " (expected: > 0)");
    }
    if (maxInFlight < 0) {
      throw new IllegalArgumentException(
          "tiers." + name + ".maxInFlight: " + maxInFlight + " (expected: >= 0, 0 = no cap)");
    }
    if (requestsPerMinute < 0 || inputTokensPerMinute < 0 || outputTokensPerMinute < 0) {
      throw new IllegalArgumentException(
          "tiers." + name + ".rpm/inputTpm/outputTpm: must be >= 0 (0 = no budget)");
    }
  }

  /** A tier without request or token budgets. */
  public TierPolicy(String name, double weight, int maxInFlight) {
    this(name, weight, maxInFlight, 0, 0, 0);
  }
}
