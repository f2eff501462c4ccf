package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.PoolState;
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
import java.util.Iterator;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A permit whose response end the front end will not see (response_body_mode NONE) is held for its
 * predicted tail: released once, when the predicted end has passed and the stream has ended, by the
 * timer, the stream's close or shutdown. Fake ticker, a timer that fires what is due, a direct
 * serial context: no threads, no sleeps.
 */
class TailHoldTest {
  private static final long MS = 1_000_000L;

  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(1_800_000_000_000L), ZoneOffset.UTC);
  private final TenantQuotas quotas =
      new TenantQuotas(
          new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
          "test_",
          TenantQuotas.FailureMode.OPEN);
  private final DueTimer timer = new DueTimer();
  private final List<SessionEvent> events = new ArrayList<>();
  private final AdmissionController controller = OneSlotPool.controller();
  private final TailHolds tails = new TailHolds();
  private final Sessions sessions =
      OneSlotPool.sessionsBuilder(controller, quotas, ticker, clock, timer, events::add)
          .tails(tails)
          .build();
  private final Tenant tenant = new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0));

  /** Runs each task once the fake ticker has reached its time; cancelled tasks never run. */
  private final class DueTimer implements HoldTimer {
    final List<Object[]> pending = new ArrayList<>();

    @Override
    public Handle schedule(long delayNanos, Runnable task) {
      Object[] entry = {ticker.nanos() + delayNanos, task};
      pending.add(entry);
      return () -> pending.remove(entry);
    }

    void fireDue() {
      List<Runnable> due = new ArrayList<>();
      for (Iterator<Object[]> it = pending.iterator(); it.hasNext(); ) {
        Object[] e = it.next();
        if ((long) e[0] - ticker.nanos() <= 0) {
          it.remove();
          due.add((Runnable) e[1]);
        }
      }
      due.forEach(Runnable::run);
    }
  }

  private AdmissionSession admitted(long deadlineNanos) {
    long now = ticker.nanos();
    Subject s =
        new Subject(
            "chat",
            OneSlotPool.POOL,
            OneSlotPool.INTERACTIVE,
            RequestFormat.OPENAI_CHAT,
            tenant,
            now,
            now + deadlineNanos,
            null,
            Duration.ofSeconds(5).toNanos(),
            false,
            0,
            null,
            io.sluice.core.session.Signals.NONE);
    AdmissionSession session =
        sessions.open(s, new AdmissionSessionTest.Front(), Runnable::run, SessionSteps.NONE);
    session.begin(true, true, 0, now);
    assertThat(session.facts().run().permit()).isTrue();
    session.running().headers(200, "text/event-stream", true);
    return session;
  }

  private AdmissionSession admitted() {
    return admitted(Duration.ofSeconds(30).toNanos());
  }

  private PoolState pool() {
    return controller.pool("gpu");
  }

  private int inFlight() {
    return pool().snapshot(ticker.nanos()).requestsInFlight();
  }

  private List<SessionEvent.Released> released() {
    return events.stream()
        .filter(SessionEvent.Released.class::isInstance)
        .map(SessionEvent.Released.class::cast)
        .toList();
  }

  private void advance(long millis) {
    ticker.advanceNanos(millis * MS);
    timer.fireDue();
  }

  /** A completion whose end was seen, {@code millis} after admission. */
  private void seenCompletion(long millis) {
    AdmissionSession s = admitted();
    advance(millis);
    assertThat(s.release(Outcome.COMPLETED)).isTrue();
    assertThat(s.facts().end().responseEnd()).isEqualTo("seen");
  }

  @Test
  void beforeAnyCompletionTheTailIsThePoolsDefaultServiceTime() {
    AdmissionSession s = admitted();
    advance(20); // time to first token
    s.running().endUnseen("body_mode_none");
    s.end(Outcome.CANCELLED); // Envoy 1.37+ closes the stream right after the headers

    assertThat(inFlight()).isEqualTo(1);
    assertThat(pool().tailsHeld()).isEqualTo(1);
    assertThat(tails.size()).isEqualTo(1);
    advance(979); // 999 ms after admission: OneSlotPool's defaultServiceTime is 1 s
    assertThat(inFlight()).isEqualTo(1);
    assertThat(released()).isEmpty();

    advance(1);
    assertThat(inFlight()).isZero();
    assertThat(pool().tailsHeld()).isZero();
    assertThat(tails.size()).isZero();
    assertThat(released()).hasSize(1);
    SessionEvent.Released r = released().get(0);
    assertThat(r.outcome()).isEqualTo(Outcome.COMPLETED);
    assertThat(r.heldNanos()).isEqualTo(1000 * MS);
    assertThat(s.facts().end().responseEnd()).isEqualTo("body_mode_none");
    assertThat(events).filteredOn(SessionEvent.ResponseEndUnseen.class::isInstance).hasSize(1);
  }

  @Test
  void theStreamsOtherEndsNeitherReleaseEarlyNorTwice() {
    AdmissionSession s = admitted();
    s.running().endUnseen("body_mode_none");
    assertThat(s.release(Outcome.COMPLETED)).isFalse();
    s.end(Outcome.CANCELLED);
    s.end(Outcome.ERROR);
    s.releaseQuietly(Outcome.ERROR);
    s.running().endUnseen("body_mode_none"); // a second call changes nothing
    assertThat(inFlight()).isEqualTo(1);

    advance(1000);
    assertThat(released()).hasSize(1);
    s.end(Outcome.CANCELLED);
    assertThat(s.release(Outcome.COMPLETED)).isFalse();
    tails.releaseAll();
    advance(5000);
    assertThat(released()).hasSize(1);
    assertThat(inFlight()).isZero();
    assertThat(pool().tailsHeld()).isZero();
  }

  @Test
  void aStreamStillOpenAtThePredictedEndHoldsThePermitUntilItCloses() {
    AdmissionSession s = admitted(); // Envoy before 1.37 keeps the stream to the request's end
    s.running().endUnseen("body_mode_none");
    advance(1000);
    assertThat(inFlight()).isEqualTo(1);
    advance(2000);
    assertThat(released()).isEmpty();

    s.end(Outcome.CANCELLED); // the reset at the request's end: released at once
    assertThat(released()).hasSize(1);
    assertThat(released().get(0).heldNanos()).isEqualTo(3000 * MS);
    assertThat(released().get(0).outcome()).isEqualTo(Outcome.COMPLETED);
  }

  @Test
  void aPredictedEndAlreadyPassedReleasesAtTheStreamsEnd() {
    AdmissionSession s = admitted();
    advance(1500); // a non-streamed answer: its headers come when it is done
    s.running().endUnseen("body_mode_none");
    assertThat(inFlight()).isEqualTo(1); // the stream is still open
    s.end(Outcome.CANCELLED);
    assertThat(inFlight()).isZero();
    assertThat(released()).hasSize(1);
  }

  @Test
  void theClassDeadlineCapsTheTail() {
    AdmissionSession s = admitted(Duration.ofMillis(400).toNanos());
    s.running().endUnseen("body_mode_none");
    s.end(Outcome.CANCELLED);
    advance(399);
    assertThat(inFlight()).isEqualTo(1);
    advance(1);
    assertThat(inFlight()).isZero();
  }

  @Test
  void theTailIsTheMedianOfTheEndsSeenAndUnseenEndsTeachNothing() {
    for (int i = 0; i < 10; i++) { // ServiceTimes.TAIL_WARMUP
      seenCompletion(i % 2 == 0 ? 380 : 420);
    }
    long learned = pool().tailNanos(heldPermitProbe());
    assertThat(learned).isBetween(380 * MS, 420 * MS);

    // thirty unseen tails whose streams stayed open for 3 s (each released at 3 s): were they
    // learned, the median would climb towards 3 s
    for (int i = 0; i < 30; i++) {
      AdmissionSession s = admitted();
      s.running().endUnseen("body_mode_none");
      advance(3000);
      s.end(Outcome.CANCELLED);
      assertThat(released().get(released().size() - 1).heldNanos()).isEqualTo(3000 * MS);
    }
    assertThat(pool().tailNanos(heldPermitProbe())).isEqualTo(learned);

    AdmissionSession s = admitted();
    s.running().endUnseen("body_mode_none");
    s.end(Outcome.CANCELLED);
    advance(learned / MS - 1);
    assertThat(inFlight()).isEqualTo(1);
    advance(2);
    assertThat(inFlight()).isZero();
  }

  /** A permit of the pool's only class, released at once (tailNanos reads its class and work). */
  private io.sluice.core.admission.Permit heldPermitProbe() {
    long now = ticker.nanos();
    var d =
        controller.decide(
            new io.sluice.core.admission.AdmissionRequest(
                OneSlotPool.POOL,
                OneSlotPool.INTERACTIVE,
                tenant,
                100,
                now,
                now + Duration.ofSeconds(30).toNanos(),
                -1,
                -1),
            Ask.hold(0, null, now));
    var p = ((io.sluice.core.admission.Decision.Admit) d).permit();
    p.release(Outcome.ERROR, now); // ERROR teaches nothing either
    return p;
  }

  @Test
  void responseTrailersEndTheTailAsASeenEnd() {
    AdmissionSession s = admitted();
    s.running().endUnseen("body_mode_none");
    advance(250);
    s.running().endSeen(); // trailers (response_trailer_mode SEND): the end after all
    assertThat(pool().tailsHeld()).isZero();
    assertThat(s.release(Outcome.COMPLETED)).isTrue();
    assertThat(released().get(0).heldNanos()).isEqualTo(250 * MS);
    assertThat(s.facts().end().responseEnd()).isEqualTo("seen");
    advance(5000);
    assertThat(released()).hasSize(1);
  }

  @Test
  void shutdownReleasesEveryHeldTailOnceAndLaterOnesAtOnce() {
    AdmissionSession s = admitted();
    s.running().endUnseen("body_mode_none");
    s.end(Outcome.CANCELLED);
    assertThat(tails.releaseAll()).isEqualTo(1);
    assertThat(inFlight()).isZero();
    assertThat(released()).hasSize(1);
    assertThat(released().get(0).outcome()).isEqualTo(Outcome.COMPLETED);
    advance(1000); // the cancelled timer does nothing
    assertThat(released()).hasSize(1);

    AdmissionSession late = admitted(); // a tail that starts during the shutdown
    late.running().endUnseen("body_mode_none");
    assertThat(inFlight()).isZero();
    assertThat(released()).hasSize(2);
    assertThat(pool().tailsHeld()).isZero();
  }

  /** Admitted with a body asking for {@code maxTokens} of streamed answer; no response yet. */
  private AdmissionSession admittedWithBody(int maxTokens) {
    long now = ticker.nanos();
    Subject subject = OneSlotPool.chat(tenant, now, null, Duration.ofSeconds(5).toNanos());
    AdmissionSession s =
        sessions.open(subject, new AdmissionSessionTest.Front(), Runnable::run, SessionSteps.NONE);
    byte[] body =
        ("{\"model\":\"gpt-4o\",\"max_tokens\":"
                + maxTokens
                + ",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"Say hello.\"}]}")
            .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    s.begin(false, false, -1, ticker.nanos());
    s.decideWithBody(body, 0, body.length, ticker.nanos());
    assertThat(s.facts().run().permit()).isTrue();
    return s;
  }

  private List<SessionEvent.ResponseEndUnseen> unseen() {
    return events.stream()
        .filter(SessionEvent.ResponseEndUnseen.class::isInstance)
        .map(SessionEvent.ResponseEndUnseen.class::cast)
        .toList();
  }

  @Test
  void streamedAnswersTeachTheTimePerOutputToken_anUnseenEndHoldsItsHeadersTimePlusItsReserve() {
    // a pool with no end seen yet holds an unseen end for its defaultServiceTime: a guess, said so
    assertThat(pool().serviceTimeGuessed()).isTrue();
    AdmissionSession first = admittedWithBody(400);
    advance(500);
    first.running().headers(200, "text/event-stream", true);
    first.running().endUnseen("body_mode_none");
    first.end(Outcome.CANCELLED);
    assertThat(unseen().get(0).guessed()).isTrue();
    advance(500); // 1 s after admission: OneSlotPool's defaultServiceTime
    assertThat(released()).hasSize(1);
    assertThat(released().get(0).heldNanos()).isEqualTo(1000 * MS);

    // 30 answers of a route that streams the body, seen to end: 150 ms to the first token plus
    // 4 ms per reserved output token (reserves of 100–400 tokens)
    for (int i = 0; i < 30; i++) {
      int max = 100 + (i % 4) * 100;
      AdmissionSession s = admittedWithBody(max);
      advance(150);
      s.running().headers(200, "text/event-stream", true);
      advance(4L * max);
      assertThat(s.release(Outcome.COMPLETED)).isTrue();
    }
    assertThat(pool().serviceTimeGuessed()).isFalse();

    // an unseen end whose first token came after 500 ms: held for 500 ms + 4 ms × 400 = 2.1 s, not
    // the guess (1 s) nor the median of the ends seen (≤ 1.75 s)
    AdmissionSession s = admittedWithBody(400);
    advance(500);
    s.running().headers(200, "text/event-stream", true);
    s.running().endUnseen("body_mode_none");
    s.end(Outcome.CANCELLED);
    assertThat(unseen().get(1).guessed()).isFalse();
    int before = released().size();
    advance(1500); // 2.0 s after admission
    assertThat(released()).hasSize(before);
    while (released().size() == before) {
      advance(5);
    }
    assertThat(released().get(before).heldNanos()).isBetween(2095 * MS, 2105 * MS);
  }

  @Test
  void aWholeAnswersHeadersTimeIsNoFirstToken_itsHoldIsNotLengthenedByIt() {
    for (int i = 0; i < 30; i++) {
      int max = 100 + (i % 4) * 100;
      AdmissionSession s = admittedWithBody(max);
      advance(150);
      s.running().headers(200, "text/event-stream", true);
      advance(4L * max);
      assertThat(s.release(Outcome.COMPLETED)).isTrue();
    }
    // a JSON answer's headers come with its end (here 1.5 s): the hold is the learned median, and
    // the stream's close releases it once that has passed
    AdmissionSession s = admittedWithBody(400);
    advance(1500);
    s.running().headers(200, "application/json", true);
    s.running().endUnseen("body_mode_none");
    int before = released().size();
    s.end(Outcome.CANCELLED);
    assertThat(released()).hasSize(before + 1);
    assertThat(released().get(before).heldNanos()).isEqualTo(1500 * MS);
  }
}
