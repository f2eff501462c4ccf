package io.sluice.core.session;

import io.sluice.core.adapt.AnswerSource;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.estimate.Usage;
import io.sluice.core.session.SessionSteps.Step;
import org.jspecify.annotations.Nullable;

/**
 * A request as it runs upstream, and its end: its permit (or shadow mode's pass, {@link
 * ShadowVerdicts}), the response metered ({@link ResponseMeter}), a response end the front end will
 * not see ({@link HeldTail}), and the release, exactly once on every path (the permit guards it; a
 * pass ends once): the checks' holds given back, the token reservation reconciled with the charge
 * ({@link ChargeRule}), {@link SessionEvent.Released} emitted with the session's facts. One per
 * session, touched in its serial context; {@link #runs} is safe from any thread.
 *
 * <p>The front end's side of the session ({@link AdmissionSession#running}): what it answers the
 * decision with (the {@link #plan}, the queue wait, shadow mode's would-be verdict) and the
 * response it meters ({@link #headers}, {@link #body}, an end it will not see).
 */
public final class RunningRequest {
  // its parts (env, steps, checks, cost, notes, shadow, serial) read from the session, not copied
  private final AdmissionSession session; // and its facts, for the Released event
  // made at the first response event (most cancels and refusals come before any): null until then
  private @Nullable ResponseMeter response;
  private Charge unmetered = Charge.NONE; // the end's charge while no meter was made
  private @Nullable HeldTail tail; // once the response's end goes unseen (rare): null until then
  private volatile @Nullable Permit permit; // read by the front end's idle sweep on another thread
  private UpstreamPlan plan; // as the planner planned it (as asked until the decision)
  private RequestFacts.@Nullable Run planFacts; // the plan's facts, kept while neither changes

  RunningRequest(AdmissionSession session) {
    this.session = session;
    this.plan = UpstreamPlan.asAsked(session.subject().pool());
  }

  /** How the request runs upstream: its pool, body, headers, engine priority, degrade. */
  public UpstreamPlan plan() {
    return plan;
  }

  void plan(UpstreamPlan p) {
    if (p != plan) {
      plan = p;
      planFacts = null;
    }
  }

  /** The response's meter, made at its first event. */
  private ResponseMeter meter() {
    ResponseMeter m = response;
    if (m == null) {
      m = new ResponseMeter(session.env, session.subject());
      m.charged(unmetered); // a response event after the end keeps its charge, as before
      response = m;
    }
    return m;
  }

  /** Held for a predicted tail and not released yet ({@link HeldTail#holds}). */
  private boolean tailHolds() {
    HeldTail t = tail;
    return t != null && t.holds();
  }

  /** The pool granted {@code p}: from here every path releases it. */
  void granted(Permit p) {
    if (p != permit) {
      permit = p;
      planFacts = null;
      if (session.cost.started(p)) { // it waited and starts with a smaller reserve (Waiter.atStart)
        session.checks.runsAs(
            java.util.Objects.requireNonNull(session.cost.estimate())); // holds cut to it
      }
    }
  }

  @Nullable Permit permit() {
    return permit;
  }

  /** Shadow mode let it through without a permit (ended or not); safe to read from any thread. */
  boolean passed() {
    ShadowVerdicts sh = session.shadow;
    return sh != null && sh.passed();
  }

  /** Let through to the upstream (released or not), with a permit or a shadow pass; any thread. */
  public boolean runs() {
    return permit != null || passed();
  }

  /** The upstream's response headers: its status and content type (null: read as JSON). */
  public void headers(int status, @Nullable String contentType, boolean countStatus) {
    headers(status, contentType, countStatus, -1, AnswerSource.UPSTREAM);
  }

  /** Response headers ({@link ResponseMeter#headers}); {@code retryAfterNanos} -1 if none. */
  public void headers(
      int status,
      @Nullable String contentType,
      boolean countStatus,
      long retryAfterNanos,
      AnswerSource src) {
    meter()
        .headers(
            status,
            contentType,
            countStatus,
            retryAfterNanos,
            src,
            permit,
            session.cost.estimate());
  }

  /** The upstream failed after its headers ({@link ResponseMeter#failedAfterHeaders}). */
  public void failedAfterHeaders(int status, long retryAfterNanos) {
    meter().failedAfterHeaders(status, retryAfterNanos, permit);
  }

  /** A response body chunk, read in place for the usage it reports. */
  public void body(byte[] data, int offset, int length, boolean last) {
    meter().body(data, offset, length, last, permit, session.cost.estimate(), plan.pool());
  }

  /** Envoy's native request info, before the session begins: the estimate source at headers. */
  public void declared(io.sluice.core.estimate.NativeRequestInfo info) {
    session.cost.nativeInfo(info);
  }

  /** Envoy's native token usage at the response's end: preferred at the release when usable. */
  public void nativeUsage(io.sluice.core.estimate.NativeUsage u) {
    meter().nativeUsage(u);
  }

  /**
   * The headers its checks' holds disclose to the client (a budget's remaining), or null when none
   * does.
   */
  public java.util.@Nullable Map<String, String> disclosed() {
    return session.checks.disclosed();
  }

  /**
   * The ticker time of the admit the front end answers now ({@code atBody}: at the request body,
   * else at its headers): the decision's own read when the answer is for the message decided (it
   * goes out in the same step, at the same instant: no second read), a read now when it is for a
   * later one (shadow mode let it through at its headers and answers at its body).
   */
  public long answerNanos(boolean atBody) {
    return atBody == session.notes.atBody()
        ? session.notes.decidedNanos()
        : session.env.ticker().nanos();
  }

  /** What the check that refused it tells the client besides its reason, or null. */
  public @Nullable RefusalDetail refusalDetail() {
    return session.checks.notes().get(RefusalDetail.class);
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
    if (p.isReleased()) { // the front end's end after its release: nothing to time
      return false;
    }
    long now = session.env.ticker().nanos();
    if (!p.release(outcome, now)) {
      return false;
    }
    releaseHolds();
    session.steps.at(Step.RELEASE);
    session.steps.at(Step.METRICS);
    Usage u = endUsage(outcome); // the learners hear the release (ReserveLearner, AdaptiveSignals)
    session.steps.at(Step.DECISION_LOG);
    session
        .env
        .listener()
        .on(new SessionEvent.Released(session.facts(), outcome, now - p.admittedAtNanos(), u));
    return true;
  }

  /** Shadow: a request let through without a permit ends (once, as a release would). */
  private boolean endPass(Outcome outcome) {
    ShadowVerdicts sh = session.shadow;
    if (sh == null || !sh.end()) {
      return false;
    }
    session.checks.release(AdmissionCheck.Release.ENDED); // what the pass kept: the retry claim
    long now = session.env.ticker().nanos();
    session.steps.at(Step.RELEASE);
    Usage u = endUsage(outcome); // shadow mode learns too: enforcing starts warmed
    session.steps.at(Step.DECISION_LOG);
    session
        .env
        .listener()
        .on(new SessionEvent.Released(session.facts(), outcome, now - sh.passedAtNanos(), u));
    return true;
  }

  /**
   * The usage the response reported, and the tenant's token reservation reconciled with what the
   * request is charged ({@link ChargeRule}).
   */
  private Usage endUsage(Outcome outcome) {
    TokenEstimate e = session.cost.estimate();
    ResponseMeter m = response;
    if (m == null) { // no response event came: no answer began
      unmetered = ResponseMeter.unmeteredCharge(outcome, e);
    }
    Usage u = m == null ? Usage.NONE : m.end(outcome, e);
    Charge charge = m == null ? unmetered : m.charge();
    var r = session.checks.held(TokenReservationCheck.Reservation.class);
    if (r != null && e != null) {
      r.reconcile(charge);
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
        p.release(outcome, session.env.ticker().nanos()); // a no-op if it went back already
      }
    } finally {
      releaseHolds();
    }
  }

  /** Gives the checks' holds back, once (every end path calls it; only the first does anything). */
  void releaseHolds() {
    session.checks.release(AdmissionCheck.Release.ENDED);
  }

  /** The front end will not see the response's end: the permit is held ({@link HeldTail}). */
  public void endUnseen(String cause) {
    HeldTail t = tail;
    if (t == null) {
      t = new HeldTail(session.env, session.serial, this);
      tail = t;
    }
    t.unseen(cause, permit, session.subject(), response != null && response.eventStream());
  }

  /** The response's end was seen after all (trailers after body mode NONE): no tail held. */
  public void endSeen() {
    HeldTail t = tail;
    if (t != null) {
      t.seen();
    }
  }

  /** Output tokens the pool counts for this request now (the reserve, or grown past it). */
  long outputCharge() {
    ResponseMeter m = response;
    TokenEstimate e = session.cost.estimate();
    return m != null ? m.outputCharge(e) : e == null ? 0 : e.outputReserveTokens();
  }

  /** Where and how it runs, for the events ({@code p}: its permit), kept while neither changes. */
  RequestFacts.Run planFacts(@Nullable Permit p) {
    RequestFacts.Run f = planFacts;
    if (f == null || p != permit) {
      f = plan.facts(p);
      planFacts = p == permit ? f : null;
    }
    return f;
  }

  /** The queue wait of a request that waited (0 when it did not). */
  public long queueWaitNanos() {
    return session.notes.queueWaitNanos();
  }

  /** The predicted wait a capacity refusal's Retry-After came from (unclamped), or -1 if none. */
  public long refusalWaitNanos() {
    return session.notes.refusalWaitNanos();
  }

  /**
   * A check after the decision would refuse the running request ({@code body_too_large}): true in
   * shadow mode (recorded once, it runs on), false when enforced (the front end refuses it).
   */
  public boolean wouldRefuseLater(Reason why, int status, String message) {
    ShadowVerdicts sh = session.shadow;
    return sh != null && sh.wouldRefuseLater(why, status, message);
  }

  /** Shadow mode: {@code reject} or {@code queue}, what enforcement would have done, or null. */
  public @Nullable String would() {
    ShadowVerdicts sh = session.shadow;
    return sh == null ? null : sh.would();
  }

  /** With {@link #would}: the reason of the would-be refusal, or the capacity reason to queue. */
  public Reason wouldReason() {
    ShadowVerdicts sh = session.shadow;
    return sh == null ? Reason.ADMITTED : sh.wouldReason();
  }

  /** For the decision record: the upstream's answer and the charge, with {@code p} its permit. */
  RequestFacts.End facts(@Nullable Permit p) {
    HeldTail t = tail;
    String unseen = t == null ? null : t.cause();
    ResponseMeter m = response;
    return m != null ? m.facts(unseen, p) : ResponseMeter.unmeteredFacts(unseen, unmetered);
  }
}
