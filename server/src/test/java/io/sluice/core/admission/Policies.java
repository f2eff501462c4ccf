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
    return PoolPolicy.builder("p", capacity).maxRequests(maxRequests).build();
  }

  static ClassPolicy cls(String name, int rank, double reserved, double lendable, boolean borrow) {
    return ClassPolicy.builder(name)
        .rank(rank)
        .shares(reserved, lendable)
        .borrow(borrow)
        .deadline(Duration.ofSeconds(30))
        .maxQueueWait(Duration.ofSeconds(2))
        .outputTokens(100, 1000)
        .build();
  }

  static Tenant tenant(String id, int maxInFlight) {
    return new Tenant(id, TierPolicy.builder("t").maxInFlight(maxInFlight).build());
  }

  static AdmissionRequest request(PoolPolicy pool, ClassPolicy c, Tenant t, long work, long now) {
    return new AdmissionRequest(
        pool, c, t, work, now, now + Duration.ofSeconds(30).toNanos(), -1, -1);
  }
}
