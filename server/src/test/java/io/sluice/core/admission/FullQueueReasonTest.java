package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Which reason a refused queue offer gets: 503 {@code queue_full} when the waiting room has no
 * space (even if one tenant filled it), 429 {@code tenant_concurrency} only when the room has space
 * but the tenant's part of it is used, or the tenant's tier cap is reached.
 */
class FullQueueReasonTest {
  private static final long HOLD = Duration.ofSeconds(5).toNanos();
  private final FakeTicker time = new FakeTicker();
  private final PoolPolicy pool =
      PoolPolicy.builder("p", 100)
          .maxMessageTimeout(Duration.ofSeconds(5))
          .retryAfterJitter(0.0)
          .defaultServiceTime(Duration.ofMillis(100))
          .build();

  private static ClassPolicy cls(double tenantShare) {
    // the queue holds 100 work units, at most 10 requests
    return ClassPolicy.builder("interactive")
        .shares(1.0, 0.0)
        .deadline(Duration.ofSeconds(30))
        .maxQueueWait(Duration.ofSeconds(4))
        .outputTokens(100, 1000)
        .queue(1.0, 10, tenantShare)
        .build();
  }

  private Decision.Reject fill(double tenantShare, Tenant last) {
    ClassPolicy c = cls(tenantShare);
    AdmissionController controller =
        new AdmissionController(
            List.of(pool),
            List.of(c),
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            Math::random);
    Tenant solo = Policies.tenant("solo", 0);
    assertThat(decide(controller, c, solo, 100)).isInstanceOf(Decision.Admit.class);
    for (int i = 0; i < 10; i++) {
      Decision d = decide(controller, c, solo, 10);
      if (d instanceof Decision.Reject r) {
        return r;
      }
    }
    return (Decision.Reject) decide(controller, c, last, 10);
  }

  private Decision decide(AdmissionController controller, ClassPolicy c, Tenant t, long work) {
    return controller.decide(
        new AdmissionRequest(
            pool,
            c,
            t,
            work,
            time.nanos(),
            time.nanos() + Duration.ofSeconds(30).toNanos(),
            -1,
            -1),
        Ask.hold(
            HOLD,
            new Waiter() {
              @Override
              public void admitted(Permit permit, long waitedNanos) {}

              @Override
              public void refused(Decision.Reject rejection, long waitedNanos) {}
            },
            time.nanos()));
  }

  @Test
  void aQueueOneTenantFilledIsFull() {
    Decision.Reject r = fill(1.0, Policies.tenant("solo", 0));
    assertThat(r.reason()).isEqualTo(Reason.QUEUE_FULL);
    assertThat(r.status()).isEqualTo(503);
  }

  @Test
  void aTenantOverItsShareOfARoomWithSpaceIsTenantConcurrency() {
    Decision.Reject r = fill(0.5, Policies.tenant("solo", 0)); // solo stops at 50 of 100 units
    assertThat(r.reason()).isEqualTo(Reason.TENANT_CONCURRENCY);
    assertThat(r.status()).isEqualTo(429);
  }
}
