package io.sluice.core.admission;

import static io.sluice.core.admission.Policies.cls;
import static io.sluice.core.admission.Policies.pool;
import static io.sluice.core.admission.Policies.request;
import static io.sluice.core.admission.Policies.tenant;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 13 audit: PoolState's per-tenant maps are keyed by tenant ids a client may rotate; they
 * hold only tenants with work in flight, so rotating ids leaves nothing behind once the work ends.
 */
class TenantMapsBoundTest {
  @Test
  void rotatingTenantIds_leaveNoEntryOnceTheirWorkIsReleased() {
    FakeTicker time = new FakeTicker();
    PoolPolicy pool = pool(1_000_000);
    ClassPolicy c = cls("interactive", 0, 1.0, 0.0, true);
    AdmissionController controller =
        new AdmissionController(
            List.of(pool), List.of(c), Duration.ofSeconds(10), PoolState.ReleaseListener.NONE);
    List<Permit> permits = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      Decision d =
          controller.tryAdmit(
              request(pool, c, tenant("rotated-" + i, 5), 10, time.nanos()), time.nanos());
      permits.add(((Decision.Admit) d).permit());
    }
    assertThat(controller.pool("p").snapshot(time.nanos()).tenantsInFlight()).isEqualTo(1000);
    for (Permit p : permits) {
      p.release(Outcome.COMPLETED, time.nanos());
    }
    assertThat(controller.pool("p").snapshot(time.nanos()).tenantsInFlight()).isZero();
  }
}
