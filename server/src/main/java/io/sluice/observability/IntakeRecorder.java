package io.sluice.observability;

import io.sluice.api.v1.AdmissionRecord;
import io.sluice.core.intake.IntakeNote;
import io.sluice.core.intake.StartWindow;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;
import io.sluice.core.session.Subject;

/**
 * Background intake's listener and decision-record part, registered by its feature beside its
 * checks: counts each request intake answered ({@link SessionEvent.Answered}) or refused ({@link
 * SessionEvent.Refused}) by the {@link IntakeNote} its check left, and writes the note into the
 * decision record's {@code intake}. Thread-safe, as its meters are.
 */
public final class IntakeRecorder implements SessionListener, DecisionRecordPart {
  private final IntakeMetrics meters;

  public IntakeRecorder(IntakeMetrics meters) {
    this.meters = meters;
  }

  @Override
  public void on(SessionEvent event) {
    RequestFacts f;
    if (event instanceof SessionEvent.Answered e) {
      f = e.facts();
    } else if (event instanceof SessionEvent.Refused e) {
      f = e.facts();
    } else {
      return;
    }
    IntakeNote n = IntakeNote.of(f);
    if (n != null) {
      Subject s = f.subject();
      meters.request(s.pool().name(), s.requestClass().name(), n.event());
    }
  }

  @Override
  public void write(RequestFacts f, AdmissionRecord.Builder b) {
    IntakeNote n = IntakeNote.of(f);
    if (n == null) {
      return;
    }
    io.sluice.api.v1.Intake.Builder ib = io.sluice.api.v1.Intake.newBuilder().setEvent(n.event());
    if (n.jobId() != null) {
      ib.setJobId(n.jobId());
    }
    if (n.status() != null) {
      ib.setStatus(n.status());
    }
    ib.setPosition(n.position());
    StartWindow w = n.window();
    if (w != null) {
      ib.setStartAfterMs(w.earliestMillis()).setStartBeforeMs(w.latestMillis());
    }
    b.setIntake(ib);
  }
}
