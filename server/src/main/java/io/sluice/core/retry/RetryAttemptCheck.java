package io.sluice.core.retry;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Reason;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.CheckChain;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;
import io.sluice.core.session.Signals;
import io.sluice.core.session.Subject;
import java.util.concurrent.CompletionStage;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/**
 * Retry control, right after the request rate: classifies the attempt (original or retry, early or
 * after its Retry-After), takes its operation's in-flight claim, and refuses a duplicate, an early
 * retry or a retry over its budget. The claim is given back exactly once; a shadow pass keeps it
 * until it ends (the operation runs). Every enforced refusal is remembered, so the attempt that
 * follows is early or honours it. In the chain only when retry control is on ({@link #factory}).
 *
 * <p>It reads the attempt signals from the request's trusted {@link Subject#signals()} (the
 * resolver reads them while retry control is on), notes the {@link Attempt} on its hold ({@link
 * #attempt(RequestFacts)} reads it back) and emits it as a {@link SessionEvent.Noted}.
 */
public final class RetryAttemptCheck implements AdmissionCheck<Attempt> {
  /** Its place: right after the tenant's request rate, at the headers. */
  public static final int ORDER = CheckChain.TENANT_RATE + 50;

  /**
   * The signal keys it reads ({@code signals.retryCount}, {@code signals.attemptCount}, {@code
   * signals.client}: the anonymous tenant's retries are counted per client address).
   */
  public static final String RETRY_COUNT = "retryCount";

  public static final String ATTEMPT_COUNT = "attemptCount";

  public static final String CLIENT = "client";

  private final RetryControl retries;
  private final ToLongFunction<String> poolRetryAfter; // made once: no capture per request
  private final SessionListener listener;

  public RetryAttemptCheck(
      RetryControl retries, AdmissionController controller, SessionListener l) {
    this.retries = retries;
    this.poolRetryAfter = controller::tenantRetryAfterSeconds;
    this.listener = l;
  }

  /** The check of a snapshot with {@code retries}; left out of the chain when it is off. */
  public static AdmissionCheck.Factory factory(RetryControl retries) {
    return snapshot ->
        retries.enabled()
            ? new RetryAttemptCheck(retries, snapshot.controller(), snapshot.listener())
            : null;
  }

  /** How retry control classified the request ({@link Attempt#UNCLASSIFIED} when it did not). */
  public static Attempt attempt(RequestFacts f) {
    Attempt a = f.note(Attempt.class);
    return a == null ? Attempt.UNCLASSIFIED : a;
  }

  /** What the request's trusted signals say of its attempt. */
  static AttemptSignals signals(Subject s) {
    Signals in = s.signals();
    String retryCount = in.get(RETRY_COUNT);
    String attemptCount = in.get(ATTEMPT_COUNT);
    String client = in.get(CLIENT);
    if (retryCount == null && attemptCount == null && client == null) {
      return AttemptSignals.NONE; // most requests: nothing allocated
    }
    return new AttemptSignals(
        AttemptSignals.parse(retryCount), AttemptSignals.parse(attemptCount), client);
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
  public boolean appliesToAll() { // every attempt is classified: the chain calls no applies
    return true;
  }

  @Override
  public CompletionStage<Attempt> ask(Request r) {
    Subject s = r.subject();
    String pool = s.pool().name();
    return retries.check(
        pool, s.route(), s.tenant().id(), s.operationId(), signals(s), poolRetryAfter);
  }

  @Override
  public Verdict answered(Attempt a, Request r) {
    listener.on(new SessionEvent.Noted(r.subject(), a));
    return new Claim(retries, a);
  }

  @Override
  public void refused(Request r, Reason why, long retryAfterSeconds) {
    Subject s = r.subject();
    retries.remember(
        s.pool().name(), s.tenant().id(), signals(s), s.operationId(), why, retryAfterSeconds);
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
    public Attempt note() {
      return attempt;
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
