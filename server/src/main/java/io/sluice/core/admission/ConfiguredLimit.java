package io.sluice.core.admission;

import io.sluice.core.policy.PoolPolicy;

/**
 * The first limit source: the pool's numbers as configured (a hot reload replaces them). For an
 * adaptive pool, capacity and maxRequests here are the ceiling the adaptive limit moves under.
 */
final class ConfiguredLimit implements LimitSource {
  private volatile PoolPolicy policy; // written under the pool lock

  ConfiguredLimit(PoolPolicy policy) {
    this.policy = policy;
  }

  PoolPolicy policy() {
    return policy;
  }

  /** A reload: the new policy (under the pool lock). */
  @Override
  public void reconfigure(PoolPolicy next) {
    this.policy = next;
  }

  @Override
  public PoolLimits applyTo(PoolLimits limits) {
    return limits.withPolicy(policy);
  }
}
