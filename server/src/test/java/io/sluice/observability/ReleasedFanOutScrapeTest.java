package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MockClock;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.sluice.core.admission.Outcome;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.OneSlotPool;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;
import io.sluice.core.session.SessionSteps;
import io.sluice.core.session.Sessions;
import io.sluice.core.time.FakeTicker;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The events of a seeded mix of admitted, refused, queued and released requests (real sessions on
 * one slot, a tenant with a request rate), given to the recorders composed as a runtime composes
 * them ({@link SessionListener#of}) and to each recorder directly: the same scrape, every series
 * and value. More listeners hear the release than the fan-out has call sites of their own, so both
 * its places and its loop are in it.
 */
class ReleasedFanOutScrapeTest {
  private static final Outcome[] OUTCOMES = Outcome.values();

  private static PrometheusMeterRegistry registry() {
    return new PrometheusMeterRegistry(
        PrometheusConfig.DEFAULT, new PrometheusRegistry(), new MockClock());
  }

  /**
   * The recorders, then more that hear the release, each on a registry of its own ({@code r}: one
   * per listener), so a place the fan-out skips or calls twice changes a scrape.
   */
  private static List<SessionListener> recorders(PrometheusMeterRegistry[] r, FakeTicker ticker) {
    List<SessionListener> out = new ArrayList<>();
    out.add(new SloRecorder(new SloMetrics(r[0], ticker::nanos)));
    out.add(new RetryRecorder(new RetryMetrics(r[1], ticker::nanos)));
    out.add(new NativeMetadataRecorder(new NativeMetadataMetrics(r[2], ticker::nanos)));
    for (int i = 3; i < r.length; i++) {
      out.add(
          new SessionRecorder(
              new AdmissionMetrics(r[i], ticker::nanos),
              new DecisionLog(DecisionLogSettings.every(), line -> {}, null),
              List.of()));
    }
    return out;
  }

  /** Each registry's scrape, in order. */
  private static String scrapes(PrometheusMeterRegistry[] r) {
    StringBuilder out = new StringBuilder();
    for (PrometheusMeterRegistry one : r) {
      out.append(one.scrape()).append("\n----\n");
    }
    return out.toString();
  }

  private static PrometheusMeterRegistry[] registries() {
    PrometheusMeterRegistry[] r = new PrometheusMeterRegistry[LISTENERS];
    for (int i = 0; i < r.length; i++) {
      r[i] = registry();
    }
    return r;
  }

  // more than the fan-out's places: its loop is in it too
  private static final int LISTENERS = 13;

  /** The events of {@code ops} seeded steps: open a request, end the oldest, let time pass. */
  private static List<SessionEvent> mix(long seed, int ops) {
    FakeTicker ticker = new FakeTicker();
    List<SessionEvent> events = new ArrayList<>();
    Sessions sessions = OneSlotPool.recording(ticker, events);
    Tenant free = new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0));
    Tenant rated = new Tenant("beta", new TierPolicy("free", 1, 0, 3, 0, 0));
    Random rnd = new Random(seed);
    Deque<AdmissionSession> open = new ArrayDeque<>();
    Deque<RecordingFront> fronts = new ArrayDeque<>();
    for (int i = 0; i < ops; i++) {
      int op = rnd.nextInt(3);
      if (op == 0 || open.isEmpty()) {
        long now = ticker.nanos();
        RecordingFront front = new RecordingFront(false);
        AdmissionSession s =
            sessions.open(
                OneSlotPool.chat(
                    rnd.nextBoolean() ? free : rated, now, null, Duration.ofSeconds(5).toNanos()),
                front,
                Runnable::run,
                SessionSteps.NONE);
        s.begin(true, true, 0, now);
        open.add(s);
        fronts.add(front);
      } else if (op == 1) {
        AdmissionSession s = open.poll();
        if (fronts.poll().calls.contains("admitted") && rnd.nextBoolean()) {
          s.running().headers(rnd.nextBoolean() ? 200 : 503, "application/json", true);
        }
        s.release(OUTCOMES[rnd.nextInt(OUTCOMES.length)]);
      } else {
        ticker.advance(Duration.ofMillis(rnd.nextInt(400)));
      }
    }
    return events;
  }

  @ParameterizedTest
  @ValueSource(longs = {1L, 7L, 20261207L})
  void aSeededMix_theFanOutsScrapeIsThatOfEachRecorderHearingEachEvent(long seed) {
    List<SessionEvent> events = mix(seed, 200);
    assertThat(events).filteredOn(SessionEvent.Released.class::isInstance).hasSizeGreaterThan(2);
    assertThat(events).filteredOn(SessionEvent.Refused.class::isInstance).isNotEmpty();

    FakeTicker ticker = new FakeTicker();
    PrometheusMeterRegistry[] routed = registries();
    SessionListener fanOut =
        SessionListener.of(recorders(routed, ticker).toArray(new SessionListener[0]));
    PrometheusMeterRegistry[] every = registries();
    List<SessionListener> each = recorders(every, ticker);
    for (SessionEvent e : events) {
      fanOut.on(e);
      each.forEach(l -> l.on(e));
    }
    String scrape = scrapes(routed);
    assertThat(scrape)
        .contains("sluice_permits_released_total{")
        .contains("sluice_decisions_total{");
    assertThat(scrape).isEqualTo(scrapes(every));
  }
}
