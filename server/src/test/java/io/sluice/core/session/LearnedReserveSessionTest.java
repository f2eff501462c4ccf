package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
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
 * The learned output reserve in {@link AdmissionSession}: what is learned (completed, 2xx, usage
 * reported), the rule each request got, and that the learned value is both the pool's work and the
 * tenant's token reservation. Class {@code interactive}: default 100 output tokens, max 1000.
 */
class LearnedReserveSessionTest {
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

  private Sessions sessions(OutputReserves learner) {
    return OneSlotPool.sessionsBuilder(
            controller,
            quotas,
            ticker,
            clock,
            (delayNanos, task) -> () -> {},
            SessionListener.of(new ReserveLearner(learner), events::add))
        .reserves(learner)
        .build();
  }

  private final Sessions sessions = sessions(reserves);

  /** A front that admits and fails the test on any refusal (shared with the reserve tests). */
  static final SessionFront FRONT =
      new SessionFront() {
        @Override
        public void admitted(boolean atBody) {}

        @Override
        public void bodyWanted() {}

        @Override
        public void held(long holdMillis) {}

        @Override
        public void refused(Reason reason, int status, long retryAfterSeconds, String message) {
          throw new AssertionError("refused " + reason);
        }

        @Override
        public void storeFailed(Throwable cause) {
          throw new AssertionError(cause);
        }
      };

  /** A chat request with {@code fields} (e.g. {@code "max_tokens":1000,}), decided at its body. */
  private AdmissionSession decide(Sessions on, String fields) {
    Subject s = OneSlotPool.chat(tenant, ticker.nanos(), null, Duration.ofSeconds(5).toNanos());
    AdmissionSession session = on.open(s, FRONT, Runnable::run, SessionSteps.NONE);
    byte[] body =
        ("{\"model\":\"m\"," + fields + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
            .getBytes(StandardCharsets.UTF_8);
    session.begin(false, false, -1, ticker.nanos());
    session.decideWithBody(body, 0, body.length, ticker.nanos());
    assertThat(session.facts().run().permit()).isTrue();
    return session;
  }

  private AdmissionSession decide(String fields) {
    return decide(sessions, fields);
  }

  /** The answer ends: {@code status}, then a body reporting {@code outputTokens} (or none). */
  private static void answer(AdmissionSession s, int status, long outputTokens, Outcome outcome) {
    s.running().headers(status, "application/json", true);
    byte[] body =
        (outputTokens < 0
                ? "{\"choices\":[]}"
                : "{\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":" + outputTokens + "}}")
            .getBytes(StandardCharsets.UTF_8);
    s.running().body(body, 0, body.length, true);
    assertThat(s.release(outcome)).isTrue();
  }

  /**
   * A streamed answer cut before its end (its running usage and some text seen, no last event):
   * what it produced is charged, but it is not an answer's length.
   */
  private void cutStream(AdmissionSession s, Outcome outcome) {
    s.running().headers(200, "text/event-stream", true);
    byte[] body =
        ("data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,"
                + "\"output_tokens\":2}}}\n\n"
                + "data: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"partial\"}}\n\n")
            .getBytes(StandardCharsets.UTF_8);
    s.running().body(body, 0, body.length, false);
    assertThat(s.release(outcome)).isTrue();
  }

  private void warmUp(String fields, long outputTokens) {
    for (int i = 0; i < WARMUP; i++) {
      AdmissionSession s = decide(fields);
      answer(s, 200, outputTokens, Outcome.COMPLETED);
    }
  }

  @Test
  void afterWarmup_theLearnedReserveIsThePoolsWorkAndTheTenantsReservation() {
    for (int i = 0; i < WARMUP; i++) {
      AdmissionSession s = decide("\"max_tokens\":1000,");
      // the prior: the class default (100), below the client's cap
      assertThat(s.facts().estimate().reserveRule()).isEqualTo(OutputReserves.RULE_PRIOR);
      assertThat(s.estimate().outputReserveTokens()).isEqualTo(100);
      assertThat(s.workUnits()).isEqualTo(s.estimate().inputTokens() + 100);
      answer(s, 200, 40, Outcome.COMPLETED);
    }
    events.clear();

    AdmissionSession s = decide("\"max_tokens\":1000,");

    assertThat(s.facts().estimate().reserveRule())
        .isIn(OutputReserves.RULE_BOUND, OutputReserves.RULE_LEARNED);
    assertThat(s.facts().estimate().requestedOutputTokens()).isEqualTo(1000);
    long learned = s.estimate().outputReserveTokens();
    assertThat(learned).isBetween(40L, 50L);
    assertThat(s.workUnits()).isEqualTo(s.estimate().inputTokens() + learned);
    assertThat(controller.pool("gpu").snapshot(ticker.nanos()).workInFlight())
        .isEqualTo(s.workUnits());
    answer(s, 200, 40, Outcome.COMPLETED);
    // the tenant reserved the learned value, so reconciling 40 actual refunds only the difference
    assertThat(events(SessionEvent.Reconciled.class))
        .containsExactly(new SessionEvent.Reconciled(learned - 40, 0));
  }

  @Test
  void onlyAnswersSeenToTheirEnd_areLearned() {
    // warmup 5: four good answers, then every kind of answer that must teach nothing
    for (int i = 0; i < WARMUP - 1; i++) {
      answer(decide("\"max_tokens\":1000,"), 200, 40, Outcome.COMPLETED);
    }
    // cut below what was learned: a lower bound that says nothing (past it, it would count)
    cutStream(decide("\"max_tokens\":1000,"), Outcome.CANCELLED);
    cutStream(decide("\"max_tokens\":1000,"), Outcome.ERROR);
    answer(decide("\"max_tokens\":1000,"), 500, 40, Outcome.COMPLETED);
    answer(decide("\"max_tokens\":1000,"), 429, 40, Outcome.COMPLETED);
    answer(decide("\"max_tokens\":1000,"), 200, -1, Outcome.COMPLETED); // no usage reported
    AdmissionSession noResponse = decide("\"max_tokens\":1000,");
    assertThat(noResponse.release(Outcome.COMPLETED)).isTrue();

    AdmissionSession still = decide("\"max_tokens\":1000,");
    assertThat(still.facts().estimate().reserveRule()).isEqualTo(OutputReserves.RULE_PRIOR);
    answer(still, 200, 40, Outcome.COMPLETED); // the fifth good one

    assertThat(decide("\"max_tokens\":1000,").facts().estimate().reserveRule())
        .isIn(OutputReserves.RULE_BOUND, OutputReserves.RULE_LEARNED);
  }

  @Test
  void noCap_theClassDefaultUntilWarmed_thenTheLearnedValueBelowIt() {
    AdmissionSession first = decide("");
    assertThat(first.facts().estimate().reserveRule()).isEqualTo(OutputReserves.RULE_PRIOR);
    assertThat(first.estimate().outputReserveTokens()).isEqualTo(100);
    answer(first, 200, 30, Outcome.COMPLETED);
    warmUp("", 30);

    AdmissionSession s = decide("");
    assertThat(s.facts().estimate().reserveRule())
        .isIn(OutputReserves.RULE_BOUND, OutputReserves.RULE_LEARNED);
    assertThat(s.facts().estimate().requestedOutputTokens()).isEqualTo(100);
    assertThat(s.estimate().outputReserveTokens()).isBetween(30L, 38L);
  }

  @Test
  void capBelowTheLearnedValue_theCapIsTheReserve() {
    warmUp("\"max_tokens\":1000,", 400);

    AdmissionSession s = decide("\"max_tokens\":50,");

    assertThat(s.facts().estimate().reserveRule()).isEqualTo(OutputReserves.RULE_CAP);
    assertThat(s.estimate().outputReserveTokens()).isEqualTo(50);
  }

  @Test
  void severalAnswers_learnedPerAnswer_reserveTimesTheAnswers() {
    warmUp("\"max_tokens\":1000,\"n\":3,", 120); // three answers of 40

    AdmissionSession s = decide("\"max_tokens\":1000,\"n\":2,");

    assertThat(s.facts().estimate().reserveRule())
        .isIn(OutputReserves.RULE_BOUND, OutputReserves.RULE_LEARNED);
    assertThat(s.facts().estimate().requestedOutputTokens()).isEqualTo(2000);
    assertThat(s.estimate().outputReserveTokens()).isBetween(80L, 100L);
  }

  @Test
  void anotherSnapshotWithTheSameLearner_keepsWhatWasLearned() {
    warmUp("\"max_tokens\":1000,", 40);
    Sessions reloaded = sessions(reserves); // a reload builds new Sessions around the same learner

    AdmissionSession s = decide(reloaded, "\"max_tokens\":1000,");

    assertThat(s.facts().estimate().reserveRule())
        .isIn(OutputReserves.RULE_BOUND, OutputReserves.RULE_LEARNED);
    assertThat(s.estimate().outputReserveTokens()).isBetween(40L, 50L);
  }

  @Test
  void withoutALearner_theOldRule_ruleOff() {
    Sessions plain = sessions(OutputReserves.off());
    for (int i = 0; i < 2 * WARMUP; i++) {
      answer(decide(plain, "\"max_tokens\":1000,"), 200, 40, Outcome.COMPLETED);
    }
    AdmissionSession s = decide(plain, "\"max_tokens\":1000,");
    assertThat(s.facts().estimate().reserveRule()).isEqualTo(OutputReserves.RULE_OFF);
    assertThat(s.estimate().outputReserveTokens()).isEqualTo(1000);
  }

  private <T extends SessionEvent> List<T> events(Class<T> type) {
    return events.stream().filter(type::isInstance).map(type::cast).toList();
  }
}
