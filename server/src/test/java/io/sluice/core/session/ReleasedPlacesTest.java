package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchRuntimeException;

import io.sluice.core.admission.Outcome;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The released event's fan-out ({@link ListenerFanOut}), a call site per place for the first {@link
 * ListenerFanOut#RELEASED_PLACES} and a loop past them: for every count of listeners around the
 * places, each hears the release once, in order, and of those that throw (seeded) the first failure
 * is thrown once all have run, the others suppressed in it.
 */
class ReleasedPlacesTest {
  private static final SessionEvent RELEASED = released();

  /** A real session's release event. */
  private static SessionEvent released() {
    FakeTicker ticker = new FakeTicker();
    List<SessionEvent> events = new ArrayList<>();
    Sessions sessions = OneSlotPool.recording(ticker, events);
    long now = ticker.nanos();
    AdmissionSession s =
        sessions.open(
            OneSlotPool.chat(
                new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0)),
                now,
                null,
                Duration.ofSeconds(5).toNanos()),
            new AdmissionSessionTest.Front(),
            Runnable::run,
            SessionSteps.NONE);
    s.begin(true, true, 0, now);
    s.release(Outcome.COMPLETED);
    return events.stream()
        .filter(SessionEvent.Released.class::isInstance)
        .findFirst()
        .orElseThrow();
  }

  static List<Object[]> counts() {
    List<Object[]> out = new ArrayList<>();
    for (int n = 0; n <= ListenerFanOut.RELEASED_PLACES + 3; n++) {
      out.add(new Object[] {n, 31L * n + 5});
    }
    return out;
  }

  @ParameterizedTest
  @MethodSource("counts")
  void eachListenerHearsTheReleaseOnce_inOrder_theFirstFailureThrownAfterAll(int n, long seed) {
    Random rnd = new Random(seed);
    List<Integer> heard = new ArrayList<>();
    List<Integer> throwing = new ArrayList<>();
    SessionListener[] listeners = new SessionListener[n];
    for (int i = 0; i < n; i++) {
      int at = i;
      boolean fails = rnd.nextInt(3) == 0;
      if (fails) {
        throwing.add(at);
      }
      // a class of its own per place would be the runtime's case; lambdas of one site suffice here
      listeners[i] =
          e -> {
            assertThat(e).isSameAs(RELEASED);
            heard.add(at);
            if (fails) {
              throw new IllegalStateException("listener " + at);
            }
          };
    }
    RuntimeException thrown =
        catchRuntimeException(() -> SessionListener.of(listeners).on(RELEASED));

    List<Integer> all = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      all.add(i);
    }
    assertThat(heard).isEqualTo(all);
    if (throwing.isEmpty()) {
      assertThat(thrown).isNull();
    } else {
      assertThat(thrown).hasMessage("listener " + throwing.get(0));
      assertThat(thrown.getSuppressed()).hasSize(throwing.size() - 1);
    }
  }
}
