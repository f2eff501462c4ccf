package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
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
 * Listeners composed with {@link SessionListener#of}: each hears every event in order, and one that
 * fails (a learner's bug) neither keeps the event from the others nor a permit from its release.
 */
class SessionListenerTest {
  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(1_800_000_000_000L), ZoneOffset.UTC);
  private final TenantQuotas quotas =
      new TenantQuotas(
          new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
          "test_",
          TenantQuotas.FailureMode.OPEN);
  private final AdmissionController controller = OneSlotPool.controller();
  private final List<SessionEvent> events = new ArrayList<>();

  @Test
  void eachListenerHearsEachEvent_aFailureIsThrownOnceAllHaveRun() {
    List<String> heard = new ArrayList<>();
    SessionEvent e = new SessionEvent.EstimateFellBack("no_content_length");
    SessionListener all =
        SessionListener.of(
            x -> heard.add("first"),
            x -> {
              throw new IllegalStateException("learner bug");
            },
            x -> heard.add("third"),
            x -> {
              throw new IllegalArgumentException("second bug");
            });
    assertThatThrownBy(() -> all.on(e))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("learner bug")
        .satisfies(t -> assertThat(t.getSuppressed()).hasSize(1));
    assertThat(heard).containsExactly("first", "third");
  }

  @Test
  void aFailingLearnerAtTheRelease_thePermitIsBack_theRecorderHearsTheRelease() {
    SessionListener failing =
        x -> {
          if (x instanceof SessionEvent.Released) {
            throw new IllegalStateException("learner bug");
          }
        };
    Sessions sessions =
        OneSlotPool.sessions(
            controller,
            quotas,
            ticker,
            clock,
            (delayNanos, task) -> () -> {},
            SessionListener.of(failing, events::add));
    long now = ticker.nanos();
    Subject subject =
        OneSlotPool.chat(
            new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0)),
            now,
            null,
            Duration.ofSeconds(5).toNanos());
    AdmissionSession s =
        sessions.open(subject, new AdmissionSessionTest.Front(), Runnable::run, SessionSteps.NONE);
    s.begin(true, true, 0, now);
    assertThat(s.facts().run().permit()).isTrue();
    s.running().headers(200, "application/json", true);

    assertThatThrownBy(() -> s.release(Outcome.COMPLETED)).hasMessage("learner bug");
    assertThat(controller.pool("gpu").snapshot(ticker.nanos()).requestsInFlight()).isZero();
    assertThat(events).filteredOn(SessionEvent.Released.class::isInstance).hasSize(1);
    assertThat(s.release(Outcome.COMPLETED)).as("released once").isFalse();
  }

  /** A listener that hears only {@code types}, and notes each event it is given. */
  private static SessionListener hearing(List<String> heard, String name, Class<?>... types) {
    return new SessionListener() {
      @Override
      public boolean hears(Class<? extends SessionEvent> type) {
        return List.of(types).contains(type);
      }

      @Override
      public void on(SessionEvent event) {
        heard.add(name + ":" + event.getClass().getSimpleName());
      }
    };
  }

  @Test
  void eachEventGoesOnlyToTheListenersThatHearItsType_inOrder() {
    List<String> heard = new ArrayList<>();
    SessionListener all =
        SessionListener.of(
            hearing(heard, "released", SessionEvent.Released.class),
            x -> heard.add("every:" + x.getClass().getSimpleName()),
            hearing(heard, "noted", SessionEvent.Noted.class, SessionEvent.EstimateFellBack.class),
            hearing(heard, "none"));
    all.on(new SessionEvent.EstimateFellBack("no_content_length"));
    all.on(SessionEvent.QuotaStoreFailed.OPEN);
    assertThat(heard)
        .containsExactly(
            "every:EstimateFellBack", "noted:EstimateFellBack", "every:QuotaStoreFailed");
    assertThat(all.hears(SessionEvent.Degraded.class)).as("the lambda hears all").isTrue();
    SessionListener few =
        SessionListener.of(hearing(heard, "released", SessionEvent.Released.class));
    assertThat(few.hears(SessionEvent.Released.class)).isTrue();
    assertThat(few.hears(SessionEvent.Admitted.class)).isFalse();
  }

  /** A listener that hears notes of {@code noteTypes} only, and notes each note it is given. */
  private static SessionListener notes(List<String> heard, String name, Class<?>... noteTypes) {
    return new SessionListener() {
      @Override
      public boolean hears(Class<? extends SessionEvent> type) {
        return type == SessionEvent.Noted.class;
      }

      @Override
      public boolean hearsNote(Class<?> noteType) {
        return List.of(noteTypes).contains(noteType);
      }

      @Override
      public void on(SessionEvent event) {
        heard.add(name + ":" + ((SessionEvent.Noted) event).note());
      }
    };
  }

  @Test
  void aNoteGoesOnlyToTheListenersThatHearItsClass_inOrder() {
    List<String> heard = new ArrayList<>();
    SessionListener all =
        SessionListener.of(
            notes(heard, "text", String.class),
            x -> heard.add("every:" + ((SessionEvent.Noted) x).note()),
            notes(heard, "number", Integer.class, String.class),
            notes(heard, "none"));
    for (int round = 0; round < 2; round++) { // the second: each class's route is held
      all.on(new SessionEvent.Noted(null, "a"));
      all.on(new SessionEvent.Noted(null, 7));
      all.on(new SessionEvent.Noted(null, 2.5));
    }
    List<String> once =
        List.of("text:a", "every:a", "number:a", "every:7", "number:7", "every:2.5");
    assertThat(heard.subList(0, 6)).containsExactlyElementsOf(once);
    assertThat(heard.subList(6, 12)).containsExactlyElementsOf(once);
    assertThat(all.hearsNote(Double.class)).isTrue(); // the listener that hears every note
    assertThat(SessionListener.of(notes(heard, "text", String.class)).hearsNote(Double.class))
        .isFalse();
  }
}
