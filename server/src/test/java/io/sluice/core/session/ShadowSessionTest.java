package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.PoolState;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryStore;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Shadow mode ({@link Subject#shadow}) driven through {@link AdmissionSession} alone, on {@link
 * OneSlotPool} (one request slot, queue-hold on): nothing is refused or held, a request that would
 * be refused or queued runs without a permit, the ledger holds exactly what enforcement would have
 * admitted at once, and a would-be refusal charges its tenant no tokens.
 */
class ShadowSessionTest {
  private static final long T0 = 1_800_000_000_000L;
  private static final long HOLD = Duration.ofSeconds(5).toNanos();

  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(T0), ZoneOffset.UTC);
  private final TenantQuotas quotas =
      new TenantQuotas(
          new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
          "test_",
          TenantQuotas.FailureMode.OPEN);
  private final AdmissionSessionTest.ManualTimer timer = new AdmissionSessionTest.ManualTimer();
  private final List<SessionEvent> events = new ArrayList<>();
  private final AdmissionController controller = OneSlotPool.controller();
  private final Sessions sessions =
      OneSlotPool.sessions(controller, quotas, ticker, clock, timer, events::add);

  private static Tenant tenant(long rpm, long outputTpm) {
    return new Tenant("acme", new TierPolicy("pro", 1, 0, rpm, 0, outputTpm));
  }

  private final Tenant unlimited = tenant(0, 0);

  private Subject subject(Tenant t, long maxHold, boolean shadow) {
    long now = ticker.nanos();
    return new Subject(
        "chat",
        OneSlotPool.POOL,
        OneSlotPool.INTERACTIVE,
        RequestFormat.OPENAI_CHAT,
        t,
        now,
        now + Duration.ofSeconds(30).toNanos(),
        null,
        maxHold,
        shadow,
        0,
        null,
        io.sluice.core.session.Signals.NONE);
  }

  /** A request without a body (costs its output reserve, 100 tokens), through every step. */
  private AdmissionSession start(
      AdmissionSessionTest.Front f, Tenant t, long maxHold, boolean shadow) {
    AdmissionSession s =
        sessions.open(subject(t, maxHold, shadow), f, Runnable::run, SessionSteps.NONE);
    long now = ticker.nanos();
    s.begin(true, true, 0, now);
    return s;
  }

  private PoolState.Snapshot poolNow() {
    return controller.pool("gpu").snapshot(ticker.nanos());
  }

  private List<SessionEvent.Shadowed> shadowed() {
    return events.stream()
        .filter(SessionEvent.Shadowed.class::isInstance)
        .map(SessionEvent.Shadowed.class::cast)
        .toList();
  }

  private long released() {
    return events.stream().filter(SessionEvent.Released.class::isInstance).count();
  }

  @Test
  void wouldQueue_isAdmittedAtOnceWithoutAPermit_andNothingIsQueuedOrTimed() {
    AdmissionSessionTest.Front first = new AdmissionSessionTest.Front();
    AdmissionSession a = start(first, unlimited, HOLD, true);
    AdmissionSessionTest.Front second = new AdmissionSessionTest.Front();
    AdmissionSession b = start(second, unlimited, HOLD, true);

    assertThat(first.calls).containsExactly("admitted(headers)");
    assertThat(a.facts().run().permit()).isTrue();
    assertThat(a.running().would()).isNull(); // enforcement admits it at once too
    assertThat(second.calls).containsExactly("admitted(headers)"); // never "held"
    assertThat(b.facts().run().permit()).isFalse();
    assertThat(b.running().runs()).isTrue();
    assertThat((b.phase() == AdmissionSession.Phase.QUEUED)).isFalse();
    assertThat(b.running().would()).isEqualTo("queue");
    assertThat(b.running().wouldReason()).isEqualTo(Reason.POOL_SATURATED);
    assertThat(timer.tasks).isEmpty(); // no expiry armed
    assertThat(controller.pool("gpu").queueDepth("interactive")).isZero();
    assertThat(poolNow().requestsInFlight()).isEqualTo(1); // the ledger: what enforcement runs
    assertThat(shadowed()).singleElement().satisfies(e -> assertThat(e.would()).isEqualTo("queue"));
    assertThat(events.stream().filter(SessionEvent.Queued.class::isInstance)).isEmpty();

    // both end once, whatever the order and however often the front end calls
    assertThat(b.release(Outcome.COMPLETED)).isTrue();
    assertThat(poolNow().requestsInFlight()).isEqualTo(1);
    assertThat(b.release(Outcome.COMPLETED)).isFalse();
    b.end(Outcome.CANCELLED);
    b.releaseQuietly(Outcome.ERROR);
    assertThat(a.release(Outcome.COMPLETED)).isTrue();
    a.end(Outcome.CANCELLED);
    assertThat(poolNow().requestsInFlight()).isZero();
    assertThat(poolNow().workInFlight()).isZero();
    assertThat(released()).isEqualTo(2);
  }

  @Test
  void wouldReject_withoutQueueHold_isAdmittedAndCounted_nothingRefused() {
    AdmissionSession a = start(new AdmissionSessionTest.Front(), unlimited, 0, true);
    List<AdmissionSession> passed = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      AdmissionSessionTest.Front f = new AdmissionSessionTest.Front();
      passed.add(start(f, unlimited, 0, true));
      assertThat(f.calls).containsExactly("admitted(headers)");
    }
    assertThat(passed).allSatisfy(s -> assertThat(s.facts().run().permit()).isFalse());
    assertThat(shadowed())
        .hasSize(3)
        .allSatisfy(
            e -> {
              assertThat(e.would()).isEqualTo("reject");
              assertThat(e.reason()).isEqualTo(Reason.POOL_SATURATED);
              assertThat(e.status()).isEqualTo(503);
            });
    assertThat(events.stream().filter(SessionEvent.Refused.class::isInstance)).isEmpty();
    assertThat(events.stream().filter(SessionEvent.Admitted.class::isInstance)).hasSize(4);
    assertThat(poolNow().requestsInFlight()).isEqualTo(1);
    passed.forEach(s -> s.end(Outcome.CANCELLED)); // Envoy's reset: each ends once
    a.end(Outcome.CANCELLED);
    assertThat(released()).isEqualTo(4);
    assertThat(poolNow().requestsInFlight()).isZero();
  }

  @Test
  void enforced_theSameArrivals_areRefusedAndHeld() {
    AdmissionSessionTest.Front a = new AdmissionSessionTest.Front();
    start(a, unlimited, 0, false);
    AdmissionSessionTest.Front b = new AdmissionSessionTest.Front();
    start(b, unlimited, 0, false);
    AdmissionSessionTest.Front c = new AdmissionSessionTest.Front();
    start(c, unlimited, HOLD, false);
    assertThat(a.calls).containsExactly("admitted(headers)");
    assertThat(b.calls).containsExactly("refused");
    assertThat(b.refusedWith).isEqualTo(Reason.POOL_SATURATED);
    assertThat(c.calls).containsExactly("held");
    assertThat(shadowed()).isEmpty();
  }

  @Test
  void wouldRejectedTokens_areRefunded_wouldQueuedTokens_areKept() {
    // 250 output tokens a minute; each request reserves 100 (its output reserve)
    Tenant t = tenant(0, 250);
    AdmissionSession a = start(new AdmissionSessionTest.Front(), t, 0, true); // 100 reserved
    // would be refused by the pool: its 100 are given back (enforcement charges no refusal)
    for (int i = 0; i < 3; i++) {
      start(new AdmissionSessionTest.Front(), t, 0, true);
    }
    assertThat(shadowed())
        .extracting(SessionEvent.Shadowed::reason)
        .containsOnly(Reason.POOL_SATURATED);
    // would be queued: it keeps its 100 (200 used), as a queued request that runs does
    AdmissionSession q = start(new AdmissionSessionTest.Front(), t, HOLD, true);
    assertThat(q.running().would()).isEqualTo("queue");
    // 50 left: the next would be refused for the tenant's tokens, before the pool is asked
    AdmissionSession r = start(new AdmissionSessionTest.Front(), t, HOLD, true);
    assertThat(r.running().would()).isEqualTo("reject");
    assertThat(r.running().wouldReason()).isEqualTo(Reason.TENANT_TOKENS);
    assertThat(r.facts().would().status()).isEqualTo(429);
    assertThat(r.running().runs()).isTrue();
    assertThat(poolNow().requestsInFlight()).isEqualTo(1);
    a.end(Outcome.CANCELLED);
    q.end(Outcome.CANCELLED);
    r.end(Outcome.CANCELLED);
    assertThat(poolNow().requestsInFlight()).isZero();
  }

  @Test
  void wouldRejectTenantRate_beforeTheEstimate_isAdmittedWithoutEstimate() {
    Tenant t = tenant(1, 0); // one request a minute
    start(new AdmissionSessionTest.Front(), t, 0, true).end(Outcome.COMPLETED);
    AdmissionSessionTest.Front f = new AdmissionSessionTest.Front();
    AdmissionSession s = start(f, t, 0, true);
    assertThat(f.calls).containsExactly("admitted(headers)");
    assertThat(s.running().wouldReason()).isEqualTo(Reason.TENANT_RATE);
    assertThat(s.estimate()).isNull(); // enforcement stops at the rate check: so does shadow
    assertThat(poolNow().requestsInFlight()).isZero();
    assertThat(s.release(Outcome.COMPLETED)).isTrue();
    assertThat(s.release(Outcome.COMPLETED)).isFalse();
  }

  @Test
  void frontEndChecks_unknownRouteAndShuttingDown_stayEnforced_othersAreShadowed() {
    AdmissionSessionTest.Front route = new AdmissionSessionTest.Front();
    sessions
        .open(subject(unlimited, 0, true), route, Runnable::run, SessionSteps.NONE)
        .refuse(Reason.UNKNOWN_ROUTE, 404, 0, "no route", false, ticker.nanos());
    AdmissionSessionTest.Front big = new AdmissionSessionTest.Front();
    AdmissionSession tooLarge =
        sessions.open(subject(unlimited, 0, true), big, Runnable::run, SessionSteps.NONE);
    tooLarge.refuse(Reason.BODY_TOO_LARGE, 413, 0, "too large", true, ticker.nanos());
    assertThat(route.calls).containsExactly("refused");
    assertThat(big.calls).containsExactly("admitted(body)");
    assertThat(tooLarge.running().wouldReason()).isEqualTo(Reason.BODY_TOO_LARGE);
    assertThat(tooLarge.facts().run().permit()).isFalse();
  }
}
