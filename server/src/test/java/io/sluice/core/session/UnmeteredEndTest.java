package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.adapt.AnswerSource;
import io.sluice.core.admission.Outcome;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryStore;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A running request makes its response meter at the first response event only: one that ends before
 * any (the common cancel) is charged and recorded as an unused meter would have it, and a response
 * event after that end keeps the charge.
 */
class UnmeteredEndTest {
  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(1_800_000_000_000L), ZoneOffset.UTC);
  private final List<SessionEvent> events = new ArrayList<>();
  private final Sessions sessions =
      OneSlotPool.sessions(
          OneSlotPool.controller(),
          new TenantQuotas(
              new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
              "test_",
              TenantQuotas.FailureMode.OPEN),
          ticker,
          clock,
          new AdmissionSessionTest.ManualTimer(),
          events::add);

  private AdmissionSession admitted() {
    Tenant t = new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0));
    AdmissionSession s =
        sessions.open(
            OneSlotPool.chat(t, ticker.nanos(), null, 5_000_000_000L),
            new AdmissionSessionTest.Front(),
            Runnable::run,
            SessionSteps.NONE);
    s.begin(true, true, 0, ticker.nanos());
    return s;
  }

  @Test
  void cancelledBeforeAnyAnswer_isChargedNoAnswer_asAnUnusedMeterWould() {
    AdmissionSession s = admitted();
    assertThat(s.facts().end())
        .isEqualTo(new RequestFacts.End(0, "seen", false, Charge.NONE, false, -1));
    assertThat(s.release(Outcome.CANCELLED)).isTrue();
    SessionEvent.Released r =
        events.stream()
            .filter(SessionEvent.Released.class::isInstance)
            .map(SessionEvent.Released.class::cast)
            .findFirst()
            .orElseThrow();
    RequestFacts.End end = r.facts().end();
    assertThat(end.charge().rule()).isEqualTo(Charge.NO_ANSWER);
    assertThat(end.charge().inputTokens()).isEqualTo(s.estimate().inputTokens());
    assertThat(end).isEqualTo(new RequestFacts.End(0, "seen", false, end.charge(), false, -1));
    assertThat(s.facts().end()).isSameAs(end); // shared, as an unused meter's
  }

  @Test
  void aResponseEventAfterTheEnd_keepsTheEndsCharge() {
    AdmissionSession s = admitted();
    s.release(Outcome.CANCELLED);
    Charge charged = s.facts().end().charge();
    s.running().headers(200, null, false, -1, AnswerSource.UPSTREAM); // late: the meter is made
    assertThat(s.facts().end().charge()).isSameAs(charged);
    assertThat(s.facts().end().upstreamStatus()).isEqualTo(200);
  }
}
