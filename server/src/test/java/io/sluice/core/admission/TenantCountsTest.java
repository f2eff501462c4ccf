package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * Requests in flight per tenant: the counter a permit carries, the tenants holding one, and the
 * bound on the idle counters kept for tenant ids a client rotates.
 */
class TenantCountsTest {
  @Test
  void countsPerTenant_andTenantsHolding_idleCounterKeptAndReused() {
    TenantCounts t = new TenantCounts();
    int[] a1 = t.take("acme");
    int[] a2 = t.take("acme");
    int[] b = t.take("bolt");
    assertThat(a2).isSameAs(a1);
    assertThat(t.of("acme")).isEqualTo(2);
    assertThat(t.holding()).isEqualTo(2);
    t.release(a1);
    assertThat(t.of("acme")).isEqualTo(1);
    assertThat(t.holding()).isEqualTo(2);
    t.release(a2);
    t.release(b);
    assertThat(t.of("acme")).isZero();
    assertThat(t.of("nobody")).isZero();
    assertThat(t.holding()).isZero();
    assertThat(t.take("acme")).as("kept at 0, taken again").isSameAs(a1);
    assertThat(t.holding()).isEqualTo(1);
  }

  @Test
  void rotatingTenantIds_keepAtMostTheBound_idleOrBesideTwiceThoseHolding() {
    TenantCounts t = new TenantCounts();
    for (int i = 0; i < 5 * TenantCounts.IDLE_KEPT; i++) {
      t.release(t.take("rotated-" + i));
      assertThat(t.entries()).isLessThanOrEqualTo(TenantCounts.IDLE_KEPT);
    }
    assertThat(t.holding()).isZero();
    int held = TenantCounts.IDLE_KEPT + 44;
    for (int i = 0; i < held; i++) {
      t.take("held-" + i);
    }
    for (int i = 0; i < 5 * TenantCounts.IDLE_KEPT; i++) {
      t.release(t.take("idle-" + i));
      assertThat(t.entries()).isLessThanOrEqualTo(2 * held);
    }
    assertThat(t.holding()).isEqualTo(held);
    for (int i = 0; i < held; i++) {
      assertThat(t.of("held-" + i)).as("held-%d", i).isEqualTo(1);
    }
  }
}
