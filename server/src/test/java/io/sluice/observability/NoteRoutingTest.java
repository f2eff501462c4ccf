package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MockClock;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.sluice.core.budget.BudgetCheck;
import io.sluice.core.budget.BudgetNote;
import io.sluice.core.estimate.NativeCheck;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.retry.Attempt;
import io.sluice.core.session.OneSlotPool;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;
import io.sluice.core.session.Subject;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The recorders of the checks' notes, composed as a runtime composes them ({@link
 * SessionListener#of}): each note reaches only the recorders that hear its class ({@link
 * SessionListener#hearsNote}), and what they count is what they counted when every recorder heard
 * every note: the same scrape, series and values.
 */
class NoteRoutingTest {
  private static final Subject SUBJECT =
      OneSlotPool.chat(
          new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0)), 1_000L, null, 5_000_000_000L);

  private static final List<SessionEvent> NOTES =
      List.of(
          new SessionEvent.Noted(SUBJECT, RetryMetricsTest.attempt(true, Attempt.NONE)),
          new SessionEvent.Noted(
              SUBJECT, new NativeCheck("token_usage", "complete", "agree", true)),
          new SessionEvent.Noted(SUBJECT, RetryMetricsTest.attempt(false, "rate_limited")),
          new SessionEvent.Noted(SUBJECT, "a feature's note no recorder reads"),
          new SessionEvent.Noted(SUBJECT, new NativeCheck("token_usage", "partial", "none", false)),
          new SessionEvent.Noted(SUBJECT, RetryMetricsTest.attempt(false, Attempt.NONE)));

  private static PrometheusMeterRegistry registry() {
    return new PrometheusMeterRegistry(
        PrometheusConfig.DEFAULT, new PrometheusRegistry(), new MockClock());
  }

  /** The recorders that hear notes, as the features register them. */
  private static List<SessionListener> recorders(PrometheusMeterRegistry r) {
    return List.of(
        new RetryRecorder(new RetryMetrics(r, () -> 7_000_000_000_000L)),
        new BudgetRecorder(new BudgetMetrics(r, () -> 0L)),
        new NativeMetadataRecorder(new NativeMetadataMetrics(r, () -> 0L)));
  }

  @Test
  void routedByTheNotesClass_theScrapeIsThatOfEveryRecorderHearingEveryNote() {
    PrometheusMeterRegistry routed = registry();
    SessionListener fanOut = SessionListener.of(recorders(routed).toArray(new SessionListener[0]));
    PrometheusMeterRegistry every = registry();
    List<SessionListener> each = recorders(every);
    for (int round = 0; round < 2; round++) { // the second: the routes found, held
      for (SessionEvent e : NOTES) {
        fanOut.on(e);
        each.forEach(l -> l.on(e));
      }
    }
    String scrape = routed.scrape();
    assertThat(scrape)
        .contains(
            "sluice_attempts_total{class=\"interactive\",kind=\"retry\",pool=\"gpu\",reason=\"none\"} 2.0")
        .contains("sluice_native_metadata_total{");
    assertThat(scrape).isEqualTo(every.scrape());
  }

  @Test
  void eachRecorderHearsTheNotesOfItsCheck_andNoOther() {
    List<SessionListener> r = recorders(registry());
    assertThat(r.get(0).hearsNote(Attempt.class)).isTrue();
    assertThat(r.get(1).hearsNote(BudgetNote.class)).isTrue();
    assertThat(r.get(1).hearsNote(BudgetCheck.Refused.class)).isTrue();
    assertThat(r.get(2).hearsNote(NativeCheck.class)).isTrue();
    for (SessionListener l : r) {
      assertThat(l.hearsNote(String.class)).as(l.getClass().getSimpleName()).isFalse();
    }
    assertThat(r.get(0).hearsNote(NativeCheck.class)).isFalse();
    assertThat(r.get(2).hearsNote(Attempt.class)).isFalse();
  }
}
