package io.sluice.observability;

import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;
import io.sluice.core.session.Subject;

/**
 * Feeds the service-level meters ({@link SloMetrics}) from the released answers: time to first
 * token, time per output token, the answer's result (goodput when 2xx within its deadline) and the
 * output tokens wasted on a cancel or a missed deadline. Labels: the pool the answer ran in, the
 * request's class and its tenant's tier. Reads the events' facts only.
 */
public final class SloRecorder implements SessionListener {
  private final SloMetrics metrics;

  public SloRecorder(SloMetrics metrics) {
    this.metrics = metrics;
  }

  /** The events it acts on (its {@link #on} ignores every other type). */
  @Override
  public boolean hears(Class<? extends SessionEvent> type) {
    return type == SessionEvent.Released.class;
  }

  @Override
  public void on(SessionEvent event) {
    if (!(event instanceof SessionEvent.Released e) || !AnswerTimes.counted(e)) {
      return;
    }
    Subject s = e.facts().subject();
    SloMetrics.Meters m =
        metrics.forAnswer(
            e.facts().run().pool().name(), s.requestClass().name(), s.tenant().tier().name());
    long ttft = AnswerTimes.timeToFirstTokenNanos(e);
    if (ttft >= 0) {
      m.timeToFirstToken(ttft);
    }
    long tpot = AnswerTimes.timePerOutputTokenNanos(e);
    if (tpot >= 0) {
      m.timePerOutputToken(tpot);
    }
    String result = AnswerTimes.result(e);
    m.answer(result);
    String waste = AnswerTimes.waste(result);
    long out = AnswerTimes.outputTokens(e);
    if (waste != null && out > 0) {
      m.wasted(waste, out);
    }
  }
}
