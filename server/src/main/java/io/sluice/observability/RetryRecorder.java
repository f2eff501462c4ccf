package io.sluice.observability;

import io.sluice.api.v1.AdmissionRecord;
import io.sluice.core.admission.Outcome;
import io.sluice.core.retry.Attempt;
import io.sluice.core.retry.RetryAttemptCheck;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;
import io.sluice.core.session.Subject;

/**
 * Retry control's listener and decision-record part, registered by its feature beside its check
 * ({@link RetryAttemptCheck}): counts each classified attempt (the {@link SessionEvent.Noted} the
 * check emits) and each retry that honoured a Retry-After and then completed with a 2xx on the
 * process's {@link RetryMetrics}, and writes the attempt into the decision record. Thread-safe, as
 * its meters are.
 */
public final class RetryRecorder implements SessionListener, DecisionRecordPart {
  private final RetryMetrics meters;

  public RetryRecorder(RetryMetrics meters) {
    this.meters = meters;
  }

  /** The events it acts on (its {@link #on} ignores every other type). */
  @Override
  public boolean hears(Class<? extends SessionEvent> type) {
    return type == SessionEvent.Released.class || type == SessionEvent.Noted.class;
  }

  /** The notes it acts on: its check's attempts. */
  @Override
  public boolean hearsNote(Class<?> noteType) {
    return Attempt.class.isAssignableFrom(noteType);
  }

  @Override
  public void on(SessionEvent event) {
    if (event instanceof SessionEvent.Released e) {
      released(e);
    } else if (event instanceof SessionEvent.Noted e && e.note() instanceof Attempt a) {
      Subject s = e.subject();
      // at the request's arrival (a ticker time read already): no clock read per attempt
      meters.attempted(s.pool().name(), s.requestClass().name(), a, s.arrivalNanos());
    }
  }

  private void released(SessionEvent.Released e) {
    RequestFacts f = e.facts();
    if (RetryAttemptCheck.attempt(f).retryAfter().equals(Attempt.HONOURED)
        && e.outcome() == Outcome.COMPLETED
        && f.end().upstreamStatus() / 100 == 2) {
      Subject s = f.subject();
      meters.honouredSucceeded(s.pool().name(), s.requestClass().name());
    }
  }

  @Override
  public void write(RequestFacts f, AdmissionRecord.Builder b) {
    Attempt a = RetryAttemptCheck.attempt(f);
    if (a.classified()) {
      io.sluice.api.v1.Attempt.Builder ab =
          io.sluice.api.v1.Attempt.newBuilder()
              .setNumber(a.number())
              .setClassification(a.kind())
              .setSignal(a.signal())
              .setRetryAfter(a.retryAfter())
              .setPreviousReason(a.previousReason())
              .setDuplicate(a.duplicate())
              .setStoreFailed(a.storeFailed());
      if (!Double.isNaN(a.budgetTokens())) {
        ab.setBudgetTokens(a.budgetTokens());
      }
      b.setAttempt(ab);
    }
  }
}
