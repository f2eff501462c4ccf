package io.sluice.core.session;

import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.Reason;
import io.sluice.core.admission.Waiter;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.session.SessionSteps.Step;
import java.util.Objects;
import java.util.concurrent.Executor;
import org.jspecify.annotations.Nullable;

/**
 * One request's admission, from its tenant's rate token to the release of its permit, with no
 * transport in sight. A front end (the ext_proc adapter, a test, later a permit API) opens one per
 * request from the runtime snapshot ({@link Sessions#open}) and drives it:
 *
 * <pre>
 * begin ─ checks at headers ─ (body wanted ─ decideWithBody) ─ checks with the estimate ─ decide
 *    ├─ admit ─────────────────────────────── Front.admitted ─ running(): headers/body ─ release
 *    ├─ queue ─ Front.held ─ waiter: admitted ─ Front.admitted ─ ...                  ─ release
 *    │                     └ waiter: refused ── Front.refused (tokens refunded)
 *    └─ refuse ────────────────────────────── Front.refused (tokens refunded)
 * end (cancel, error, shutdown) at any point: leave the queue, refund, release
 * </pre>
 *
 * <p>A sequencer: where it is is its {@link Phase}; each step is a part's (CONTRIBUTING.md, the
 * seams): the checks ({@link CheckRun}: holds given back once, in reverse order), the estimate
 * ({@link RequestCost}), the planner ({@link Planner}), the decision record ({@link
 * DecisionNotes}), shadow mode ({@link ShadowVerdicts}), the run, its plan, response and release,
 * once ({@link RunningRequest}: what the front end reads and drives after the decision, {@link
 * #running}). Each step emits one {@link SessionEvent} with the request's {@link #facts} before the
 * front end is told, so metrics and the decision record never lag an answer.
 *
 * <p>Not thread-safe: every call comes from the front end's serial context, and every continuation
 * (a store's answer, a waiter callback) is handed to it ({@code serial}); no lock is held while
 * calling into the controller.
 */
public final class AdmissionSession implements Waiter, AdmissionCheck.Request {
  /** Where a session is; its end ({@link #end}) is a phase of its own. */
  public enum Phase {
    CHECKS, // the checks and the estimate: nothing decided yet
    DECIDING, // the pool decides, or, out of its queue, its answer is under way
    QUEUED, // waiting in the pool's queue (held)
    RUNNING, // admitted with a permit, or let through by shadow mode without one
    REFUSED, // refused, or answered by a check itself (a job accepted for later): nothing runs
    ENDED // the front end is done with it (end)
  }

  final Sessions env;
  private final Subject subject;
  private final SessionFront front;
  final Executor serial;
  final SessionSteps steps;
  private Phase phase = Phase.CHECKS;
  // the parts: the checks' holds; the estimate; the decision record; shadow mode's verdicts (null
  // when enforced); the planner; the plan, the permit, the response and the release
  final CheckRun.OfSession checks;
  final RequestCost cost;
  final DecisionNotes notes;
  final @Nullable ShadowVerdicts shadow;
  private final Planner planner;
  private final RunningRequest run;

  AdmissionSession(
      Sessions env, Subject subject, SessionFront f, Executor serial, SessionSteps steps, long at) {
    this.env = env;
    this.subject = subject;
    this.front = f;
    this.serial = serial;
    this.steps = steps;
    this.notes = new DecisionNotes(at); // its arrival on the wall clock (Sessions#open)
    this.cost = new RequestCost(env, subject);
    this.shadow = ShadowVerdicts.of(subject, env.listener());
    this.checks = new CheckRun.OfSession(env, this, f, serial, steps);
    this.planner = Planners.of(env, subject, checks); // its notes
    this.run = new RunningRequest(this); // reads its parts from the session
  }

  // --- the steps, in order

  /**
   * The request's headers arrived: the headers stage's checks ({@link CheckChain}), then it is
   * decided at its headers ({@code atHeaders}: {@link RequestCost#atHeaders}; {@code contentLength}
   * -1 when unknown) or the front end is asked for its body ({@link SessionFront#bodyWanted}).
   */
  public void begin(boolean atHeaders, boolean noBody, long contentLength, long receivedNanos) {
    cost.declared(atHeaders, noBody, contentLength);
    checks.run(AdmissionCheck.Stage.HEADERS, receivedNanos);
  }

  /** The checks of {@code stage} let the request on ({@link CheckRun}): the next step. */
  void checked(AdmissionCheck.Stage stage, long receivedNanos) {
    if (stage == AdmissionCheck.Stage.ESTIMATE) {
      decideAdmission(cost.admission(), receivedNanos);
    } else if (cost.atHeaders()) {
      decide(false, receivedNanos);
    } else {
      front.bodyWanted();
    }
  }

  /** Estimates the buffered body (read in place; the planner keeps it to rewrite), decides. */
  public void decideWithBody(byte[] body, int offset, int length, long receivedNanos) {
    steps.at(Step.ESTIMATE);
    planner.offer(body, offset, length);
    checks.body(body, offset, length); // what the checks with the estimate may read
    String invalid = cost.ofBody(body, offset, length);
    if (invalid != null) { // never forward a body the engine reads differently from Sluice
      refuse(Reason.INVALID_REQUEST, 400, 0, invalid, true, receivedNanos);
      return;
    }
    decide(true, receivedNanos);
  }

  /** Decides on an estimate given instead of a body (a replay's), where the body would be. */
  public void decideWithEstimate(TokenEstimate estimate, long receivedNanos) {
    steps.at(Step.ESTIMATE);
    cost.given(estimate);
    decide(true, receivedNanos);
  }

  private void decide(boolean body, long receivedNanos) {
    notes.at(body);
    cost.request(); // the learned output reserve applied
    // the checks with the estimate (token reservation, tenant slot, workflow place), then the pool
    checks.run(AdmissionCheck.Stage.ESTIMATE, receivedNanos);
  }

  private void decideAdmission(AdmissionRequest request, long receivedNanos) {
    phase = Phase.DECIDING;
    steps.at(Step.DECIDE);
    Decision d = planner.decide(request, cost, notes.atBody(), checks); // decideInPool
    Planner.Cost runsAs = planner.runsAs();
    if (runsAs != null) { // each hold (tokens, budgets) cut to the cheaper version, once
      checks.runsAs(runsAs.estimate());
      cost.runAs(runsAs);
    }
    run.plan(planner.plan(request));
    if (d instanceof Decision.Queued q) {
      hold(q, receivedNanos);
    } else if (d instanceof Decision.Admit a) {
      admit(a.permit(), receivedNanos);
    } else if (d instanceof Decision.WouldQueue w) {
      String message = ShadowVerdicts.queueMessage(subject, w);
      int status = subject.requestClass().shedStatus();
      pass(SessionEvent.Shadowed.QUEUE, w.reason(), status, 0, message, receivedNanos);
    } else {
      refuse((Decision.Reject) d, receivedNanos);
    }
  }

  /** The session's own ask of its pool ({@link Planner.Pool}): itself the waiter, or shadow. */
  Decision decideInPool(AdmissionRequest r, long degradeAboveNanos) {
    long now = env.ticker().nanos();
    return env.controller()
        .decide(
            r,
            subject.shadow()
                ? Ask.shadow(subject.maxHoldNanos(), now)
                : Ask.hold(subject.maxHoldNanos(), this, now).degradeAbove(degradeAboveNanos));
  }

  /** The front end's trusted {@code noDegrade} signal, before the decision: never degraded. */
  public void forbidDegradation() {
    planner.forbid();
  }

  /** Queued: the front end holds the deciding message; the expiry timer is armed. */
  private void hold(Decision.Queued q, long receivedNanos) {
    phase = Phase.QUEUED;
    QueuePlace place = notes.queued(q, receivedNanos);
    long queuedNanos = env.ticker().nanos() - receivedNanos;
    env.listener().on(new SessionEvent.Queued(facts(), queuedNanos, q.predictedWaitNanos()));
    front.held(place.holdMillis(subject.maxHoldNanos()));
    place.armExpiry(env);
  }

  @Override
  public void admitted(Permit p, long waitedNanos) {
    serial.execute(
        () -> {
          QueuePlace place = notes.queue();
          if (phase != Phase.QUEUED || place == null) {
            p.release(Outcome.CANCELLED, env.ticker().nanos()); // the request is gone
            return;
          }
          run.granted(p); // from here every path releases it
          leave(place, "admitted", waitedNanos);
          admit(p, place.receivedNanos);
        });
  }

  @Override
  public AdmissionRequest atStart(AdmissionRequest queued) {
    return cost.atStart(queued); // under the pool's lock: its output reserve estimated again
  }

  @Override
  public void refused(Decision.Reject r, long waitedNanos) {
    serial.execute(
        () -> {
          QueuePlace place = notes.queue();
          if (phase == Phase.QUEUED && place != null) {
            leave(place, r.reason() == Reason.QUEUE_TIMEOUT ? "expired" : "refused", waitedNanos);
            refuse(r, place.receivedNanos);
          }
        });
  }

  /** Out of the queue ({@code how}) after {@code waitedNanos}: its answer is under way. */
  private void leave(QueuePlace place, String how, long waitedNanos) {
    phase = Phase.DECIDING;
    steps.at(Step.WAITER);
    notes.left(place, waitedNanos);
    env.listener().on(new SessionEvent.Dequeued(subject, how, waitedNanos));
  }

  private void admit(Permit p, long receivedNanos) {
    run.granted(p);
    phase = phase == Phase.ENDED ? phase : Phase.RUNNING;
    UpstreamPlan plan = run.plan();
    String rung = plan.rung();
    if (rung != null && notes.degraded()) {
      env.listener().on(new SessionEvent.Degraded(subject, rung, String.valueOf(plan.trigger())));
    }
    if (!run.passed()) { // shadow: observe only, nothing is rewritten
      run.plan(planner.admitted(plan, notes.atBody()));
    }
    long now = env.ticker().nanos(); // one read: the deadline left, the decision's time, the limit
    notes.deadlineLeft(subject.deadlineNanos() - now);
    steps.at(Step.ADMIT);
    notes.decided(now, receivedNanos, AdaptiveSignals.limit(env, subject, p, now));
    env.listener().on(new SessionEvent.Admitted(facts()));
    if (phase == Phase.ENDED) { // the front end went away while deciding: give it back at once
      release(Outcome.CANCELLED);
      return;
    }
    front.admitted(notes.atBody());
  }

  /** The pool refused it ({@code r}), at once or out of its queue (or its planner answers it). */
  private void refuse(Decision.Reject r, long receivedNanos) {
    notes.refusalWait(r.waitNanos());
    checks.refuse(planner, r, receivedNanos); // its planner may answer it another way, later
  }

  /** A check refused it ({@link CheckRun}); its holds are given back with the refusal. */
  void checkRefused(AdmissionCheck.Refusal r, long receivedNanos) {
    refuse(
        r.reason(), r.status(), r.retryAfterSeconds(), r.message(), notes.atBody(), receivedNanos);
  }

  /** A store's answer failed outright ({@link CheckRun}): the front end ends the exchange. */
  void storeFailed(Throwable cause) {
    front.storeFailed(cause);
  }

  /**
   * Refuses (the front end's own checks too: body too large, unknown route); {@code body}: it
   * answers the body (else the headers) that arrived at {@code at}; Retry-After in seconds.
   */
  public void refuse(Reason why, int status, long retryAfter, String msg, boolean body, long at) {
    notes.at(body);
    AdmissionCheck.Answered answer = checks.answer(); // a check's own answer: not a refusal
    if (answer == null && shadow != null && ShadowVerdicts.lets(why)) {
      pass(SessionEvent.Shadowed.REJECT, why, status, retryAfter, msg, at);
      return;
    }
    phase = phase == Phase.ENDED ? phase : Phase.REFUSED;
    planner.refused();
    run.plan(run.plan().notDegraded()); // a refused request is not degraded (it may have waited)
    checks.release(AdmissionCheck.Release.REFUSED); // in reverse order, the reservation refunded
    checks.remember(why, retryAfter); // retries: its next attempt is early or honours this
    steps.at(Step.REJECT);
    notes.refused(why);
    notes.decided(env.ticker().nanos(), at, AdaptiveSignals.limit(env, subject, run.permit()));
    steps.at(Step.DECISION_LOG);
    if (answer != null) {
      env.listener().on(new SessionEvent.Answered(facts(), why, status));
      front.answered(answer);
      return;
    }
    env.listener().on(new SessionEvent.Refused(facts(), why, status, retryAfter, msg));
    front.refused(why, status, retryAfter, msg);
  }

  /** Shadow mode: it would be refused or queued ({@code what}); let through without a permit. */
  private void pass(
      String what, Reason why, int status, long retryAfter, String message, long receivedNanos) {
    ShadowVerdicts sh = Objects.requireNonNull(shadow, "shadow mode");
    phase = phase == Phase.ENDED ? phase : Phase.RUNNING;
    // the tenant slot goes back, the reservation unless it would queue; the retry claim stays
    checks.pass(what.equals(SessionEvent.Shadowed.REJECT));
    sh.would(what, why, status, message);
    steps.at(Step.ADMIT);
    long now = env.ticker().nanos();
    notes.passed(now, receivedNanos);
    sh.letThrough(now, retryAfter); // from here every path ends it (release)
    env.listener().on(new SessionEvent.Admitted(facts()));
    if (phase == Phase.ENDED) { // the front end went away while deciding
      release(Outcome.CANCELLED);
      return;
    }
    front.admitted(notes.atBody());
  }

  // --- the end: every path gives back what the request holds, once

  /** Releases the permit (true for the call that did), reconciling the reservation with usage. */
  public boolean release(Outcome outcome) {
    return run.release(outcome);
  }

  /**
   * The front end is done with the request (cancel, error, shutdown): it leaves the queue, what it
   * holds is given back, a permit released (once). Later continuations find the session ended.
   */
  public void end(Outcome outcome) {
    boolean queued = phase == Phase.QUEUED;
    phase = Phase.ENDED;
    QueuePlace place = notes.queue();
    if (place != null) {
      place.cancelTimer();
    }
    if (run.runs()) {
      run.end(outcome);
      return;
    }
    if (queued && place != null) { // it leaves the queue
      place.leave(env, subject);
    }
    // the request will not run: refunded, given back; an answer still to come as it comes
    checks.release(AdmissionCheck.Release.CANCELLED);
  }

  /** Last resort of a front end whose cleanup failed part-way: the permit goes back silently. */
  public void releaseQuietly(Outcome outcome) {
    run.releaseQuietly(outcome);
  }

  // --- what events carry, and what the front end reads

  /** The request's facts now, an immutable value: what events carry (listeners never see this). */
  RequestFacts facts() {
    Permit p = run.permit();
    return new RequestFacts(
        subject,
        notes.arrivalEpochMillis(),
        notes.phase(),
        cost.facts(),
        notes.facts(),
        run.planFacts(p),
        shadow == null ? null : shadow.facts(),
        checks.notes(),
        run.facts(p));
  }

  /** Whether this request holds a check's hold of {@code type} now (e.g. the tenant's slot). */
  boolean holds(Class<? extends AdmissionCheck.Held> type) {
    return checks.holds(type);
  }

  /** The request as it runs upstream: the front end reads its plan, meters its response. */
  public RunningRequest running() {
    return run;
  }

  @Override
  public Subject subject() {
    return subject;
  }

  @Override
  public @Nullable TokenEstimate estimate() { // null before one was made
    return cost.estimate();
  }

  @Override
  public long workUnits() {
    return cost.workUnits();
  }

  /** Where the session is. */
  public Phase phase() {
    return phase;
  }

  /** Admitted (or let through) or refused, ended since or not. */
  public boolean decided() {
    return switch (phase) {
      case RUNNING, REFUSED -> true;
      case CHECKS, DECIDING, QUEUED -> false;
      case ENDED -> run.runs() || notes.reason() != Reason.ADMITTED;
    };
  }
}
