package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.estimate.OutputReserves;
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
 * A request queued while its key was cold starts with the reserve the learner gives when it starts,
 * if smaller ({@link RequestCost#atStart}, rule {@code started}): the pool's work, the estimate the
 * meter grows past, and the tenant's token reservation are all that smaller reserve; never above
 * the client's cap. Fake clock; {@link OneSlotPool} (one request at a time), class {@code
 * interactive} (default 100 output tokens, max 1000).
 */
class StartedReserveSessionTest {
  private static final long T0 = 1_800_000_000_000L;
  private static final int WARMUP = 5;

  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(T0), ZoneOffset.UTC);
  private final TenantQuotas quotas =
      new TenantQuotas(
          new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
          "test_",
          TenantQuotas.FailureMode.OPEN);
  private final List<SessionEvent> events = new ArrayList<>();
  private final AdmissionController controller = OneSlotPool.controller();
  private final OutputReserves reserves =
      new OutputReserves(OutputReserves.Settings.builder().warmup(WARMUP).maxKeys(100).build());
  private final Tenant tenant =
      new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 1_000_000, 1_000_000));
  private final Sessions sessions =
      OneSlotPool.sessionsBuilder(
              controller,
              quotas,
              ticker,
              clock,
              (delayNanos, task) -> () -> {},
              SessionListener.of(new ReserveLearner(reserves), events::add))
          .reserves(reserves)
          .build();

  private static final SessionFront FRONT = LearnedReserveSessionTest.FRONT;

  private Subject subject() {
    return OneSlotPool.chat(tenant, ticker.nanos(), null, Duration.ofSeconds(5).toNanos());
  }

  /** A chat request asking {@code max_tokens} 1000, decided at its body (admitted or queued). */
  private AdmissionSession decide() {
    AdmissionSession session = sessions.open(subject(), FRONT, Runnable::run, SessionSteps.NONE);
    byte[] body =
        "{\"model\":\"m\",\"max_tokens\":1000,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
            .getBytes(StandardCharsets.UTF_8);
    session.begin(false, false, -1, ticker.nanos());
    session.decideWithBody(body, 0, body.length, ticker.nanos());
    return session;
  }

  private static void answer(AdmissionSession s, long outputTokens) {
    s.running().headers(200, "application/json", true);
    byte[] body =
        ("{\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":" + outputTokens + "}}")
            .getBytes(StandardCharsets.UTF_8);
    s.running().body(body, 0, body.length, true);
    assertThat(s.release(Outcome.COMPLETED)).isTrue();
  }

  /** The tenant's key learns {@code WARMUP} answers of 10 tokens (another replica's, say). */
  private void learnedMeanwhile() {
    Subject s = subject();
    for (int i = 0; i < WARMUP; i++) {
      reserves.record(
          "gpu",
          "m",
          ReserveLearner.scope(s),
          "acme",
          s.requestClass().reserveQuantile(),
          1000,
          1,
          10);
    }
  }

  @Test
  void queuedCold_startsWithTheReserveLearnedWhileItWaited() {
    AdmissionSession running = decide();
    AdmissionSession queued = decide();
    assertThat(queued.facts().run().permit()).isFalse(); // the one slot is busy: it waits
    assertThat(queued.estimate().outputReserveTokens()).isEqualTo(100); // the class default
    assertThat(queued.facts().estimate().reserveRule()).isEqualTo(OutputReserves.RULE_PRIOR);

    learnedMeanwhile();
    ticker.advance(Duration.ofMillis(500));
    answer(running, 10); // the slot frees: the queued request starts

    assertThat(queued.facts().run().permit()).isTrue();
    long reserve = queued.estimate().outputReserveTokens();
    assertThat(reserve).isBetween(10L, 13L);
    assertThat(queued.facts().estimate().reserveRule()).isEqualTo(OutputReserves.RULE_STARTED);
    assertThat(queued.facts().estimate().requestedOutputTokens()).isEqualTo(1000);
    assertThat(queued.workUnits()).isEqualTo(queued.estimate().inputTokens() + reserve);
    assertThat(controller.pool("gpu").snapshot(ticker.nanos()).workInFlight())
        .isEqualTo(queued.workUnits());
    events.clear();
    answer(queued, 5);
    // the tenant's reservation was cut to the smaller reserve: reconciling 5 refunds the rest
    assertThat(events.stream().filter(SessionEvent.Reconciled.class::isInstance).toList())
        .containsExactly(new SessionEvent.Reconciled(reserve - 5, 0));
  }

  @Test
  void nothingLearnedWhileItWaited_itStartsAsDecided() {
    AdmissionSession running = decide();
    AdmissionSession queued = decide();
    answer(running, 10);

    assertThat(queued.facts().run().permit()).isTrue();
    assertThat(queued.estimate().outputReserveTokens()).isEqualTo(100);
    assertThat(queued.facts().estimate().reserveRule()).isEqualTo(OutputReserves.RULE_PRIOR);
    assertThat(controller.pool("gpu").snapshot(ticker.nanos()).workInFlight())
        .isEqualTo(queued.workUnits());
  }
}
