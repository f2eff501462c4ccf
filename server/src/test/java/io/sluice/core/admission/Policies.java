package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import java.time.Duration;

/** Small policy fixtures for core tests. */
final class Policies {
  private Policies() {}

  static PoolPolicy pool(long capacity) {
    return pool(capacity, 0);
  }

  static PoolPolicy pool(long capacity, int maxRequests) {
    return PoolPolicy.of(
        "p",
        capacity,
        maxRequests,
        1.0,
        1.0,
        Duration.ofSeconds(1),
        Duration.ofSeconds(60),
        Duration.ZERO);
  }

  static ClassPolicy cls(String name, int rank, double reserved, double lendable, boolean borrow) {
    return ClassPolicy.of(
        name,
        rank,
        reserved,
        lendable,
        borrow,
        Duration.ofSeconds(30),
        Duration.ofSeconds(2),
        100,
        1000,
        503);
  }

  static Tenant tenant(String id, int maxInFlight) {
    return new Tenant(id, new TierPolicy("t", 1.0, maxInFlight));
  }

  static AdmissionRequest request(PoolPolicy pool, ClassPolicy c, Tenant t, long work, long now) {
    return new AdmissionRequest(pool, c, t, work, now, now + Duration.ofSeconds(30).toNanos());
  }
}
