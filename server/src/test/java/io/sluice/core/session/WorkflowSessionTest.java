package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.PoolState;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.FanOutPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.quota.WorkflowBudget;
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
 * The workflow budget and fan-out work through {@link AdmissionSession}: enforced, a request over
 * the budget is refused {@code fanout_budget}; in shadow mode it is recorded and let through
 * without a place (as without a permit); every place comes back once.
 */
class WorkflowSessionTest {
  private static final long T0 = 1_800_000_000_000L;
  private static final PoolPolicy POOL = OneSlotPool.fanOutPool(new FanOutPolicy(7, 0, 0, 1000));

  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(T0), ZoneOffset.UTC);
  private final AdmissionSessionTest.ManualTimer timer = new AdmissionSessionTest.ManualTimer();
  private final List<SessionEvent> events = new ArrayList<>();
  private final AdmissionController controller =
      new AdmissionController(
          List.of(POOL),
          List.of(OneSlotPool.INTERACTIVE),
          Duration.ofSeconds(10),
          PoolState.ReleaseListener.NONE,
          Math::random);
  private final WorkflowBudget budget = new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS);
  private final Sessions sessions =
      OneSlotPool.sessionsBuilder(
              controller,
              new TenantQuotas(
                  new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
                  "test_",
                  TenantQuotas.FailureMode.OPEN),
              ticker,
              clock,
              timer,
              events::add)
          .workflows(budget)
          .build();
  private final Tenant tenant = new Tenant("acme", TierPolicy.defaults("pro"));

  private AdmissionSession start(
      AdmissionSessionTest.Front f, String workflow, int fanout, boolean shadow) {
    long now = ticker.nanos();
    Subject subject =
        new Subject(
            "chat",
            POOL,
            OneSlotPool.INTERACTIVE,
            RequestFormat.OPENAI_CHAT,
            tenant,
            now,
            now + Duration.ofSeconds(30).toNanos(),
            null,
            0,
            shadow,
            fanout,
            workflow,
            io.sluice.core.session.Signals.NONE);
    AdmissionSession s = sessions.open(subject, f, Runnable::run, SessionSteps.NONE);
    byte[] body =
        ("{\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                + "\"tools\":[{\"name\":\"a\"},{\"name\":\"b\"}]}")
            .getBytes(StandardCharsets.UTF_8);
    s.begin(false, false, -1, now);
    s.decideWithBody(body, 0, body.length, now);
    return s;
  }

  @Test
  void fanOutWork_isPartOfTheRequestsWork() {
    AdmissionSession plain = start(new AdmissionSessionTest.Front(), null, 0, false);
    AdmissionSession declared = start(new AdmissionSessionTest.Front(), null, 3, false);

    assertThat(plain.facts().estimate().fanOutWork()).isEqualTo(2 * 7);
    assertThat(declared.facts().estimate().fanOutWork()).isEqualTo(2 * 7 + 3 * 1000);
    assertThat(declared.workUnits() - plain.workUnits()).isEqualTo(3000);
    assertThat(controller.pool("gpu").snapshot(ticker.nanos()).workInFlight())
        .isEqualTo(plain.workUnits() + declared.workUnits());
  }

  @Test
  void enforced_overTheBudget_refusedFanoutBudget_andThePlaceComesBackOnce() {
    AdmissionSessionTest.Front f1 = new AdmissionSessionTest.Front();
    AdmissionSession a = start(f1, "run-1", 0, false);
    AdmissionSessionTest.Front f2 = new AdmissionSessionTest.Front();
    AdmissionSession b = start(f2, "run-1", 0, false);
    AdmissionSessionTest.Front f3 = new AdmissionSessionTest.Front();
    start(f3, "run-2", 0, false);

    assertThat(f1.calls).containsExactly("admitted(body)");
    assertThat(a.holds(WorkflowPlaceCheck.Place.class)).isTrue();
    assertThat(f2.calls).containsExactly("refused");
    assertThat(b.facts().decision().reason()).isEqualTo(Reason.FANOUT_BUDGET);
    assertThat(b.holds(WorkflowPlaceCheck.Place.class)).isFalse();
    assertThat(f3.calls).containsExactly("admitted(body)");
    assertThat(budget.requests("gpu", "run-1")).isEqualTo(1);
    assertThat(budget.work("gpu", "run-1")).isEqualTo(a.workUnits());

    a.release(Outcome.COMPLETED);
    a.end(Outcome.CANCELLED);
    a.releaseQuietly(Outcome.ERROR);
    b.end(Outcome.CANCELLED);
    assertThat(budget.requests("gpu", "run-1")).isZero();
    assertThat(budget.workflows("gpu")).isEqualTo(1); // run-2
  }

  @Test
  void shadow_aWouldBeFanoutBudgetRefusal_isRecordedAndLetThroughWithoutAPlace() {
    AdmissionSessionTest.Front f1 = new AdmissionSessionTest.Front();
    AdmissionSession a = start(f1, "run-1", 0, true);
    AdmissionSessionTest.Front f2 = new AdmissionSessionTest.Front();
    AdmissionSession b = start(f2, "run-1", 0, true);

    assertThat(f1.calls).containsExactly("admitted(body)");
    assertThat(a.facts().run().permit()).isTrue();
    assertThat(f2.calls).containsExactly("admitted(body)");
    assertThat(b.facts().run().permit()).isFalse();
    assertThat(b.running().would()).isEqualTo(SessionEvent.Shadowed.REJECT);
    assertThat(b.running().wouldReason()).isEqualTo(Reason.FANOUT_BUDGET);
    assertThat(b.facts().would().status()).isEqualTo(429);
    assertThat(b.holds(WorkflowPlaceCheck.Place.class)).isFalse();
    assertThat(budget.requests("gpu", "run-1")).as("as enforcement: one").isEqualTo(1);
    assertThat(events)
        .filteredOn(SessionEvent.Shadowed.class::isInstance)
        .singleElement()
        .satisfies(
            e -> assertThat(((SessionEvent.Shadowed) e).reason()).isEqualTo(Reason.FANOUT_BUDGET));

    b.release(Outcome.COMPLETED);
    assertThat(budget.requests("gpu", "run-1")).isEqualTo(1);
    a.release(Outcome.COMPLETED);
    assertThat(budget.size()).isZero();
  }
}
