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

  /** Tier {@code name}: weight 1, no concurrency cap, no budgets (the loader's defaults). */
  public static TierPolicy defaults(String name) {
    return builder(name).build();
  }

  /** A builder starting from {@link #defaults}. */
  public static Builder builder(String name) {
    return new Builder(name);
  }

  /** Builds a {@link TierPolicy}; each setting starts at its default, shown beside it. */
  public static final class Builder {
    private final String name;
    private double weight = 1.0;
    private int maxInFlight = 0;
    private long requestsPerMinute = 0;
    private long inputTokensPerMinute = 0;
    private long outputTokensPerMinute = 0;

    private Builder(String name) {
      this.name = name;
    }

    public Builder weight(double v) {
      weight = v;
      return this;
    }

    public Builder maxInFlight(int v) {
      maxInFlight = v;
      return this;
    }

    public Builder requestsPerMinute(long v) {
      requestsPerMinute = v;
      return this;
    }

    public Builder inputTokensPerMinute(long v) {
      inputTokensPerMinute = v;
      return this;
    }

    public Builder outputTokensPerMinute(long v) {
      outputTokensPerMinute = v;
      return this;
    }

    public TierPolicy build() {
      return new TierPolicy(
          name,
          weight,
          maxInFlight,
          requestsPerMinute,
          inputTokensPerMinute,
          outputTokensPerMinute);
    }
  }
}
