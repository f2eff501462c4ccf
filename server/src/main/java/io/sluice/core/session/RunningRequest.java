package io.sluice.core.session;

import io.sluice.core.adapt.AnswerSource;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.estimate.Usage;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.session.SessionSteps.Step;
import java.util.concurrent.Executor;
import org.jspecify.annotations.Nullable;

/**
 * A request as it runs upstream, and its end: its permit (or shadow mode's pass, {@link
 * ShadowVerdicts}), the response metered ({@link ResponseMeter}), a response end the front end will
 * not see ({@link HeldTail}), and the release, exactly once on every path (the permit guards it; a
 * pass ends once): the checks' holds given back, the token reservation reconciled with the charge
 * ({@link ChargeRule}), {@link SessionEvent.Released} emitted with the session's facts. One per
 * session, touched in its serial context; {@link #runs} is safe from any thread.
 */
final class RunningRequest {
  private final Sessions env;
  private final SessionSteps steps;
  private final CheckRun checks;
  private final RequestCost cost;
  private final @Nullable ShadowVerdicts shadow;
  private final Executor serial;
  private final AdmissionSession session; // its facts, for the Released event
  private final ResponseMeter response;
  private @Nullable HeldTail tail; // once the response's end goes unseen (rare): null until then
  private volatile @Nullable Permit permit; // read by the front end's idle sweep on another thread

  RunningRequest(
      Sessions env,
      Subject subject,
      Executor serial,
      SessionSteps steps,
      CheckRun checks,
      RequestCost cost,
      @Nullable ShadowVerdicts shadow,
      AdmissionSession session) {
    this.env = env;
    this.steps = steps;
    this.checks = checks;
    this.cost = cost;
    this.shadow = shadow;
    this.serial = serial;
    this.session = session;
    this.response = new ResponseMeter(env, subject);
  }

  /** Held for a predicted tail and not released yet ({@link HeldTail#holds}). */
  private boolean tailHolds() {
    HeldTail t = tail;
    return t != null && t.holds();
  }

  /** The pool granted {@code p}: from here every path releases it. */
  void granted(Permit p) {
    permit = p;
  }

  @Nullable Permit permit() {
    return permit;
  }

  /** Shadow mode let it through without a permit (ended or not); safe to read from any thread. */
  boolean passed() {
    ShadowVerdicts sh = shadow;
    return sh != null && sh.passed();
  }

  /** Let through to the upstream (released or not): with a permit, or a shadow pass. */
  boolean runs() {
    return permit != null || passed();
  }

  /** The response headers ({@link AdmissionSession#responseHeaders}). */
  void headers(
      int status, String contentType, boolean countStatus, long retryAfterNanos, AnswerSource src) {
    response.headers(
        status, contentType, countStatus, retryAfterNanos, src, permit, cost.estimate());
  }

  /** A response body chunk, of the request run in {@code pool}. */
  void body(byte[] data, int offset, int length, boolean last, PoolPolicy pool) {
    response.body(data, offset, length, last, permit, cost.estimate(), pool);
  }

  /** Releases the permit (true for the call that did), reconciling the reservation with usage. */
  boolean release(Outcome outcome) {
    HeldTail t = tail;
    if (t != null && t.holds()) { // held for a predicted tail: the front end's end is the close
      return t.frontDone();
    }
    Permit p = permit;
    if (p == null) {
      return endPass(outcome);
    }
    long now = env.ticker().nanos();
    if (!p.release(outcome, now)) {
      return false;
    }
    releaseHolds();
    steps.at(Step.RELEASE);
    steps.at(Step.METRICS);
    Usage u = endUsage(outcome); // the learners hear the release (ReserveLearner, AdaptiveSignals)
    steps.at(Step.DECISION_LOG);
    env.listener()
        .on(new SessionEvent.Released(session.facts(), outcome, now - p.admittedAtNanos(), u));
    return true;
  }

  /** Shadow: a request let through without a permit ends (once, as a release would). */
  private boolean endPass(Outcome outcome) {
    ShadowVerdicts sh = shadow;
    if (sh == null || !sh.end()) {
      return false;
    }
    checks.release(AdmissionCheck.Release.ENDED); // what the pass kept: the retry claim
    long now = env.ticker().nanos();
    steps.at(Step.RELEASE);
    Usage u = endUsage(outcome); // shadow mode learns too: enforcing starts warmed
    steps.at(Step.DECISION_LOG);
    env.listener()
        .on(new SessionEvent.Released(session.facts(), outcome, now - sh.passedAtNanos(), u));
    return true;
  }

  /**
   * The usage the response reported, and the tenant's token reservation reconciled with what the
   * request is charged ({@link ChargeRule}).
   */
  private Usage endUsage(Outcome outcome) {
    TokenEstimate e = cost.estimate();
    Usage u = response.end(outcome, e);
    var r = checks.held(TokenReservationCheck.Reservation.class);
    if (r != null && e != null) {
      r.reconcile(response.charge());
    }
    return u;
  }

  /** The front end is done with a request that runs: released with {@code outcome} (once). */
  void end(Outcome outcome) {
    try {
      release(outcome);
    } finally {
      if (!tailHolds()) { // a held tail keeps the tenant's slot until it is released
        releaseHolds(); // a no-op unless the release above failed before giving it back
      }
    }
  }

  /** Last resort of a front end whose cleanup failed part-way: the permit goes back silently. */
  void releaseQuietly(Outcome outcome) {
    if (tailHolds()) {
      return; // the tail's timer (or shutdown) releases it
    }
    Permit p = permit;
    try {
      if (p != null) {
        p.release(outcome, env.ticker().nanos()); // a no-op if it went back already
      }
    } finally {
      releaseHolds();
    }
  }

  /** Gives the checks' holds back, once (every end path calls it; only the first does anything). */
  void releaseHolds() {
    checks.release(AdmissionCheck.Release.ENDED);
  }

  /** The response's end will not be seen ({@link AdmissionSession#responseEndUnseen}). */
  void endUnseen(String cause, Subject subject) {
    HeldTail t = tail;
    if (t == null) {
      t = new HeldTail(env, serial, this);
      tail = t;
    }
    t.unseen(cause, permit, subject, response.eventStream());
  }

  /** The response's end was seen after all: the tail hold is called off. */
  void endSeen() {
    HeldTail t = tail;
    if (t != null) {
      t.seen();
    }
  }

  /** Output tokens the pool counts for this request now (the reserve, or grown past it). */
  long outputCharge() {
    return response.outputCharge(cost.estimate());
  }

  /** For the decision record: the upstream's answer and the charge, with {@code p} its permit. */
  RequestFacts.End facts(@Nullable Permit p) {
    HeldTail t = tail;
    return response.facts(t == null ? null : t.cause(), p);
  }
}
