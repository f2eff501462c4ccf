package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.EstimatorSettings;
import io.sluice.core.estimate.TokenCountCache;
import io.sluice.core.estimate.TokenEstimator;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.quota.TenantSlots;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryStore;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A capped tenant's slot across replicas ({@link TenantCaps}) through {@link AdmissionSession}: a
 * fake {@link TenantSlots} counts every acquire and release per tenant, and after each scenario the
 * slots granted and given back balance (never a release of a slot not held), whatever path the
 * request took.
 */
class AdmissionSessionTenantSlotTest {
  private static final long T0 = 1_800_000_000_000L;

  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(T0), ZoneOffset.UTC);
  private final AdmissionSessionTest.ManualTimer timer = new AdmissionSessionTest.ManualTimer();
  private final List<SessionEvent> events = new ArrayList<>();
  private final FakeSlots slots = new FakeSlots();
  private final TenantCaps caps = new TenantCaps(slots, "test_", "me", () -> 10_000);

  private final PoolPolicy pool = OneSlotPool.POOL;
  private final ClassPolicy interactive = OneSlotPool.INTERACTIVE;
  private final AdmissionController controller = OneSlotPool.controller();

  private Sessions sessions(TenantQuotas.FailureMode mode, TenantCaps c) {
    return Sessions.builder(
            controller,
            new TenantQuotas(new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT), "test_", mode),
            new TokenEstimator(
                EstimatorSettings.defaults(), new TokenCountCache(1 << 16, 32), null),
            ticker,
            clock,
            timer,
            events::add)
        .defaultInputTokens(500)
        .caps(c)
        .build();
  }

  private Sessions sessions = sessions(TenantQuotas.FailureMode.OPEN, caps);

  /** Counts per tenant; answers at once, or holds the answer until the test completes it. */
  static final class FakeSlots implements TenantSlots {
    final Map<String, Integer> held = new HashMap<>();
    int cap = -1; // >= 0: the store's own view (the other replicas' slots), else the tier's cap
    int acquires;
    int grants;
    int releases;
    int releasesOfNothing;
    int renewals;
    boolean fail;
    boolean defer;
    final List<Runnable> deferred = new ArrayList<>();

    @Override
    public CompletionStage<SlotAnswer> acquire(
        String namespace, String pool, String tenant, String replica, int cap, long ttl) {
      acquires++;
      if (fail) {
        return CompletableFuture.failedFuture(new IllegalStateException("store down"));
      }
      CompletableFuture<SlotAnswer> f = new CompletableFuture<>();
      Runnable answer =
          () -> {
            int total = held.getOrDefault(tenant, 0);
            if (total < (this.cap >= 0 ? this.cap : cap)) {
              held.merge(tenant, 1, Integer::sum);
              grants++;
              f.complete(new SlotAnswer(true, total));
            } else {
              f.complete(new SlotAnswer(false, total));
            }
          };
      if (defer) {
        deferred.add(answer);
      } else {
        answer.run();
      }
      return f;
    }

    @Override
    public CompletionStage<Void> release(
        String namespace, String pool, String tenant, String replica, long ttl) {
      releases++;
      int n = held.getOrDefault(tenant, 0);
      if (n <= 0) {
        releasesOfNothing++;
      } else {
        held.put(tenant, n - 1);
      }
      return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletionStage<Void> renew(
        String namespace, String pool, String replica, Map<String, Integer> h, long ttl) {
      renewals++;
      return CompletableFuture.completedFuture(null);
    }

    void answerDeferred() {
      List<Runnable> now = new ArrayList<>(deferred);
      deferred.clear();
      now.forEach(Runnable::run);
    }
  }

  /** Every scenario ends balanced: each slot granted went back exactly once. */
  @AfterEach
  void balanced() {
    assertThat(slots.releasesOfNothing).as("releases of a slot not held").isZero();
    assertThat(slots.releases).as("one release per grant").isEqualTo(slots.grants);
    assertThat(slots.held.values()).allMatch(n -> n == 0);
    assertThat(caps.held()).as("this replica's count").isZero();
    assertThat(caps.tenants()).as("the set renewed is empty").isZero();
  }

  private static Tenant capped(String id, int maxInFlight) {
    return new Tenant(id, new TierPolicy("pro", 1, maxInFlight, 0, 0, 0));
  }

  private final Tenant acme = capped("acme", 5);

  private AdmissionSession open(AdmissionSessionTest.Front front, Tenant tenant, long maxHold) {
    long now = ticker.nanos();
    Subject s = OneSlotPool.chat(tenant, now, null, maxHold);
    return sessions.open(s, front, Runnable::run, SessionSteps.NONE);
  }

  private AdmissionSession start(AdmissionSessionTest.Front front, Tenant tenant) {
    return start(front, tenant, Duration.ofSeconds(5).toNanos());
  }

  private AdmissionSession start(AdmissionSessionTest.Front front, Tenant tenant, long maxHold) {
    AdmissionSession s = open(front, tenant, maxHold);
    long now = ticker.nanos();
    s.begin(true, true, 0, now);
    return s;
  }

  private List<String> slotResults() {
    return events.stream()
        .filter(SessionEvent.TenantSlot.class::isInstance)
        .map(e -> ((SessionEvent.TenantSlot) e).result())
        .toList();
  }

  @Test
  void granted_admitted_completed_releasesOnce() {
    var f = new AdmissionSessionTest.Front();
    AdmissionSession s = start(f, acme);
    assertThat(f.calls).containsExactly("admitted(headers)");
    assertThat(s.holds(TenantSlotCheck.Slot.class)).isTrue();
    assertThat(slots.held).containsEntry("acme", 1);
    assertThat(caps.held("gpu", "acme")).isEqualTo(1);
    assertThat(caps.renew().toCompletableFuture().join()).isNull();
    assertThat(slots.renewals).as("the held tenant is renewed").isEqualTo(1);

    assertThat(s.release(Outcome.COMPLETED)).isTrue();
    assertThat(s.holds(TenantSlotCheck.Slot.class)).isFalse();
    // every later end path is a no-op for the slot
    s.release(Outcome.COMPLETED);
    s.end(Outcome.CANCELLED);
    s.releaseQuietly(Outcome.ERROR);
    assertThat(slots.releases).isEqualTo(1);
    assertThat(slotResults()).containsExactly("granted");
    slots.renewals = 0;
    caps.renew().toCompletableFuture().join();
    assertThat(slots.renewals).as("nothing held: nothing renewed").isZero();
  }

  @Test
  void deniedByTheStore_isRefused429TenantConcurrency_acrossReplicas() {
    slots.cap = 0; // the other replicas hold the tenant's whole cap
    var f = new AdmissionSessionTest.Front();
    AdmissionSession s = start(f, acme);
    assertThat(f.calls).containsExactly("refused");
    assertThat(f.refusedWith).isEqualTo(Reason.TENANT_CONCURRENCY);
    assertThat(f.refusedStatus).isEqualTo(429);
    assertThat(f.refusedRetryAfter).isGreaterThanOrEqualTo(1);
    assertThat(s.facts().run().permit()).isFalse();
    assertThat(controller.pool("gpu").snapshot(ticker.nanos()).requestsInFlight()).isZero();
    assertThat(slotResults()).containsExactly("denied");
    s.end(Outcome.CANCELLED);
    assertThat(slots.releases).isZero();
  }

  @Test
  void refusedByThePoolAfterTheGrant_givesTheSlotBack() {
    var first = new AdmissionSessionTest.Front();
    AdmissionSession a = start(first, capped("other", 0)); // holds the pool's only request slot
    var f = new AdmissionSessionTest.Front();
    AdmissionSession b = start(f, acme, 0); // cannot queue: refused by the pool
    assertThat(f.calls).containsExactly("refused");
    assertThat(f.refusedWith).isNotEqualTo(Reason.TENANT_CONCURRENCY);
    assertThat(slots.grants).isEqualTo(1);
    assertThat(slots.releases).as("given back at the refusal").isEqualTo(1);
    b.end(Outcome.CANCELLED);
    a.release(Outcome.COMPLETED);
  }

  @Test
  void queued_thenExpired_givesTheSlotBack() {
    AdmissionSession a = start(new AdmissionSessionTest.Front(), capped("other", 0));
    var f = new AdmissionSessionTest.Front();
    AdmissionSession b = start(f, acme);
    assertThat(f.calls).containsExactly("held");
    assertThat(b.holds(TenantSlotCheck.Slot.class)).as("a queued request holds its slot").isTrue();
    ticker.advance(Duration.ofMillis(2_100));
    timer.fireAll();
    assertThat(f.calls).containsExactly("held", "refused");
    assertThat(f.refusedWith).isEqualTo(Reason.QUEUE_TIMEOUT);
    assertThat(slots.releases).isEqualTo(1);
    b.end(Outcome.CANCELLED);
    a.release(Outcome.COMPLETED);
  }

  @Test
  void queued_thenAdmitted_thenCompleted_releasesOnce() {
    AdmissionSession a = start(new AdmissionSessionTest.Front(), acme);
    var f = new AdmissionSessionTest.Front();
    AdmissionSession b = start(f, acme);
    assertThat(slots.held).containsEntry("acme", 2);
    a.release(Outcome.COMPLETED);
    assertThat(f.calls).containsExactly("held", "admitted(headers)");
    assertThat(slots.held).containsEntry("acme", 1);
    b.release(Outcome.COMPLETED);
    b.end(Outcome.CANCELLED);
  }

  @Test
  void cancelWhileQueued_givesTheSlotBack_once() {
    AdmissionSession a = start(new AdmissionSessionTest.Front(), capped("other", 0));
    var f = new AdmissionSessionTest.Front();
    AdmissionSession b = start(f, acme);
    b.end(Outcome.CANCELLED);
    assertThat(slots.releases).isEqualTo(1);
    a.release(Outcome.COMPLETED); // the freed capacity does not admit the cancelled request
    assertThat(f.calls).containsExactly("held");
    b.end(Outcome.CANCELLED);
    b.releaseQuietly(Outcome.ERROR);
  }

  @Test
  void shutdownWhileQueued_givesTheSlotBack() {
    AdmissionSession a = start(new AdmissionSessionTest.Front(), capped("other", 0));
    var f = new AdmissionSessionTest.Front();
    start(f, acme);
    assertThat(controller.refuseAllQueued(ticker.nanos())).isEqualTo(1);
    assertThat(f.refusedWith).isEqualTo(Reason.SHUTTING_DOWN);
    assertThat(slots.releases).isEqualTo(1);
    a.end(Outcome.SHUTDOWN);
  }

  @Test
  void cancelWhileTheStoreAnswers_givesTheGrantBackWhenItComes() {
    slots.defer = true;
    var f = new AdmissionSessionTest.Front();
    AdmissionSession s = start(f, acme);
    assertThat(f.calls).isEmpty();
    s.end(Outcome.CANCELLED); // the client left with the acquire outstanding
    assertThat(caps.tenants()).as("the outstanding acquire is tracked").isEqualTo(1);
    slots.answerDeferred(); // granted after the cancel
    assertThat(slots.grants).isEqualTo(1);
    assertThat(slots.releases).as("given back at once").isEqualTo(1);
    assertThat(f.calls).as("the front end is told nothing").isEmpty();
    assertThat(s.facts().run().permit()).isFalse();
    assertThat(controller.pool("gpu").snapshot(ticker.nanos()).requestsInFlight()).isZero();
  }

  @Test
  void deferredGrant_thenAdmitted_thenError_releasesOnce() {
    slots.defer = true;
    var f = new AdmissionSessionTest.Front();
    AdmissionSession s = start(f, acme);
    slots.answerDeferred();
    assertThat(f.calls).containsExactly("admitted(headers)");
    s.end(Outcome.ERROR); // a stream failure after admission
    assertThat(slots.releases).isEqualTo(1);
    s.releaseQuietly(Outcome.ERROR);
  }

  @Test
  void releaseQuietly_asTheLastResort_givesTheSlotBack() {
    var f = new AdmissionSessionTest.Front();
    AdmissionSession s = start(f, acme);
    s.releaseQuietly(Outcome.ERROR); // the front end's cleanup failed part-way
    assertThat(slots.releases).isEqualTo(1);
    s.end(Outcome.ERROR);
  }

  @Test
  void storeFailure_failOpen_proceedsWithoutASlot_counted() {
    slots.fail = true;
    var f = new AdmissionSessionTest.Front();
    AdmissionSession s = start(f, acme);
    assertThat(f.calls).containsExactly("admitted(headers)");
    assertThat(s.holds(TenantSlotCheck.Slot.class)).isFalse();
    assertThat(slotResults()).containsExactly("store_failed");
    assertThat(events).contains(SessionEvent.QuotaStoreFailed.OPEN);
    s.release(Outcome.COMPLETED);
    assertThat(slots.releases).as("nothing to give back").isZero();
  }

  @Test
  void storeFailure_failClosed_refuses429() {
    sessions = sessions(TenantQuotas.FailureMode.CLOSED, caps);
    slots.fail = true;
    var f = new AdmissionSessionTest.Front();
    AdmissionSession s = start(f, acme);
    assertThat(f.calls).containsExactly("refused");
    assertThat(f.refusedWith).isEqualTo(Reason.TENANT_CONCURRENCY);
    assertThat(f.refusedStatus).isEqualTo(429);
    assertThat(events).contains(SessionEvent.QuotaStoreFailed.CLOSED);
    s.end(Outcome.CANCELLED);
  }

  @Test
  void uncappedTier_andAStoreInTheProcess_neverCallTheStore() {
    var f = new AdmissionSessionTest.Front();
    start(f, capped("free", 0)).release(Outcome.COMPLETED);
    sessions = sessions(TenantQuotas.FailureMode.OPEN, TenantCaps.none());
    var g = new AdmissionSessionTest.Front();
    start(g, acme).release(Outcome.COMPLETED);
    assertThat(f.calls).containsExactly("admitted(headers)");
    assertThat(g.calls).containsExactly("admitted(headers)");
    assertThat(slots.acquires).isZero();
  }

  @Test
  void theLocalCapStillHolds_belowTheStoresCap() {
    // the store would grant; this replica's own count (in flight + queued) refuses the third
    Tenant two = capped("acme", 2);
    AdmissionSession a = start(new AdmissionSessionTest.Front(), two);
    AdmissionSession b = start(new AdmissionSessionTest.Front(), two); // queued
    slots.cap = 100;
    var f = new AdmissionSessionTest.Front();
    start(f, two);
    assertThat(f.refusedWith).isEqualTo(Reason.TENANT_CONCURRENCY);
    assertThat(slots.held).containsEntry("acme", 2);
    a.release(Outcome.COMPLETED);
    b.release(Outcome.COMPLETED);
  }
}
