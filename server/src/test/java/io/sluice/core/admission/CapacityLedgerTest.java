package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The capacity accounting of one pool on its own (no queue, no clock beyond the fake ticker). */
class CapacityLedgerTest {
  private final FakeTicker time = new FakeTicker();
  private final PoolPolicy pool = Policies.pool(1000);
  private final ClassPolicy interactive = Policies.cls("interactive", 0, 0.5, 0.25, true);
  private final ClassPolicy batch = Policies.cls("batch", 1, 0.5, 0.0, false);
  private final Tenant acme = Policies.tenant("acme", 2);
  private final CapacityLedger ledger = new CapacityLedger(pool);
  private final CapacityRules rules = new CapacityRules(ledger);
  private final PoolState owner =
      new PoolState(
          pool, List.of(interactive, batch), 1, PoolState.ReleaseListener.NONE, () -> 0.5, false);

  private Permit take(ClassSlot k, long work) {
    assertThat(rules.checkCapacity(k, work)).isNull();
    return ledger.take(
        owner, k, Policies.request(pool, k.policy(), acme, work, time.nanos()), time.nanos());
  }

  @Test
  void sharesAreFloorsOfTheCapacity() {
    ledger.reconfigure(pool, List.of(interactive, batch));
    ClassSlot i = ledger.slot("interactive");
    assertThat(i.reserved()).isEqualTo(500);
    assertThat(i.guaranteed()).isEqualTo(250);
    assertThat(ledger.slot("batch").reserved()).isEqualTo(500);
    assertThat(ledger.slot("batch").guaranteed()).isEqualTo(500);
    assertThat(ledger.slot("nope")).isNull();
  }

  @Test
  void aClassWithoutBorrowStopsAtItsReserve() {
    ledger.reconfigure(pool, List.of(interactive, batch));
    ClassSlot b = ledger.slot("batch");
    take(b, 300);
    CapacityRules.Shortfall s = rules.checkCapacity(b, 300);
    assertThat(s.reason()).isEqualTo(Reason.CLASS_SHARE);
    assertThat(s.drainWork()).isEqualTo(100); // 300 + 300 - 500
  }

  @Test
  void anotherClassesIdleGuaranteedShareIsNeverOccupied() {
    ledger.reconfigure(pool, List.of(interactive, batch));
    ClassSlot i = ledger.slot("interactive");
    take(i, 500);
    // batch lends nothing (lendable 0): its idle 500 stay free for it
    CapacityRules.Shortfall s = rules.checkCapacity(i, 1);
    assertThat(s.reason()).isEqualTo(Reason.POOL_SATURATED);
    assertThat(rules.checkCapacity(ledger.slot("batch"), 500)).isNull();
  }

  @Test
  void anOversizedRequestIsAccountedAsItsClassesReach() {
    ledger.reconfigure(pool, List.of(interactive, batch));
    // interactive's reach: 1000 - batch's guaranteed 500; batch's: its reserve (no borrow)
    assertThat(ledger.accountedWork(ledger.slot("interactive"), 5000)).isEqualTo(500);
    assertThat(ledger.accountedWork(ledger.slot("batch"), 5000)).isEqualTo(500);
    assertThat(ledger.accountedWork(ledger.slot("batch"), 7)).isEqualTo(7);
  }

  @Test
  void theTenantCapCountsInFlightRequests() {
    ledger.reconfigure(pool, List.of(interactive, batch));
    ClassSlot i = ledger.slot("interactive");
    Permit a = take(i, 1);
    assertThat(rules.checkTenant(acme)).isNull();
    take(i, 1);
    assertThat(rules.checkTenant(acme).reason()).isEqualTo(Reason.TENANT_CONCURRENCY);
    ledger.release(a);
    assertThat(rules.checkTenant(acme)).isNull();
    assertThat(ledger.tenantInFlight("acme")).isEqualTo(1);
    assertThat(rules.checkTenant(Policies.tenant("free", 0))).isNull();
  }

  @Test
  void aRemovedClassKeepsItsPermitsUntilTheyDrain() {
    ledger.reconfigure(pool, List.of(interactive, batch));
    Permit p = take(ledger.slot("batch"), 100);
    ledger.reconfigure(pool, List.of(interactive));
    assertThat(ledger.slot("batch")).isNull(); // not offered to new requests
    assertThat(ledger.slots()).hasSize(2);
    assertThat(ledger.totalWork()).isEqualTo(100);
    time.advance(Duration.ofSeconds(1));
    ledger.release(p);
    assertThat(ledger.slots()).hasSize(1);
    assertThat(ledger.totalWork()).isZero();
    assertThat(ledger.totalRequests()).isZero();
    assertThat(ledger.tenantsInFlight()).isZero();
  }

  @Test
  void theRequestCapRefusesTheNextRequest() {
    PoolPolicy capped = Policies.pool(1000, 1);
    ledger.reconfigure(capped, List.of(interactive, batch));
    ClassSlot i = ledger.slot("interactive");
    ledger.take(owner, i, Policies.request(capped, interactive, acme, 1, 0), 0);
    assertThat(rules.checkCapacity(i, 1).reason()).isEqualTo(Reason.POOL_SATURATED);
    assertThat(ledger.freeWork()).isEqualTo(999);
  }
}
