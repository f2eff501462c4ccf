package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.PoolState;
import io.sluice.core.admission.Reason;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryStore;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A request's admission driven through {@link AdmissionSession} alone: a fake ticker, a manual
 * timer, a direct serial context, an in-memory quota store; no gRPC, no threads, no sleeps. Each
 * test checks what the front end was told, the events in their order, and the pool's accounting.
 */
class AdmissionSessionTest {
  private static final long MS = 1_000_000L;
  private static final long T0 = 1_800_000_000_000L;

  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(T0), ZoneOffset.UTC);
  private final InMemoryStore store = new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT);
  private final TenantQuotas quotas =
      new TenantQuotas(store, "test_", TenantQuotas.FailureMode.OPEN);
  private final ManualTimer timer = new ManualTimer();
  private final List<SessionEvent> events = new ArrayList<>();

  private final PoolPolicy pool = OneSlotPool.POOL;
  private final ClassPolicy interactive = OneSlotPool.INTERACTIVE;
  private final AdmissionController controller = OneSlotPool.controller();
  private final Sessions sessions =
      OneSlotPool.sessions(controller, quotas, ticker, clock, timer, events::add);

  /** What the front end was told, in order. */
  static final class Front implements SessionFront {
    final List<String> calls = new ArrayList<>();
    Reason refusedWith;
    int refusedStatus;
    long refusedRetryAfter;

    @Override
    public void admitted(boolean atBody) {
      calls.add(atBody ? "admitted(body)" : "admitted(headers)");
    }

    @Override
    public void bodyWanted() {}

    @Override
    public void held(long holdMillis) {
      calls.add("held");
    }

    @Override
    public void refused(Reason reason, int status, long retryAfterSeconds, String message) {
      calls.add("refused");
      refusedWith = reason;
      refusedStatus = status;
      refusedRetryAfter = retryAfterSeconds;
    }

    @Override
    public void storeFailed(Throwable cause) {
      calls.add("storeFailed");
    }
  }

  /** Tasks scheduled by the sessions; the test fires the due ones. */
  static final class ManualTimer implements HoldTimer {
    final List<long[]> due = new ArrayList<>();
    final List<Runnable> tasks = new ArrayList<>();
    int cancelled;

    @Override
    public Handle schedule(long delayNanos, Runnable task) {
      tasks.add(task);
      return () -> cancelled++;
    }

    void fireAll() {
      List<Runnable> now = new ArrayList<>(tasks);
      tasks.clear();
      now.forEach(Runnable::run);
    }
  }

  private Tenant tenant(long rpm, long itpm, long otpm) {
    return new Tenant("acme", new TierPolicy("pro", 1, 0, rpm, itpm, otpm));
  }

  private AdmissionSession open(Front front, Tenant tenant) {
    return open(front, tenant, Duration.ofSeconds(5).toNanos());
  }

  private AdmissionSession open(Front front, Tenant tenant, long maxHoldNanos) {
    long now = ticker.nanos();
    Subject s = OneSlotPool.chat(tenant, now, null, maxHoldNanos);
    return sessions.open(s, front, Runnable::run, SessionSteps.NONE);
  }

  /** The whole request path a front end takes for a request without a body. */
  private AdmissionSession start(Front front, Tenant tenant) {
    AdmissionSession s = open(front, tenant);
    long now = ticker.nanos();
    s.begin(true, true, 0, now);
    return s;
  }

  private PoolState.Snapshot poolNow() {
    return controller.pool("gpu").snapshot(ticker.nanos());
  }

  private <T extends SessionEvent> List<T> events(Class<T> type) {
    return events.stream().filter(type::isInstance).map(type::cast).toList();
  }

  private List<String> eventNames(AdmissionSession of) {
    return events.stream()
        .filter(e -> subjectOf(e) == of.subject())
        .map(e -> e.getClass().getSimpleName())
        .toList();
  }

  private static Subject subjectOf(SessionEvent e) {
    if (e instanceof SessionEvent.Admitted x) {
      return x.facts().subject();
    } else if (e instanceof SessionEvent.Queued x) {
      return x.facts().subject();
    } else if (e instanceof SessionEvent.Dequeued x) {
      return x.subject();
    } else if (e instanceof SessionEvent.Released x) {
      return x.facts().subject();
    } else if (e instanceof SessionEvent.Refused x) {
      return x.facts().subject();
    } else if (e instanceof SessionEvent.UpstreamResponded x) {
      return x.subject();
    }
    return null;
  }

  private List<String> eventNames() {
    return events.stream().map(e -> e.getClass().getSimpleName()).toList();
  }

  private final Tenant unlimited = tenant(0, 0, 0);

  @Test
  void admit_thenRelease_releasesOnce() {
    Front f = new Front();
    AdmissionSession s = start(f, unlimited);

    assertThat(f.calls).containsExactly("admitted(headers)");
    assertThat(s.decided()).isTrue();
    assertThat(s.facts().run().permit()).isTrue();
    assertThat(poolNow().requestsInFlight()).isEqualTo(1);
    assertThat(s.workUnits()).isEqualTo(100); // no body: the output reserve only

    ticker.advance(Duration.ofMillis(250));
    assertThat(s.release(Outcome.COMPLETED)).isTrue();
    assertThat(poolNow().requestsInFlight()).isZero();
    assertThat(eventNames()).containsExactly("Admitted", "Released");
    SessionEvent.Released r = events(SessionEvent.Released.class).get(0);
    assertThat(r.outcome()).isEqualTo(Outcome.COMPLETED);
    assertThat(r.heldNanos()).isEqualTo(250 * MS);
  }

  @Test
  void release_isIdempotent_onEveryLaterPath() {
    Front f = new Front();
    AdmissionSession s = start(f, unlimited);
    assertThat(s.release(Outcome.COMPLETED)).isTrue();

    assertThat(s.release(Outcome.COMPLETED)).isFalse();
    s.end(Outcome.CANCELLED); // the reset that follows every response
    s.releaseQuietly(Outcome.ERROR);

    assertThat(events(SessionEvent.Released.class)).hasSize(1);
    assertThat(poolNow().requestsInFlight()).isZero();
    assertThat(poolNow().workInFlight()).isZero();
    // the capacity it held is whole again: the next request runs at once
    Front next = new Front();
    start(next, unlimited);
    assertThat(next.calls).containsExactly("admitted(headers)");
  }

  @Test
  void queued_thenAdmittedByTheWaiter_whenCapacityFrees() {
    Front first = new Front();
    AdmissionSession a = start(first, unlimited);
    Front second = new Front();
    AdmissionSession b = start(second, unlimited);

    assertThat(second.calls).containsExactly("held");
    assertThat((b.phase() == AdmissionSession.Phase.QUEUED)).isTrue();
    assertThat(b.facts().decision().queuePosition()).isEqualTo(1);
    assertThat(timer.tasks).hasSize(1); // the expiry is armed

    ticker.advance(Duration.ofMillis(300));
    a.release(Outcome.COMPLETED);

    assertThat(second.calls).containsExactly("held", "admitted(headers)");
    assertThat((b.phase() == AdmissionSession.Phase.QUEUED)).isFalse();
    assertThat(b.running().queueWaitNanos()).isEqualTo(300 * MS);
    assertThat(timer.cancelled).isEqualTo(1);
    // in step order per session (across sessions, the waiter may run inside the other's release)
    assertThat(eventNames(a)).containsExactly("Admitted", "Released");
    assertThat(eventNames(b)).containsExactly("Queued", "Dequeued", "Admitted");
    assertThat(events(SessionEvent.Dequeued.class).get(0).outcome()).isEqualTo("admitted");
    assertThat(poolNow().requestsInFlight()).isEqualTo(1);
    assertThat(b.release(Outcome.COMPLETED)).isTrue();
    assertThat(poolNow().requestsInFlight()).isZero();
  }

  @Test
  void queued_thenExpired_isRefusedWithQueueTimeout() {
    start(new Front(), unlimited); // holds the only slot
    Front second = new Front();
    AdmissionSession b = start(second, unlimited);
    assertThat(second.calls).containsExactly("held");

    ticker.advance(Duration.ofMillis(2_100)); // past maxQueueWait
    timer.fireAll();

    assertThat(second.calls).containsExactly("held", "refused");
    assertThat(second.refusedWith).isEqualTo(Reason.QUEUE_TIMEOUT);
    assertThat(second.refusedStatus).isEqualTo(503);
    assertThat(second.refusedRetryAfter).isGreaterThanOrEqualTo(1);
    assertThat(b.decided()).isTrue();
    assertThat(b.facts().run().permit()).isFalse();
    assertThat(events(SessionEvent.Dequeued.class).get(0).outcome()).isEqualTo("expired");
    SessionEvent.Refused r = events(SessionEvent.Refused.class).get(0);
    assertThat(r.reason()).isEqualTo(Reason.QUEUE_TIMEOUT);
    assertThat(controller.pool("gpu").queueDepth("interactive")).isZero();
  }

  @Test
  void cancelWhileQueued_leavesTheQueue_andIsNeverAdmittedLater() {
    Front first = new Front();
    AdmissionSession a = start(first, unlimited);
    Front second = new Front();
    AdmissionSession b = start(second, unlimited);

    ticker.advance(Duration.ofMillis(40));
    b.end(Outcome.CANCELLED);

    assertThat(controller.pool("gpu").queueDepth("interactive")).isZero();
    assertThat(timer.cancelled).isEqualTo(1);
    SessionEvent.Dequeued d = events(SessionEvent.Dequeued.class).get(0);
    assertThat(d.outcome()).isEqualTo("cancelled");
    assertThat(d.waitedNanos()).isEqualTo(40 * MS);

    a.release(Outcome.COMPLETED);
    assertThat(second.calls).containsExactly("held"); // nothing after the cancel
    assertThat(poolNow().requestsInFlight()).isZero();
  }

  @Test
  void cancelWhileQueued_refundsTheTokenReservation() {
    // output budget 200 per minute: two reservations of 100 fit, nothing more
    Tenant t = tenant(0, 0, 200);
    AdmissionSession a = start(new Front(), t); // reserves 100 and holds the only slot
    Front second = new Front();
    AdmissionSession b = start(second, t); // reserves 100, queued
    assertThat(second.calls).containsExactly("held");
    b.end(Outcome.CANCELLED); // the client gave up: its 100 tokens go back

    assertThat(quotas.reserveTokens(t, 0, 100, T0).toCompletableFuture().join().allowed())
        .as("the cancelled request's reservation was refunded")
        .isTrue();
    assertThat(quotas.reserveTokens(t, 0, 1, T0).toCompletableFuture().join().allowed())
        .as("the running request's reservation stands")
        .isFalse();
    a.release(Outcome.COMPLETED);
  }

  @Test
  void refusedAtOnce_refundsTheTokenReservation() {
    Tenant t = tenant(0, 0, 200);
    start(new Front(), t); // reserves 100 and holds the only slot
    Front second = new Front();
    AdmissionSession b = open(second, t, 0); // cannot be held: refused at once
    b.begin(true, true, 0, ticker.nanos());

    assertThat(second.calls).containsExactly("refused");
    assertThat(second.refusedStatus).isEqualTo(503);
    assertThat(events(SessionEvent.Refused.class)).hasSize(1);
    assertThat(quotas.reserveTokens(t, 0, 100, T0).toCompletableFuture().join().allowed())
        .as("the refused request's reservation was refunded")
        .isTrue();
    assertThat(quotas.reserveTokens(t, 0, 1, T0).toCompletableFuture().join().allowed()).isFalse();
  }

  @Test
  void refusedByThePool_refundsTheTokenReservation() {
    Tenant t = tenant(0, 0, 200);
    start(new Front(), t); // reserves 100 and holds the only slot
    Front second = new Front();
    AdmissionSession b = start(second, t); // reserves 100, queued
    ticker.advance(Duration.ofMillis(2_100));
    timer.fireAll(); // refused (queue timeout): the reservation goes back

    assertThat(second.refusedWith).isEqualTo(Reason.QUEUE_TIMEOUT);
    assertThat(b.facts().run().permit()).isFalse();
    assertThat(quotas.reserveTokens(t, 0, 100, T0).toCompletableFuture().join().allowed()).isTrue();
    assertThat(quotas.reserveTokens(t, 0, 1, T0).toCompletableFuture().join().allowed()).isFalse();
  }

  @Test
  void tenantRateToken_refusesOnceTheBudgetIsUsed() {
    Tenant t = tenant(1, 0, 0); // one request per minute
    AdmissionSession a = start(new Front(), t);
    a.release(Outcome.COMPLETED);
    Front second = new Front();
    start(second, t);

    assertThat(second.calls).containsExactly("refused");
    assertThat(second.refusedWith).isEqualTo(Reason.TENANT_RATE);
    assertThat(second.refusedStatus).isEqualTo(429);
    assertThat(second.refusedRetryAfter).isBetween(1L, 60L);
    assertThat(events(SessionEvent.Refused.class)).hasSize(1);
    assertThat(poolNow().requestsInFlight()).isZero();
  }

  @Test
  void release_reconcilesTheReservationWithReportedUsage() {
    Tenant t = tenant(0, 10_000, 10_000);
    Front f = new Front();
    AdmissionSession s = start(f, t); // reserves 0 input, 100 output
    s.running().headers(200, "application/json", true);
    byte[] body =
        "{\"choices\":[{\"message\":{\"content\":\"ok\"}}],\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":40}}"
            .getBytes(StandardCharsets.UTF_8);
    s.running().body(body, 0, body.length, true);

    assertThat(s.release(Outcome.COMPLETED)).isTrue();

    SessionEvent.Released r = events(SessionEvent.Released.class).get(0);
    assertThat(r.usage().reported()).isTrue();
    assertThat(r.usage().outputTokens()).isEqualTo(40);
    assertThat(events(SessionEvent.UpstreamResponded.class).get(0).status()).isEqualTo(200);
    assertThat(events(SessionEvent.Reconciled.class))
        .containsExactly(new SessionEvent.Reconciled(60, 0)); // 100 reserved, 40 used
    assertThat(s.facts().end().upstreamStatus()).isEqualTo(200);
  }

  @Test
  void bodyEstimate_decidesAtTheBody() {
    Front f = new Front();
    AdmissionSession s = open(f, unlimited);
    byte[] body =
        "{\"model\":\"m\",\"max_tokens\":50,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
            .getBytes(StandardCharsets.UTF_8);
    s.begin(false, false, -1, ticker.nanos());
    s.decideWithBody(body, 0, body.length, ticker.nanos());

    assertThat(f.calls).containsExactly("admitted(body)");
    assertThat(s.facts().phase()).isEqualTo("body");
    assertThat(s.estimate().outputReserveTokens()).isEqualTo(50);
    assertThat(s.estimate().inputTokens()).isPositive();
    s.release(Outcome.COMPLETED);
  }

  @Test
  void phase_followsTheRequest_andDecidedOutlivesTheEnd() {
    Front f = new Front();
    AdmissionSession a = open(f, unlimited);
    assertThat(a.phase()).isEqualTo(AdmissionSession.Phase.CHECKS);
    a.begin(true, true, 0, ticker.nanos());
    assertThat(a.phase()).isEqualTo(AdmissionSession.Phase.RUNNING);

    Front g = new Front();
    AdmissionSession b = start(g, unlimited);
    assertThat(b.phase()).isEqualTo(AdmissionSession.Phase.QUEUED);
    assertThat((b.phase() == AdmissionSession.Phase.QUEUED)).isTrue();
    assertThat(b.decided()).isFalse();
    a.release(Outcome.COMPLETED); // b is admitted from the queue
    assertThat(g.calls).containsExactly("held", "admitted(headers)");
    assertThat(b.phase()).isEqualTo(AdmissionSession.Phase.RUNNING);
    b.end(Outcome.COMPLETED);
    assertThat(b.phase()).isEqualTo(AdmissionSession.Phase.ENDED);
    assertThat(b.decided()).as("admitted, then ended").isTrue();

    Front h = new Front();
    AdmissionSession c = open(h, tenant(1, 0, 0));
    c.begin(true, true, 0, ticker.nanos());
    Front i = new Front();
    AdmissionSession d = open(i, tenant(1, 0, 0));
    d.begin(false, false, -1, ticker.nanos()); // refused at the headers: the body is not asked for
    assertThat(i.calls).containsExactly("refused");
    assertThat(i.refusedWith).isEqualTo(Reason.TENANT_RATE);
    assertThat(d.phase()).isEqualTo(AdmissionSession.Phase.REFUSED);
    d.end(Outcome.CANCELLED);
    assertThat(d.decided()).as("refused, then ended").isTrue();
    c.release(Outcome.COMPLETED);

    AdmissionSession e = open(new Front(), unlimited);
    e.end(Outcome.CANCELLED);
    assertThat(e.phase()).isEqualTo(AdmissionSession.Phase.ENDED);
    assertThat(e.decided()).as("ended before any decision").isFalse();
  }
}
