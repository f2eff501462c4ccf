package io.sluice.core.policy;

import java.util.Objects;

/**
 * A tenant tier such as free/pro/enterprise. Tier names are bounded and used as metric labels;
 * tenant ids never are.
 *
 * @param weight fair-share weight inside a class queue
 * @param maxInFlight concurrent requests a tenant of this tier may hold, 0 = no cap
 */
public record TierPolicy(String name, double weight, int maxInFlight) {
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
  }
}
