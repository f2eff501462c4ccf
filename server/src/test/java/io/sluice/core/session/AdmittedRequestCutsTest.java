package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.Outcome;
import io.sluice.core.estimate.FanOut;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.estimate.Usage;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.Ticker;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * What an admitted request no longer builds or reads twice gives the same values: the admission's
 * one ticker read (the deadline left and the decision's time are one instant), a note alone made
 * into notes once while it is the same value, and the end of a request that ended before any answer
 * (its charge and its facts) made again only while they are the same value.
 */
class AdmittedRequestCutsTest {
  private static final long MS = 1_000_000L;
  private final AtomicLong now = new AtomicLong(1_000 * MS);
  private final Ticker ticker = () -> now.getAndAdd(MS); // every read is a millisecond later
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(1_800_000_000_000L), ZoneOffset.UTC);
  private final List<SessionEvent> events = new ArrayList<>();
  private final Sessions sessions =
      OneSlotPool.sessions(
          OneSlotPool.controller(),
          OneSlotPool.quotas(clock),
          ticker,
          clock,
          new AdmissionSessionTest.ManualTimer(),
          events::add);
  private final Tenant acme = new Tenant("acme", TierPolicy.defaults("pro"));

  private AdmissionSession admitted(long contentLength) {
    long received = now.get();
    Subject s = OneSlotPool.chat(acme, received, null, Duration.ofSeconds(5).toNanos());
    AdmissionSession session =
        sessions.open(s, new AdmissionSessionTest.Front(), Runnable::run, SessionSteps.NONE);
    session.begin(true, false, contentLength, received);
    assertThat(session.phase()).isEqualTo(AdmissionSession.Phase.RUNNING);
    return session;
  }

  private <T extends SessionEvent> List<T> events(Class<T> type) {
    return events.stream().filter(type::isInstance).map(type::cast).toList();
  }

  @Test
  void admitted_theDeadlineLeftAndTheDecisionTime_areOneInstant() {
    long received = now.get();
    AdmissionSession s = admitted(400);
    RequestFacts.Decided d = events(SessionEvent.Admitted.class).get(0).facts().decision();
    // deadline left = deadline - t, latency = t - received: one t, whatever the ticker did between
    assertThat(d.deadlineLeftNanos() + d.latencyNanos())
        .isEqualTo(s.subject().deadlineNanos() - received);
    assertThat(d.latencyNanos()).isPositive();
  }

  @Test
  void endedBeforeAnyAnswer_eachRequestIsChargedItsOwnInput_inItsOwnFacts() {
    admitted(400).release(Outcome.CANCELLED);
    admitted(400).release(Outcome.CANCELLED);
    admitted(4_000).release(Outcome.CANCELLED);
    List<SessionEvent.Released> released = events(SessionEvent.Released.class);
    assertThat(released).hasSize(3);
    for (SessionEvent.Released r : released) {
      RequestFacts f = r.facts();
      Charge c = f.end().charge();
      assertThat(c.rule()).isEqualTo(Charge.NO_ANSWER);
      assertThat(c.inputTokens())
          .as("its own estimate's input")
          .isEqualTo(f.estimate().tokens().inputTokens());
      assertThat(f.end()).isEqualTo(new RequestFacts.End(0, "seen", false, c, false, -1));
    }
    assertThat(released.get(1).facts().end())
        .as("the same value: made once")
        .isSameAs(released.get(0).facts().end());
    assertThat(released.get(2).facts().end().charge().inputTokens())
        .isGreaterThan(released.get(0).facts().end().charge().inputTokens());
  }

  @Test
  void noAnswerCharge_isTheInputOfItsEstimate_theLastOneOnlyWhileTheSame() {
    ChargeRule.Answer none = new ChargeRule.Answer(false, 0, false, false, false, 0, 0, Usage.NONE);
    Charge a = ChargeRule.charge(Outcome.CANCELLED, estimate(100), none);
    Charge b = ChargeRule.charge(Outcome.CANCELLED, estimate(100), none);
    Charge c = ChargeRule.charge(Outcome.CANCELLED, estimate(250), none);
    assertThat(a).isEqualTo(new Charge(Charge.NO_ANSWER, 100, 0, 0, 0)).isSameAs(b);
    assertThat(c).isEqualTo(new Charge(Charge.NO_ANSWER, 250, 0, 0, 0));
    assertThat(ChargeRule.charge(Outcome.CANCELLED, estimate(100), none))
        .isEqualTo(new Charge(Charge.NO_ANSWER, 100, 0, 0, 0));
  }

  @Test
  void aNoteAlone_isMadeIntoNotesOnce_whileItIsTheSameValue() {
    Object note = new Object();
    Object other = new Object();
    CheckNotes first = CheckNotes.one(note);
    assertThat(CheckNotes.one(note)).isSameAs(first);
    CheckNotes second = CheckNotes.one(other);
    assertThat(second.get(Object.class)).isSameAs(other);
    assertThat(CheckNotes.one(note).get(Object.class)).isSameAs(note);
    assertThat(CheckNotes.one("a note").get(String.class)).isEqualTo("a note");
    assertThat(CheckNotes.one("a note").get(Integer.class)).isNull();
  }

  private static TokenEstimate estimate(long input) {
    return new TokenEstimate(
        input, 500, TokenEstimate.METHOD_BYTES, null, "m", false, false, FanOut.NONE, -1);
  }
}
