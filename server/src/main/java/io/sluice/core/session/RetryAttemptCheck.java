package io.sluice.core.session;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Reason;
import io.sluice.core.retry.Attempt;
import io.sluice.core.retry.RetryControl;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Retry control, right after the request rate: classifies the attempt (original or retry, early or
 * after its Retry-After), takes its operation's in-flight claim, and refuses a duplicate, an early
 * retry or a retry over its budget. The claim is given back exactly once; a shadow pass keeps it
 * until it ends (the operation runs). Every enforced refusal is remembered, so the attempt that
 * follows is early or honours it. In the chain only when retry control is on.
 */
final class RetryAttemptCheck implements AdmissionCheck<Attempt> {
  private final RetryControl retries;
  private final AdmissionController controller;
  private final SessionListener listener;

  RetryAttemptCheck(RetryControl retries, AdmissionController controller, SessionListener l) {
    this.retries = retries;
    this.controller = controller;
    this.listener = l;
  }

  @Override
  public Stage stage() {
    return Stage.HEADERS;
  }

  @Override
  public boolean applies(Request r) {
    return true;
  }

  @Override
  public CompletionStage<Attempt> ask(Request r) {
    Subject s = r.subject();
    String pool = s.pool().name();
    return retries.check(
        pool,
        s.route(),
        s.tenant().id(),
        s.operationId(),
        s.attempt(),
        () -> controller.tenantRetryAfterSeconds(pool));
  }

  @Override
  public Verdict answered(Attempt a, Request r) {
    listener.on(new SessionEvent.Attempted(r.subject(), a));
    return new Claim(retries, a);
  }

  @Override
  public void refused(Request r, Reason why, long retryAfterSeconds) {
    Subject s = r.subject();
    retries.remember(
        s.pool().name(), s.tenant().id(), s.attempt(), s.operationId(), why, retryAfterSeconds);
  }

  /** The attempt as classified, and its operation's in-flight claim (when it took one). */
  static final class Claim extends Held {
    private final RetryControl retries;
    final Attempt attempt;

    Claim(RetryControl retries, Attempt attempt) {
      this.retries = retries;
      this.attempt = attempt;
    }

    @Override
    public @Nullable Refusal refusal() {
      Attempt.Refusal r = attempt.refusal();
      return r == null
          ? null
          : new Refusal(r.reason(), r.status(), r.retryAfterSeconds(), r.message());
    }

    @Override
    protected boolean keptByPass(boolean wouldReject) {
      return true; // a shadow pass runs on: the operation stays claimed until it ends
    }

    @Override
    protected void release(Release how) {
      if (attempt.claimKey() != null) {
        retries.complete(attempt);
      }
    }
  }
}
