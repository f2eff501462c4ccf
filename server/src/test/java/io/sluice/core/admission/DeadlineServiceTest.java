package io.sluice.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Deadline checks use the pool's prefill/decode service model and the class's 90th percentile of
 * actual ÷ predicted service, learned from completions on a fake clock (no sleeps).
 */
class DeadlineServiceTest {
  private static final long MS = 1_000_000L;
  private final FakeTicker time = new FakeTicker();
  private final PoolPolicy pool = Policies.pool(10_000_000);
  private final ClassPolicy docs = Policies.cls("docs", 0, 0.5, 0, true);
  private final ClassPolicy chat = Policies.cls("chat", 1, 0.5, 0, true);
  private final Tenant tenant = Policies.tenant("t", 0);
  private final AdmissionController controller =
      new AdmissionController(
          List.of(pool),
          List.of(docs, chat),
          Duration.ofSeconds(10),
          PoolState.ReleaseListener.NONE,
          () -> 0.5);

  private AdmissionRequest request(ClassPolicy c, long input, long output, Duration left) {
    return new AdmissionRequest(
        pool,
        c,
        tenant,
        input + output,
        time.nanos(),
        time.nanos() + left.toNanos(),
        input,
        output);
  }

  /**
   * 100 document answers, one at a time: 0.1 ms per prompt token (1,000 or 3,000 tokens) plus 10 ms
   * per generated token, where answers use 10 %, 20 %, …, 100 % of their 500-token reserve in turn.
   * Mean service of a 2,000-token prompt ≈ 0.2 + 2.75 s; its 90th percentile ≈ 0.2 + 4.75 s (the
   * estimate ends on a run of long answers: ≈ 5.7 s).
   */
  private void learnDocuments() {
    for (int i = 0; i < 100; i++) {
      long input = i % 2 == 0 ? 1000 : 3000;
      long generated = 50L * (1 + (i / 2) % 10);
      Decision d =
          controller.decide(
              request(docs, input, 500, Duration.ofSeconds(60)), Ask.now(time.nanos()));
      Permit p = ((Decision.Admit) d).permit();
      time.advanceNanos(input * MS / 10 + generated * 10 * MS);
      p.release(Outcome.COMPLETED, time.nanos());
    }
  }

  private Decision decideNow(AdmissionRequest r) {
    return controller.decide(r, Ask.hold(Duration.ofSeconds(5).toNanos(), null, time.nanos()));
  }

  @Test
  void deadlineAboveMeanButBelowTheClassTail_refused() {
    learnDocuments();
    // the mean time per work unit would predict ≈ 2.95 s and admit this
    Decision d = decideNow(request(docs, 2000, 500, Duration.ofMillis(3500)));
    assertThat(d).isInstanceOf(Decision.Reject.class);
    assertThat(((Decision.Reject) d).reason()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    assertThat(controller.pool("p").snapshot(time.nanos()).workInFlight()).isZero();
  }

  @Test
  void deadlineCoveringTheClassTail_admitted() {
    learnDocuments();
    assertThat(decideNow(request(docs, 2000, 500, Duration.ofMillis(6500))))
        .isInstanceOf(Decision.Admit.class);
  }

  @Test
  void longPrompt_predictedFromPrefillAndDecode_notFromWorkUnits() {
    learnDocuments();
    // 20,000 prompt tokens: ≈ 2 s prefill + 2.75 s decode, ×1.7 at the tail ≈ 8 s. A time per work
    // unit (≈ 1.2 ms × 20,500) would say 24 s and refuse it.
    assertThat(decideNow(request(docs, 20_000, 500, Duration.ofSeconds(10))))
        .isInstanceOf(Decision.Admit.class);
  }

  @Test
  void classWithoutItsOwnCompletions_usesThePoolTail_thenItsOwn() {
    learnDocuments();
    // chat has no completions yet: the pool's tail (here the documents') applies
    assertThat(decideNow(request(chat, 2000, 500, Duration.ofMillis(3500))))
        .isInstanceOf(Decision.Reject.class);
    // 40 chat answers that always take exactly what the model predicts (about 1 × prediction)
    for (int i = 0; i < 40; i++) {
      long input = i % 2 == 0 ? 1000 : 3000;
      Permit p =
          ((Decision.Admit)
                  controller.decide(
                      request(chat, input, 500, Duration.ofSeconds(60)), Ask.now(time.nanos())))
              .permit();
      time.advanceNanos(input * MS / 10 + 2750 * MS);
      p.release(Outcome.COMPLETED, time.nanos());
    }
    // chat's own tail is ≈ 1 × the model (≈ 2.95 s): 3.5 s is enough for chat, not for documents
    assertThat(decideNow(request(chat, 2000, 500, Duration.ofMillis(3500))))
        .isInstanceOf(Decision.Admit.class);
    assertThat(decideNow(request(docs, 2000, 500, Duration.ofMillis(3500))))
        .isInstanceOf(Decision.Reject.class);
  }

  @Test
  void queuedRequest_expiresWhenTheClassTailNoLongerFits() {
    learnDocuments();
    // fill the documents share (chat guarantees the other half) so the next one must queue
    PoolState state = controller.pool("p");
    AdmissionRequest big =
        new AdmissionRequest(
            pool, docs, tenant, 5_000_000, time.nanos(), time.nanos() + 60_000 * MS, 0, 1);
    Decision f = controller.decide(big, Ask.now(time.nanos()));
    assertThat(f).isInstanceOf(Decision.Admit.class);
    Permit filler = ((Decision.Admit) f).permit();
    Decision d =
        controller.decide(
            request(docs, 2000, 500, Duration.ofMillis(6800)),
            Ask.hold(Duration.ofSeconds(5).toNanos(), new QueueHoldTest.Recorder(), time.nanos()));
    Decision.Queued q = (Decision.Queued) d;
    long startBudget = q.expiresAtNanos() - time.nanos();
    // deadline 6.8 s minus the tail service (5–6 s) leaves about 1 s to start; the mean (≈ 2.95 s)
    // would leave the class's whole 2 s maxQueueWait
    assertThat(startBudget).isBetween(500 * MS, 1_800 * MS);
    assertThat(state.snapshot(time.nanos()).requestsInFlight()).isEqualTo(1);
    filler.release(Outcome.CANCELLED, time.nanos());
  }

  @Test
  void answersCutOffMidStream_countAsAtLeastThatLong() {
    learnDocuments();
    assertThat(decideNow(request(docs, 2000, 500, Duration.ofMillis(6500))))
        .isInstanceOf(Decision.Admit.class)
        .extracting(d -> ((Decision.Admit) d).permit())
        .satisfies(p -> p.release(Outcome.CANCELLED, time.nanos()));
    // five document answers whose clients left after 9 s without the answer: they took longer
    for (int i = 0; i < 5; i++) {
      Permit p =
          ((Decision.Admit)
                  controller.decide(
                      request(docs, 2000, 500, Duration.ofSeconds(60)), Ask.now(time.nanos())))
              .permit();
      time.advance(Duration.ofSeconds(9));
      p.release(Outcome.CANCELLED, time.nanos());
    }
    Decision d = decideNow(request(docs, 2000, 500, Duration.ofMillis(6500)));
    assertThat(((Decision.Reject) d).reason()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
  }

  @Test
  void queuedItem_whoseTurnComesAfterTheEstimateGrew_refusedInsteadOfStarted() {
    // fill the chat share (documents guarantee the other half) so the next chat request must
    // queue; nothing measured yet
    Permit filler =
        ((Decision.Admit)
                controller.decide(
                    new AdmissionRequest(
                        pool,
                        chat,
                        tenant,
                        5_000_000,
                        time.nanos(),
                        time.nanos() + 60_000 * MS,
                        0,
                        1),
                    Ask.now(time.nanos())))
            .permit();
    // 60 document answers of 200 tokens start now, nothing measured yet
    long t0 = time.nanos();
    List<Permit> chats = new java.util.ArrayList<>();
    for (int i = 0; i < 60; i++) {
      chats.add(
          ((Decision.Admit)
                  controller.decide(request(docs, 100, 100, Duration.ofSeconds(60)), Ask.now(t0)))
              .permit());
    }
    time.advance(Duration.ofMillis(2500));
    // a chat request of the same size as the documents' (the model will have evidence for it)
    QueueHoldTest.Recorder waiter = new QueueHoldTest.Recorder();
    Decision d =
        controller.decide(
            request(chat, 200, 200, Duration.ofMillis(5000)),
            Ask.hold(Duration.ofSeconds(5).toNanos(), waiter, time.nanos()));
    assertThat(d).isInstanceOf(Decision.Queued.class); // the default service time (2 s) fits
    // the documents end 2.5–2.86 s after their start, in time order: ≈ 13.4 ms per token (every
    // one the same shape), a 400-token request ≈ 5.4 s at the pool-wide 90th percentile or more
    for (int i = 0; i < 60; i++) {
      long at = t0 + 2500 * MS + (i / 6) * 40 * MS;
      time.advanceNanos(at - time.nanos());
      chats.get(i).release(Outcome.COMPLETED, time.nanos());
    }
    // each release runs the scheduler, which proposed the queued chat request (the pool's check
    // kept it waiting); once a service time is measured it predicts ≈ 5.4 s or more against
    // under 5 s left: refused, never started
    assertThat(waiter.admitted).isEmpty();
    assertThat(waiter.refused).hasSize(1);
    assertThat(waiter.refused.get(0).reason()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    assertThat(controller.pool("p").queueDepth("chat")).isZero();
    filler.release(Outcome.COMPLETED, time.nanos());
    assertThat(waiter.calls()).isEqualTo(1);
    assertThat(controller.pool("p").snapshot(time.nanos()).workInFlight()).isZero();
  }

  @Test
  void tailUsableAsSoonAsTheModelIs_fromTheCompletionsSeenBefore() {
    // exactly 20 document answers (the model's minimum), each answer length twice
    for (int i = 0; i < 20; i++) {
      long input = i % 2 == 0 ? 1000 : 3000;
      long generated = 50L * (1 + (i / 2) % 10);
      Permit p =
          ((Decision.Admit)
                  controller.decide(
                      request(docs, input, 500, Duration.ofSeconds(60)), Ask.now(time.nanos())))
              .permit();
      time.advanceNanos(input * MS / 10 + generated * 10 * MS);
      p.release(Outcome.COMPLETED, time.nanos());
    }
    // the mean (≈ 2.95 s) would admit this; the tail of the 20 answers seen (≈ 1.6 × the model)
    // is already in use and refuses it
    Decision d = decideNow(request(docs, 2000, 500, Duration.ofMillis(3500)));
    assertThat(d).isInstanceOf(Decision.Reject.class);
    assertThat(((Decision.Reject) d).reason()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
  }

  /** {@code n} answers of class docs, one at a time, each taking {@code nanos(i)}. */
  private void learn(int n, long input, long output, java.util.function.IntToLongFunction nanos) {
    for (int i = 0; i < n; i++) {
      Permit p =
          ((Decision.Admit)
                  controller.decide(
                      request(docs, input + (i % 5) * 50, output, Duration.ofSeconds(600)),
                      Ask.now(time.nanos())))
              .permit();
      time.advanceNanos(nanos.applyAsLong(i));
      p.release(Outcome.COMPLETED, time.nanos());
    }
  }

  @Test
  void freshReplica_fortyShortAnswers_thenALongReserveOnAnIdlePool_admittedAndLearnedFrom() {
    // 40 short answers of a 100-token reserve in 1.5–2.1 s (mostly the first token): a time per
    // reserved token alone would be ≈ 18 ms, and predict 72 s for a 4,000-token reserve
    learn(40, 100, 100, i -> (1500 + (i % 7) * 100) * MS);
    Decision d = decideNow(request(docs, 200, 4000, Duration.ofSeconds(30)));
    assertThat(d).isInstanceOf(Decision.Admit.class);
    // its answer (a short one, 3 s) widens the evidence: the next one is predicted from it
    time.advance(Duration.ofSeconds(3));
    ((Decision.Admit) d).permit().release(Outcome.COMPLETED, time.nanos());
    assertThat(decideNow(request(docs, 200, 4000, Duration.ofSeconds(30))))
        .isInstanceOf(Decision.Admit.class);
  }

  @Test
  void modelThatSawLongAnswers_stillRefusesAnUnreachableDeadline() {
    learn(40, 100, 4000, i -> (60_000 + (i % 7) * 3000) * MS); // 60–78 s
    Decision d = decideNow(request(docs, 200, 4000, Duration.ofSeconds(30)));
    assertThat(d).isInstanceOf(Decision.Reject.class);
    assertThat(((Decision.Reject) d).reason()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
    // a request of twice the largest reserve seen is still predicted from the evidence: refused
    Decision twice = decideNow(request(docs, 200, 8000, Duration.ofSeconds(30)));
    assertThat(((Decision.Reject) twice).reason()).isEqualTo(Reason.DEADLINE_UNREACHABLE);
  }

  @Test
  void noTokenSplit_meanPerWorkUnit_cappedAtTheWorkSeen() {
    // 30 requests of 200 work units without a token split, 2 s each: 10 ms per unit
    for (int i = 0; i < 30; i++) {
      Permit p =
          ((Decision.Admit)
                  controller.decide(
                      new AdmissionRequest(
                          pool,
                          docs,
                          tenant,
                          200,
                          time.nanos(),
                          time.nanos() + 600_000 * MS,
                          -1,
                          -1),
                      Ask.now(time.nanos())))
              .permit();
      time.advance(Duration.ofSeconds(2));
      p.release(Outcome.COMPLETED, time.nanos());
    }
    // 4,200 units would be 42 s at that rate; the evidence covers 400 units (4 s)
    AdmissionRequest big =
        new AdmissionRequest(
            pool, docs, tenant, 4200, time.nanos(), time.nanos() + 30_000 * MS, -1, -1);
    assertThat(decideNow(big)).isInstanceOf(Decision.Admit.class);
    AdmissionRequest tight =
        new AdmissionRequest(
            pool, docs, tenant, 4200, time.nanos(), time.nanos() + 3_000 * MS, -1, -1);
    assertThat(((Decision.Reject) decideNow(tight)).reason())
        .isEqualTo(Reason.DEADLINE_UNREACHABLE);
  }
}
