package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Class shares hold on request slots as well as on work units: when the pool's request cap binds
 * and work never does (a model server's batch slots), interactive's guaranteed 70 % is 7 of 10
 * slots.
 */
class RequestSlotSharesTest {
  private final FakeTicker time = new FakeTicker();
  private final PoolPolicy pool = Policies.pool(1_000_000, 10);
  private final Tenant acme = Policies.tenant("acme", 0);

  private AdmissionController controller(ClassPolicy... classes) {
    return new AdmissionController(
        List.of(pool),
        List.of(classes),
        Duration.ofSeconds(10),
        PoolState.ReleaseListener.NONE,
        Math::random);
  }

  private Decision admit(AdmissionController c, ClassPolicy cls) {
    return c.decide(Policies.request(pool, cls, acme, 10, time.nanos()), Ask.now(time.nanos()));
  }

  @Test
  void aBorrowerCannotTakeTheRequestSlotsGuaranteedToAnotherClass() {
    ClassPolicy interactive = Policies.cls("interactive", 0, 0.7, 0.0, true);
    ClassPolicy batch = Policies.cls("batch", 1, 0.3, 0.0, true);
    AdmissionController c = controller(interactive, batch);
    int batchAdmitted = 0;
    for (int i = 0; i < 10; i++) {
      if (admit(c, batch) instanceof Decision.Admit) {
        batchAdmitted++;
      }
    }
    assertThat(batchAdmitted).isEqualTo(3);
    Decision refused = admit(c, batch);
    assertThat(((Decision.Reject) refused).reason()).isEqualTo(Reason.POOL_SATURATED);
    for (int i = 0; i < 7; i++) {
      assertThat(admit(c, interactive)).as("interactive #" + i).isInstanceOf(Decision.Admit.class);
    }
    assertThat(admit(c, interactive)).isInstanceOf(Decision.Reject.class); // the cap itself
  }

  @Test
  void aClassThatMayNotBorrowStopsAtItsShareOfTheSlots() {
    ClassPolicy interactive = Policies.cls("interactive", 0, 0.7, 0.7, true);
    ClassPolicy batch = Policies.cls("batch", 1, 0.3, 0.3, false);
    AdmissionController c = controller(interactive, batch);
    for (int i = 0; i < 3; i++) {
      assertThat(admit(c, batch)).isInstanceOf(Decision.Admit.class);
    }
    Decision refused = admit(c, batch);
    assertThat(((Decision.Reject) refused).reason()).isEqualTo(Reason.CLASS_SHARE);
  }

  @Test
  void aWaitingClassBelowItsSlotReserveGetsTheNextFreedSlot() {
    // equal rank, nothing guaranteed (all lendable): batch borrows every slot while interactive
    // is idle; once interactive waits, each freed slot goes to it until it holds its 7, even
    // though batch's waiting requests arrived first
    ClassPolicy interactive = Policies.cls("interactive", 0, 0.7, 0.7, true);
    ClassPolicy batch = Policies.cls("batch", 0, 0.3, 0.3, true);
    AdmissionController c = controller(interactive, batch);
    List<Permit> batchRunning = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      batchRunning.add(((Decision.Admit) admit(c, batch)).permit());
    }
    List<String> served = new ArrayList<>();
    long hold = Duration.ofSeconds(20).toNanos();
    for (int i = 0; i < 10; i++) {
      ClassPolicy cls = i < 5 ? batch : interactive; // five batch first, then five interactive
      time.advance(Duration.ofMillis(1));
      Decision d =
          c.decide(
              new AdmissionRequest(
                  pool,
                  cls,
                  acme,
                  10,
                  time.nanos(),
                  time.nanos() + Duration.ofSeconds(60).toNanos(),
                  -1,
                  -1),
              Ask.hold(
                  hold,
                  new Waiter() {
                    @Override
                    public void admitted(Permit permit, long waitedNanos) {
                      served.add(cls.name());
                    }

                    @Override
                    public void refused(Decision.Reject rejection, long waitedNanos) {
                      served.add("refused");
                    }
                  },
                  time.nanos()));
      assertThat(d).isInstanceOf(Decision.Queued.class);
    }
    for (int i = 0; i < 5; i++) {
      time.advance(Duration.ofMillis(10));
      batchRunning.remove(0).release(Outcome.COMPLETED, time.nanos());
    }
    assertThat(served)
        .containsExactly("interactive", "interactive", "interactive", "interactive", "interactive");
  }

  @Test
  void aClassBelowItsSlotReserveStartsAtOnceWhileAnEqualRankClassWaits() {
    // measured from outside (bench order, slots below): interactive at 8 slots of demand, below
    // its 11 of 16, was queued behind batch's waiting requests and had its wait predicted from
    // batch's queue, so some of it was refused at once (deadline_unreachable) with slots free
    ClassPolicy interactive = Policies.cls("interactive", 0, 0.7, 0.0, true);
    ClassPolicy batch = Policies.cls("batch", 0, 0.1, 0.0, true);
    AdmissionController c = controller(interactive, batch);
    for (int i = 0; i < 3; i++) {
      assertThat(admit(c, batch)).isInstanceOf(Decision.Admit.class); // 10 - 7 guaranteed
    }
    List<String> served = new ArrayList<>();
    long hold = Duration.ofSeconds(20).toNanos();
    for (int i = 0; i < 2; i++) {
      time.advance(Duration.ofMillis(1));
      assertThat(decide(c, batch, hold, served)).isInstanceOf(Decision.Queued.class);
    }
    for (int i = 0; i < 7; i++) {
      time.advance(Duration.ofMillis(1));
      assertThat(decide(c, interactive, hold, served))
          .as("interactive #" + i + " within its reserve, batch waiting")
          .isInstanceOf(Decision.Admit.class);
    }
    // at its reserve it may only borrow, and borrowing goes by arrival: it waits behind batch
    time.advance(Duration.ofMillis(1));
    assertThat(decide(c, interactive, hold, served)).isInstanceOf(Decision.Queued.class);
    assertThat(served).isEmpty();
  }

  private Decision decide(AdmissionController c, ClassPolicy cls, long hold, List<String> served) {
    return c.decide(
        new AdmissionRequest(
            pool,
            cls,
            acme,
            10,
            time.nanos(),
            time.nanos() + Duration.ofSeconds(60).toNanos(),
            -1,
            -1),
        Ask.hold(
            hold,
            new Waiter() {
              @Override
              public void admitted(Permit permit, long waitedNanos) {
                served.add(cls.name());
              }

              @Override
              public void refused(Decision.Reject rejection, long waitedNanos) {
                served.add("refused");
              }
            },
            time.nanos()));
  }

  @Test
  void slotSharesAreFloorsWithARoundingAllowance() {
    assertThat(CapacityLedger.guaranteedSlots(0.29, 100)).isEqualTo(29);
    assertThat(CapacityLedger.guaranteedSlots(0.7 - 0.2, 10)).isEqualTo(5);
    assertThat(CapacityLedger.guaranteedSlots(0.7, 4)).isEqualTo(2);
    assertThat(CapacityLedger.reservedSlots(0.1, 4)).isEqualTo(1); // a positive share gets a slot
    assertThat(CapacityLedger.reservedSlots(0.0, 4)).isZero();
    assertThat(CapacityLedger.reservedSlots(0.5, 0)).isZero(); // no cap, no slot accounting
  }
}
