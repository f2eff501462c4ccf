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
 * SessionEvent.Refused}) by the {@link IntakeNote} its check (or its planner, for a late request:
 * {@code sluice_intake_late_total}) left, and writes the note into the decision record's {@code
 * intake}. Thread-safe, as its meters are.
 */
public final class IntakeRecorder implements SessionListener, DecisionRecordPart {
  private final IntakeMetrics meters;

  public IntakeRecorder(IntakeMetrics meters) {
    this.meters = meters;
  }

  /** The events it acts on (its {@link #on} ignores every other type). */
  @Override
  public boolean hears(Class<? extends SessionEvent> type) {
    return type == SessionEvent.Answered.class || type == SessionEvent.Refused.class;
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
      var insteadOf = n.insteadOf();
      if (insteadOf != null) { // a late request: taken in instead of its pool's refusal, or not
        meters.late(s.pool().name(), s.requestClass().name(), insteadOf.code(), n.event());
      } else {
        meters.request(s.pool().name(), s.requestClass().name(), n.event());
      }
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
    var insteadOf = n.insteadOf();
    if (insteadOf != null) {
      ib.setInsteadOf(insteadOf.code());
    }
    StartWindow w = n.window();
    if (w != null) {
      ib.setStartAfterMs(w.earliestMillis()).setStartBeforeMs(w.latestMillis());
    }
    b.setIntake(ib);
  }
}
