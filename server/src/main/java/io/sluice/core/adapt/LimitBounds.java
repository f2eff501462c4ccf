package io.sluice.core.adapt;

import io.sluice.core.policy.AdaptivePolicy;
import io.sluice.core.policy.PoolPolicy;

/**
 * The numbers of an adaptive limit, a fraction {@code f} of its ceiling's capacity and maxRequests:
 * its floor ({@code minCapacity}, {@code minRequests}), where a new limit starts ({@code start}),
 * and the work units and request slots of {@code f}. Pure functions of the policy.
 */
public final class LimitBounds {
  private LimitBounds() {}

  /** The floor of {@code ceiling}'s limit as a fraction of it. */
  public static double floorOf(PoolPolicy ceiling) {
    AdaptivePolicy a = ceiling.adaptive();
    double f =
        Math.max(
            (double) a.minCapacity() / ceiling.capacityWorkUnits(),
            ceiling.maxRequests() > 0
                ? (double) Math.max(1, a.minRequests()) / ceiling.maxRequests()
                : 0);
    return Math.min(1.0, f);
  }

  /** Where a new limit of {@code ceiling} starts with none learned (its {@code start}, clamped). */
  public static double startFraction(PoolPolicy ceiling) {
    return Math.max(floorOf(ceiling), Math.min(1.0, ceiling.adaptive().start()));
  }

  /** Work units of the limit {@code f} of {@code ceiling} (NaN: none learned, the start). */
  public static long workOf(PoolPolicy ceiling, double f) {
    AdaptivePolicy a = ceiling.adaptive();
    long cap = ceiling.capacityWorkUnits();
    double g = Double.isNaN(f) ? startFraction(ceiling) : f;
    long w = (long) Math.floor(g * cap + 1e-9);
    return Math.min(cap, Math.max(a.minCapacity(), Math.max(1, w)));
  }

  /**
   * Request slots of the limit {@code f} of {@code ceiling} (NaN: none learned, the start; 0: no
   * cap).
   */
  public static int requestsOf(PoolPolicy ceiling, double f) {
    int m = ceiling.maxRequests();
    if (m <= 0) {
      return 0;
    }
    int min = Math.max(1, ceiling.adaptive().minRequests());
    double g = Double.isNaN(f) ? startFraction(ceiling) : f;
    int r = (int) Math.floor(g * m + 1e-9);
    return Math.min(m, Math.max(min, r));
  }
}
