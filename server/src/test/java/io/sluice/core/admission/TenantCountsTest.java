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

  /**
   * The last tenant taken is remembered with its counter (a run of one tenant looks nothing up): an
   * equal id that is another string takes the same counter, and every other tenant keeps its own
   * whatever the order of takes, releases and reads.
   */
  @Test
  void lastTenantRemembered_equalIdSameCounter_alternatingTenantsKeepTheirOwn() {
    TenantCounts t = new TenantCounts();
    int[] a = t.take("acme");
    assertThat(t.take(new String("acme"))).as("equal id, another string").isSameAs(a);
    int[] b = t.take("bolt");
    assertThat(b).isNotSameAs(a);
    assertThat(t.of("acme")).isEqualTo(2);
    assertThat(t.of(new String("bolt"))).isEqualTo(1);
    assertThat(t.take("acme")).isSameAs(a);
    assertThat(t.take("bolt")).isSameAs(b);
    assertThat(t.of("acme")).isEqualTo(3);
    assertThat(t.of("bolt")).isEqualTo(2);
    assertThat(t.of("cato")).isZero();
    assertThat(t.holding()).isEqualTo(2);
    for (int i = 0; i < 3; i++) {
      t.release(a);
    }
    assertThat(t.of("acme")).isZero();
    assertThat(t.holding()).isEqualTo(1);
    // a take that drops the idle counters (acme's among them) remembers its own tenant's counter
    for (int i = 0; i < 2 * TenantCounts.IDLE_KEPT; i++) {
      t.release(t.take("rotated-" + i));
    }
    int[] again = t.take("acme");
    assertThat(t.of("acme")).isEqualTo(1);
    assertThat(t.take("acme")).isSameAs(again);
    assertThat(t.of("acme")).isEqualTo(2);
    assertThat(t.of("bolt")).isEqualTo(2);
    assertThat(t.holding()).isEqualTo(2);
  }
}
