package io.sluice.core.admission;

import static io.sluice.core.admission.Policies.cls;
import static io.sluice.core.admission.Policies.pool;
import static io.sluice.core.admission.Policies.request;
import static io.sluice.core.admission.Policies.tenant;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class AdmissionControllerTest {
  private final FakeTicker time = new FakeTicker();
  private final PoolPolicy pool = pool(1000);
  private final ClassPolicy interactive = cls("interactive", 0, 0.5, 0.0, true);
  private final ClassPolicy batch = cls("batch", 1, 0.2, 0.0, true);
  private final ClassPolicy strict = cls("strict", 2, 0.1, 0.0, false);
  private final Tenant acme = tenant("acme", 0);
  private final List<Outcome> released = new ArrayList<>();
  private final AdmissionController controller =
      new AdmissionController(
          List.of(pool),
          List.of(batch, interactive, strict),
          Duration.ofSeconds(10),
          (p, permit, outcome, now) -> released.add(outcome),
          () -> 0.5);

  private Decision admit(ClassPolicy c, Tenant t, long work) {
    return controller.decide(request(pool, c, t, work, time.nanos()), Ask.now(time.nanos()));
  }

  private PoolState.Snapshot snapshot() {
    return controller.pool("p").snapshot(time.nanos());
  }

  @Test
  void tryAdmit_withinReservedShare_admits() {
    Decision d = admit(interactive, acme, 500);
    assertThat(d).isInstanceOf(Decision.Admit.class);
    assertThat(snapshot().workInFlight()).isEqualTo(500);
  }

  @Test
  void tryAdmit_beyondShareWithoutBorrow_rejectsClassShare() {
    assertThat(admit(strict, acme, 100)).isInstanceOf(Decision.Admit.class);
    Decision d = admit(strict, acme, 1);
    assertThat(d).isInstanceOf(Decision.Reject.class);
    Decision.Reject r = (Decision.Reject) d;
    assertThat(r.reason()).isEqualTo(Reason.CLASS_SHARE);
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.retryAfterSeconds()).isGreaterThanOrEqualTo(1);
  }

  @Test
  void tryAdmit_borrowerCannotTakeAnotherClassGuaranteedShare() {
    // interactive guarantees 500 and strict 100: batch may use 1000 - 500 - 100 = 400 at most
    assertThat(admit(batch, acme, 400)).isInstanceOf(Decision.Admit.class);
    Decision d = admit(batch, acme, 1);
    assertThat(((Decision.Reject) d).reason()).isEqualTo(Reason.POOL_SATURATED);
    // interactive still gets its whole guaranteed share at once
    assertThat(admit(interactive, acme, 500)).isInstanceOf(Decision.Admit.class);
    assertThat(admit(strict, acme, 100)).isInstanceOf(Decision.Admit.class);
    assertThat(snapshot().workInFlight()).isEqualTo(1000);
  }

  @Test
  void tryAdmit_requestLargerThanItsClassCanEverHold_runsAloneAsThatReach() {
    // batch can reach 1000 - 500 - 100 = 400 at most: a 5000-unit request is accounted as 400
    // (not as the whole pool, which it could never get while the others guarantee their shares)
    assertThat(admit(batch, acme, 5000)).isInstanceOf(Decision.Admit.class);
    assertThat(snapshot().workInFlight()).isEqualTo(400);
    assertThat(((Decision.Reject) admit(batch, acme, 1)).reason()).isEqualTo(Reason.POOL_SATURATED);
    // the others' guaranteed shares are untouched
    assertThat(admit(interactive, acme, 500)).isInstanceOf(Decision.Admit.class);
    // a class that may not borrow reaches its reserved share (100)
    assertThat(admit(strict, acme, 5000)).isInstanceOf(Decision.Admit.class);
    assertThat(snapshot().workInFlight()).isEqualTo(1000);
  }

  @Test
  void tryAdmit_lendableShareIsBorrowedWhileIdle() {
    ClassPolicy lender = cls("lender", 0, 0.5, 0.5, true);
    ClassPolicy borrower = cls("borrower", 1, 0.0, 0.0, true);
    AdmissionController c =
        new AdmissionController(
            List.of(pool),
            List.of(lender, borrower),
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            () -> 0.5);
    Decision d = c.decide(request(pool, borrower, acme, 1000, time.nanos()), Ask.now(time.nanos()));
    assertThat(d).isInstanceOf(Decision.Admit.class);
    Decision l = c.decide(request(pool, lender, acme, 1, time.nanos()), Ask.now(time.nanos()));
    assertThat(((Decision.Reject) l).reason()).isEqualTo(Reason.POOL_SATURATED);
  }

  @Test
  void tryAdmit_tenantAtCap_rejects429TenantConcurrency() {
    Tenant capped = tenant("capped", 2);
    assertThat(admit(interactive, capped, 1)).isInstanceOf(Decision.Admit.class);
    assertThat(admit(interactive, capped, 1)).isInstanceOf(Decision.Admit.class);
    Decision.Reject r = (Decision.Reject) admit(interactive, capped, 1);
    assertThat(r.reason()).isEqualTo(Reason.TENANT_CONCURRENCY);
    assertThat(r.status()).isEqualTo(429);
    assertThat(r.retryAfterSeconds()).isGreaterThanOrEqualTo(1);
    // other tenants are unaffected
    assertThat(admit(interactive, tenant("other", 2), 1)).isInstanceOf(Decision.Admit.class);
  }

  @Test
  void tryAdmit_poolRequestCap_rejectsPoolSaturated() {
    PoolPolicy capped = pool(1000, 1);
    AdmissionController c =
        new AdmissionController(
            List.of(capped),
            List.of(interactive),
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            () -> 0.5);
    assertThat(c.decide(request(capped, interactive, acme, 1, time.nanos()), Ask.now(time.nanos())))
        .isInstanceOf(Decision.Admit.class);
    Decision.Reject r =
        (Decision.Reject)
            c.decide(request(capped, interactive, acme, 1, time.nanos()), Ask.now(time.nanos()));
    assertThat(r.reason()).isEqualTo(Reason.POOL_SATURATED);
  }

  @Test
  void tryAdmit_requestLargerThanPool_isAccountedAsWholePool() {
    ClassPolicy all = cls("all", 0, 1.0, 0.0, true);
    AdmissionController c =
        new AdmissionController(
            List.of(pool),
            List.of(all),
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            () -> 0.5);
    Decision d = c.decide(request(pool, all, acme, 50_000, time.nanos()), Ask.now(time.nanos()));
    assertThat(d).isInstanceOf(Decision.Admit.class);
    assertThat(((Decision.Admit) d).permit().workUnits()).isEqualTo(1000);
  }

  @Test
  void release_twice_releasesOnce() {
    Permit p = ((Decision.Admit) admit(interactive, acme, 300)).permit();
    assertThat(p.release(Outcome.COMPLETED, time.nanos())).isTrue();
    assertThat(p.release(Outcome.CANCELLED, time.nanos())).isFalse();
    assertThat(snapshot().workInFlight()).isZero();
    assertThat(snapshot().tenantsInFlight()).isZero();
    assertThat(released).containsExactly(Outcome.COMPLETED);
  }

  @Test
  void retryAfter_followsRecentCompletionRate() {
    // fill batch's borrowable room, then complete 400 units/s for a while
    for (int i = 0; i < 30; i++) {
      Permit p = ((Decision.Admit) admit(batch, acme, 400)).permit();
      time.advance(Duration.ofSeconds(1));
      p.release(Outcome.COMPLETED, time.nanos());
    }
    assertThat(admit(batch, acme, 400)).isInstanceOf(Decision.Admit.class);
    Decision.Reject r = (Decision.Reject) admit(batch, acme, 400);
    // 400 units over ~400 units/s (decayed average of the last 10 s) ≈ 1–2 s
    assertThat(r.retryAfterSeconds()).isBetween(1L, 3L);
    assertThat(snapshot().completedWorkPerSecond()).isBetween(200.0, 450.0);
  }

  @Test
  void retryAfter_withoutHistory_isPoolMinimum() {
    admit(batch, acme, 400);
    Decision.Reject r = (Decision.Reject) admit(batch, acme, 10);
    assertThat(r.retryAfterSeconds()).isEqualTo(1);
  }

  @Test
  void cancelledPermits_doNotCountAsCompletions() {
    Permit p = ((Decision.Admit) admit(batch, acme, 400)).permit();
    time.advance(Duration.ofSeconds(1));
    p.release(Outcome.CANCELLED, time.nanos());
    assertThat(snapshot().completedWorkPerSecond()).isZero();
  }

  @Test
  void concurrentAdmitAndRelease_neverExceedCapacityAndReturnToZero() throws Exception {
    int threads = 8;
    ExecutorService pool8 = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    AtomicInteger violations = new AtomicInteger();
    for (int t = 0; t < threads; t++) {
      int id = t;
      pool8.submit(
          () -> {
            start.await();
            for (int i = 0; i < 20_000; i++) {
              ClassPolicy c = (i + id) % 2 == 0 ? interactive : batch;
              Decision d = admit(c, tenant("t" + id, 0), 1 + (i % 50));
              if (snapshot().workInFlight() > 1000) {
                violations.incrementAndGet();
              }
              if (d instanceof Decision.Admit a) {
                a.permit().release(Outcome.COMPLETED, time.nanos());
              }
            }
            return null;
          });
    }
    start.countDown();
    pool8.shutdown();
    assertThat(pool8.awaitTermination(60, TimeUnit.SECONDS)).isTrue();
    assertThat(violations).hasValue(0);
    assertThat(snapshot().workInFlight()).isZero();
    assertThat(snapshot().requestsInFlight()).isZero();
    assertThat(snapshot().tenantsInFlight()).isZero();
  }

  @Test
  void pool_foundByAnEqualNameAsByItsOwn_amongMorePoolsThanTheFewFoundByIdentity() {
    List<PoolPolicy> many = new ArrayList<>();
    for (int i = 0; i < 7; i++) {
      many.add(PoolPolicy.builder("pool-" + i, 1000).build());
    }
    AdmissionController c =
        new AdmissionController(
            many,
            List.of(interactive),
            Duration.ofSeconds(10),
            PoolState.ReleaseListener.NONE,
            () -> 0.5);
    for (PoolPolicy p : many) {
      PoolState own = c.pool(p.name());
      assertThat(own).isNotNull();
      assertThat(own.policy().name()).isEqualTo(p.name());
      // another string with the same characters (an older snapshot's, a header's): the same pool
      assertThat(c.pool(new String(p.name().toCharArray()))).isSameAs(own);
      Decision d = c.decide(request(p, interactive, acme, 10, time.nanos()), Ask.now(time.nanos()));
      assertThat(((Decision.Admit) d).permit().pool()).isSameAs(own);
    }
    assertThat(c.pool("pool-7")).isNull();
    assertThat(c.pool(new String("p"))).isNull();
    // reconfigured without some: those are gone, by either string
    c.reconfigure(many.subList(2, 7), List.of(interactive));
    assertThat(c.pool(many.get(0).name())).isNull();
    assertThat(c.pool(new String(many.get(1).name().toCharArray()))).isNull();
    assertThat(c.pool(many.get(2).name())).isNotNull();
  }
}
