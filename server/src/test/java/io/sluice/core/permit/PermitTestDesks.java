package io.sluice.core.permit;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.Ticker;
import java.time.Duration;
import java.util.List;

/**
 * Replicas of the permit tests: each its own pools (pool {@code pg}, 2 requests, class {@code db})
 * and desk (lease 10 s, 100 leases) on a lease store the test shares between them.
 */
final class PermitTestDesks {
  static final ClassPolicy DB =
      ClassPolicy.builder("db")
          .rank(0)
          .shares(1.0, 0.0)
          .borrow(true)
          .deadline(Duration.ofSeconds(30))
          .maxQueueWait(Duration.ofSeconds(5))
          .outputTokens(100, 1000)
          .build();

  private PermitTestDesks() {}

  /** One replica's pools. */
  static AdmissionController pools() {
    return new AdmissionController(
        List.of(PoolPolicy.builder("pg", 1000).maxRequests(2).build()),
        List.of(DB),
        Duration.ofSeconds(10),
        (p, pm, o, n) -> {},
        Math::random);
  }

  /** One replica's desk over {@code pools}, its leases in {@code store}. */
  static PermitDesk desk(
      AdmissionController pools, PermitLeases store, Ticker time, PermitEvents events) {
    return new PermitDesk(
        pools,
        id -> new Tenant(id, TierPolicy.builder("t").build()),
        time,
        Duration.ofSeconds(10).toNanos(),
        100,
        new PermitDesk.Shared(store, "t_", () -> null, events));
  }
}
