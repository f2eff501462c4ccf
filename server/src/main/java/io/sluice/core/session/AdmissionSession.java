package io.sluice.core.session;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.adapt.AnswerSource;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.Reason;
import io.sluice.core.admission.Waiter;
import io.sluice.core.estimate.EstimateLimits;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.OutputShape;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.estimate.Usage;
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
 * begin ─ checks at headers ─ decideAtHeaders | decideWithBody ─ checks with the estimate ─ decide
 *    ├─ admit ─────────────────────────────── Front.admitted ─ responseHeaders/Body ─ release
 *    ├─ queue ─ Front.held ─ waiter: admitted ─ Front.admitted ─ ...                 ─ release
 *    │                     └ waiter: refused ── Front.refused (tokens refunded)
 *    └─ refuse ────────────────────────────── Front.refused (tokens refunded)
 * end (cancel, error, shutdown) at any point: leave the queue, refund, release
 * </pre>
 *
 * <p>Shadow mode ({@link Subject#shadow}, the route's or pool's {@code mode: shadow}): every step
 * runs as above, and the pool is asked {@link io.sluice.core.admission.Ask.Mode#SHADOW}. An admit
 * takes its permit as usual. A request that would be refused (any reason but {@code unknown_route}
 * and {@code shutting_down}) or queued is let through at once without a permit ({@link
 * SessionEvent.Shadowed}, then {@link SessionEvent.Admitted}; its end emits {@link
 * SessionEvent.Released}): it holds no place in the pool's ledger or the tenant's cap across
 * replicas, so both count what enforcement would have admitted at once. A would-be refusal's token
 * reservation is refunded (enforcement charges no refused request); a would-be queued request keeps
 * it and is reconciled at its end, as a queued request that ran.
 *
 * <p>It owns the sequence: the snapshot's pre-decision checks ({@link CheckChain}: the tenant's
 * request rate and the retry attempt at the headers; the token reservation, the tenant's slot
 * across replicas and the workflow's place with the estimate; each hold given back exactly once on
 * every path, in reverse order, by {@link CheckRun}), the estimate, decide / hold / queue with
 * itself as the {@link Waiter}, the permit's release (exactly once: the permit guards it),
 * reconciling the reservation with actual usage. Shadow mode's verdicts are {@link
 * ShadowVerdicts}'. Each step emits one {@link SessionEvent} to the snapshot's {@link
 * SessionListener}, before the front end is told, so metrics and the decision record never lag an
 * answer. Where it is: {@link Phase}.
 *
 * <p>Threading: not thread-safe. Every call comes from the front end's serial context, and every
 * continuation (a quota store's answer, a waiter callback from another request's release or the
 * timer thread) is handed to that context ({@code serial}), so state is touched by one thread at a
 * time and no lock is held while calling into the controller.
 */
public final class AdmissionSession implements Waiter, AdmissionCheck.Request {
  /** Where a session is; its end ({@link #end}) is a phase of its own. */
  public enum Phase {
    /** The checks and the estimate: nothing decided yet. */
    CHECKS,
    /** The pool decides, or, out of its queue, its answer is under way. */
    DECIDING,
    /** Waiting in the pool's queue (held). */
    QUEUED,
    /** Admitted with a permit, or let through by shadow mode without one. */
    RUNNING,
    /** Refused. */
    REFUSED,
    /** The front end is done with it ({@link #end}). */
    ENDED
  }

  private final Sessions env;
  private final Subject subject;
  private final SessionFront front;
  private final Executor serial;
  private final SessionSteps steps;
  private final long arrivalEpochMillis;
  private final CheckRun checks; // what the pre-decision checks hold
  private final @Nullable ShadowVerdicts shadow; // shadow mode's verdicts; null when enforced
  private Phase phase = Phase.CHECKS;

  private @Nullable TokenEstimate estimate;
  // the learned output reserve (OutputReserves): answers and cap of the body, the rule used, and
  // the reserve the old rule gave
  private final OutputShape shape = new OutputShape();
  private String reserveRule = OutputReserves.RULE_OFF;
  private long requestedOutputTokens;
  private long workUnits;
  private boolean atBody;
  private @Nullable QueuePlace queue; // its place in the pool's queue, once it waited
  private long decisionLatencyNanos;
  private long fanOutWork; // of workUnits: what the request's tools and declared calls add
  private Reason reason = Reason.ADMITTED;
  private AdaptiveLimit.@Nullable Snapshot limitAtDecision;
  // read by the front end's idle sweep on another thread
  private volatile @Nullable Permit permit;
  // the parts: what to do when the pool cannot start the request now, and how it runs upstream;
  // the response metered; a response end the front end will not see
  private final Planner planner;
  private UpstreamPlan plan;
  private final ResponseMeter response;
  private final HeldTail tail;
  private long refusalWaitNanos = -1; // the predicted wait behind a refusal's Retry-After
  private long admittedDeadlineLeftNanos; // time left before the deadline when admitted

  AdmissionSession(
      Sessions env, Subject subject, SessionFront front, Executor serial, SessionSteps steps) {
    this.env = env;
    this.subject = subject;
    this.front = front;
    this.serial = serial;
    this.steps = steps;
    this.arrivalEpochMillis = env.clock().millis();
    this.shadow = ShadowVerdicts.of(subject, env.listener());
    this.planner = new DegradeLadder(env, subject);
    this.plan = UpstreamPlan.asAsked(subject.pool());
    this.response = new ResponseMeter(env, subject);
    this.tail = new HeldTail(env, serial, () -> release(Outcome.COMPLETED), this::releaseSlot);
    this.checks =
        new CheckRun(env.checks(), this, serial, steps) {
          @Override
          void refused(AdmissionCheck.Refusal r, long receivedNanos) {
            refuse(
                r.reason(), r.status(), r.retryAfterSeconds(), r.message(), atBody, receivedNanos);
          }

          @Override
          void storeFailed(Throwable cause) {
            front.storeFailed(cause);
          }
        };
  }

  // --- the steps, in order

  /**
   * The request's headers arrived: the checks of the headers stage ({@link CheckChain}: the
   * tenant's request rate, the retry attempt), in order; then the request is decided at its headers
   * ({@code atHeaders}: {@link #decideAtHeaders} with {@code noBody} and {@code contentLength}), or
   * the front end is asked for its body ({@link SessionFront#bodyWanted}; {@link #decideWithBody}
   * decides). A refusal at this stage comes before the body is read.
   */
  public void begin(boolean atHeaders, boolean noBody, long contentLength, long receivedNanos) {
    checks.run(
        AdmissionCheck.Stage.HEADERS,
        receivedNanos,
        atHeaders
            ? () -> decideAtHeaders(noBody, contentLength, receivedNanos)
            : front::bodyWanted);
  }

  /**
   * Decides at request headers. A request without a body costs its output reserve only; one whose
   * content-length is known costs that many bytes; one with a body of unknown size costs {@code
   * estimation.defaultInputTokens}, never 0, counted as the fallback {@code no_content_length}.
   *
   * @param contentLength the declared body size, or -1 when unknown
   */
  private void decideAtHeaders(boolean noBody, long contentLength, long receivedNanos) {
    if (noBody || contentLength >= 0) {
      estimate = env.estimator().fromContentLength(Math.max(0, contentLength), limits());
    } else {
      env.listener().on(new SessionEvent.EstimateFellBack("no_content_length"));
      estimate = env.estimator().unknownSize(env.defaultInputTokens(), limits());
    }
    decide(false, receivedNanos);
  }

  /**
   * Estimates the buffered body (read in place, never modified; kept by reference only while it may
   * be rewritten: a degrade ladder or an engine priority field) and decides.
   */
  public void decideWithBody(byte[] body, int offset, int length, long receivedNanos) {
    steps.at(Step.ESTIMATE);
    planner.offer(body, offset, length);
    estimate = env.estimator().estimate(subject.format(), body, offset, length, limits(), shape);
    if (estimate.fallbackCause() != null) {
      env.listener().on(new SessionEvent.EstimateFellBack(estimate.fallbackCause()));
    }
    String invalid = shape.invalid();
    if (invalid == null && !shape.jsonObject() && writesPriorityField()) {
      invalid = "the body is not a JSON object the engine priority can be written into";
    }
    if (invalid != null) { // never forward a body the engine reads differently from Sluice
      refuse(Reason.INVALID_REQUEST, 400, 0, invalid, true, receivedNanos);
      return;
    }
    decide(true, receivedNanos);
  }

  /** Whether the engine priority goes into the body (its member replaces the client's own). */
  private boolean writesPriorityField() {
    return !subject.shadow()
        && DegradeLadder.priorityEdits(env, subject, subject.pool()).priorityField() != null;
  }

  private EstimateLimits limits() {
    return new EstimateLimits(
        subject.requestClass().defaultOutputTokens(), subject.requestClass().maxOutputTokens());
  }

  private void decide(boolean body, long receivedNanos) {
    atBody = body;
    TokenEstimate e = learnedReserve(Objects.requireNonNull(estimate, "estimate before decide"));
    estimate = e;
    fanOutWork = subject.pool().fanout().workUnits(e.fanOut(), subject.fanout());
    workUnits = subject.pool().workUnits(e.inputTokens(), e.outputReserveTokens(), fanOutWork);
    AdmissionRequest request =
        new AdmissionRequest(
            subject.pool(),
            subject.requestClass(),
            subject.tenant(),
            workUnits,
            subject.arrivalNanos(),
            subject.deadlineNanos(),
            estimate.inputTokens(),
            estimate.outputReserveTokens());
    // the checks with the estimate (token reservation, tenant slot, workflow place), then the pool
    checks.run(
        AdmissionCheck.Stage.ESTIMATE,
        receivedNanos,
        () -> decideAdmission(request, receivedNanos));
  }

  private void decideAdmission(AdmissionRequest request, long receivedNanos) {
    phase = Phase.DECIDING;
    steps.at(Step.DECIDE);
    TokenEstimate e = Objects.requireNonNull(estimate, "estimate before the decision");
    Planner.Planned planned =
        planner.decide(
            request,
            new Planner.Cost(e, workUnits, fanOutWork),
            atBody,
            (r, degradeAbove) ->
                subject.shadow()
                    ? env.controller()
                        .decide(r, Ask.shadow(subject.maxHoldNanos(), env.ticker().nanos()))
                    : env.controller()
                        .decide(
                            r,
                            Ask.hold(subject.maxHoldNanos(), this, env.ticker().nanos())
                                .degradeAbove(degradeAbove)));
    Planner.Cost runsAs = planned.runsAs();
    if (runsAs != null) {
      runAs(runsAs);
    }
    plan = planned.plan();
    Decision d = planned.decision();
    if (d instanceof Decision.Queued q) {
      hold(q, receivedNanos);
    } else if (d instanceof Decision.Admit a) {
      admit(a.permit(), receivedNanos);
    } else if (d instanceof Decision.WouldQueue w) {
      pass(
          SessionEvent.Shadowed.QUEUE,
          w.reason(),
          subject.requestClass().shedStatus(),
          0,
          "would wait in the queue of class "
              + subject.requestClass().name()
              + " (position "
              + (w.position() + 1)
              + ", predicted wait "
              + w.predictedWaitNanos() / 1_000_000L
              + " ms)",
          atBody,
          receivedNanos);
    } else {
      Decision.Reject r = (Decision.Reject) d;
      refusalWaitNanos = r.waitNanos();
      refuse(r.reason(), r.status(), r.retryAfterSeconds(), r.message(), atBody, receivedNanos);
    }
  }

  /**
   * The front end's trusted signal (the route's {@code degrade: false}, the {@code noDegrade}
   * signal): this request is never degraded; called before it is decided.
   */
  public void forbidDegradation() {
    planner.forbid();
  }

  /**
   * The request runs as {@code c} (a planner's cheaper version): the tenant's token reservation is
   * cut to it.
   */
  private void runAs(Planner.Cost c) {
    TokenEstimate e = c.estimate();
    var r = checks.held(TokenReservationCheck.Reservation.class);
    if (r != null) {
      r.cutTo(e); // give back what the cheaper answer no longer needs
    }
    estimate = e;
    workUnits = c.workUnits();
    fanOutWork = c.fanOutWork();
  }

  /** How the request runs upstream: its pool, body, headers, engine priority, degrade. */
  public UpstreamPlan plan() {
    return plan;
  }

  /**
   * The predicted wait or drain time a capacity refusal's Retry-After was computed from (before
   * clamping and jitter), or -1 when none (a refusal retrying cannot help, a tenant budget's own
   * refill time).
   */
  public long refusalWaitNanos() {
    return refusalWaitNanos;
  }

  /** Queued: the front end holds the deciding message; the expiry timer is armed. */
  private void hold(Decision.Queued q, long receivedNanos) {
    phase = Phase.QUEUED;
    QueuePlace place = new QueuePlace(q, receivedNanos);
    queue = place;
    long maxHold = subject.maxHoldNanos() / 1_000_000L;
    long holdMillis = Math.min(maxHold, (q.holdNanos() + 999_999L) / 1_000_000L);
    env.listener()
        .on(
            new SessionEvent.Queued(
                facts(), env.ticker().nanos() - receivedNanos, q.predictedWaitNanos()));
    front.held(Math.max(1, holdMillis));
    long delay = q.expiresAtNanos() - env.ticker().nanos() + 1_000_000L;
    String pool = q.pool();
    place.expiry(
        env.timer().schedule(delay, () -> env.controller().expireDue(pool, env.ticker().nanos())));
  }

  @Override
  public void admitted(Permit p, long waitedNanos) {
    serial.execute(
        () -> {
          QueuePlace place = queue;
          if (phase != Phase.QUEUED || place == null) {
            p.release(Outcome.CANCELLED, env.ticker().nanos()); // the request is gone
            return;
          }
          permit = p; // from here every path releases it
          phase = Phase.DECIDING; // out of the queue
          steps.at(Step.WAITER);
          place.left(waitedNanos);
          env.listener().on(new SessionEvent.Dequeued(subject, "admitted", waitedNanos));
          admit(p, place.receivedNanos);
        });
  }

  @Override
  public void refused(Decision.Reject r, long waitedNanos) {
    serial.execute(
        () -> {
          QueuePlace place = queue;
          if (phase != Phase.QUEUED || place == null) {
            return;
          }
          phase = Phase.DECIDING; // refused: no longer in the queue
          steps.at(Step.WAITER);
          place.left(waitedNanos);
          String outcome = r.reason() == Reason.QUEUE_TIMEOUT ? "expired" : "refused";
          refusalWaitNanos = r.waitNanos();
          env.listener().on(new SessionEvent.Dequeued(subject, outcome, waitedNanos));
          refuse(
              r.reason(),
              r.status(),
              r.retryAfterSeconds(),
              r.message(),
              atBody,
              place.receivedNanos);
        });
  }

  private void admit(Permit p, long receivedNanos) {
    permit = p;
    if (phase != Phase.ENDED) {
      phase = Phase.RUNNING;
    }
    String rung = plan.rung();
    if (rung != null && reason == Reason.ADMITTED) {
      reason = Reason.DEGRADED;
      env.listener().on(new SessionEvent.Degraded(subject, rung, String.valueOf(plan.trigger())));
    }
    if (!passed()) { // shadow: observe only, nothing is rewritten
      plan = planner.admitted(plan, atBody);
    }
    admittedDeadlineLeftNanos = Math.max(0, subject.deadlineNanos() - env.ticker().nanos());
    steps.at(Step.ADMIT);
    decisionLatencyNanos = env.ticker().nanos() - receivedNanos - queueWaitNanos();
    limitAtDecision = AdaptiveSignals.limit(env, subject, permit);
    env.listener().on(new SessionEvent.Admitted(facts()));
    if (phase == Phase.ENDED) { // the front end went away while deciding: give it back at once
      release(Outcome.CANCELLED);
      return;
    }
    front.admitted(atBody);
  }

  /**
   * Refuses (the front end's own checks too: body too large, unknown route): the reservation is
   * refunded, the refusal recorded, then answered. {@code body}: it answers the body, else the
   * headers; {@code receivedNanos}: when that message arrived (latency counts from there).
   */
  public void refuse(
      Reason why,
      int status,
      long retryAfterSeconds,
      String message,
      boolean body,
      long receivedNanos) {
    if (shadow != null && ShadowVerdicts.lets(why)) {
      pass(
          SessionEvent.Shadowed.REJECT,
          why,
          status,
          retryAfterSeconds,
          message,
          body,
          receivedNanos);
      return;
    }
    if (phase != Phase.ENDED) {
      phase = Phase.REFUSED;
    }
    atBody = body;
    planner.refused();
    plan = plan.notDegraded(); // a refused request is not degraded (it may have waited as concise)
    checks.release(AdmissionCheck.Release.REFUSED); // in reverse order, the reservation refunded
    checks.remember(why, retryAfterSeconds); // retries: its next attempt is early or honours this
    steps.at(Step.REJECT);
    reason = why;
    decisionLatencyNanos = env.ticker().nanos() - receivedNanos - queueWaitNanos();
    limitAtDecision = AdaptiveSignals.limit(env, subject, permit);
    steps.at(Step.DECISION_LOG);
    env.listener().on(new SessionEvent.Refused(facts(), why, status, retryAfterSeconds, message));
    front.refused(why, status, retryAfterSeconds, message);
  }

  /**
   * Shadow mode: the request would be refused or queued ({@code what}) with {@code why}; it is
   * recorded as such and let through at once without a permit.
   */
  private void pass(
      String what,
      Reason why,
      int status,
      long retryAfterSeconds,
      String message,
      boolean body,
      long receivedNanos) {
    ShadowVerdicts sh = Objects.requireNonNull(shadow, "shadow mode");
    if (phase != Phase.ENDED) {
      phase = Phase.RUNNING;
    }
    atBody = body;
    // no place in the tenant's cap, as none in the pool's ledger; enforcement charges no refused
    // request (a queued one ran: its reservation stays); retries: the operation stays claimed
    checks.pass(what.equals(SessionEvent.Shadowed.REJECT));
    sh.would(what, why, status, message);
    steps.at(Step.ADMIT);
    long now = env.ticker().nanos();
    decisionLatencyNanos = now - receivedNanos - queueWaitNanos();
    sh.letThrough(now, retryAfterSeconds); // from here every path ends it (release)
    env.listener().on(new SessionEvent.Admitted(facts()));
    if (phase == Phase.ENDED) { // the front end went away while deciding
      release(Outcome.CANCELLED);
      return;
    }
    front.admitted(atBody);
  }

  /**
   * A check after the decision would refuse the running request ({@code body_too_large} on a
   * streamed body's chunks). In shadow mode it is recorded ({@link SessionEvent.Shadowed}, once)
   * and true is returned: the request runs on, its permit (if any) held until it ends. False when
   * enforced: the front end refuses it.
   */
  public boolean wouldRefuseLater(Reason why, int status, String message) {
    ShadowVerdicts sh = shadow;
    return sh != null && sh.wouldRefuseLater(why, status, message);
  }

  /** Response headers from the upstream: its status, and the usage reader for the body. */
  public void responseHeaders(int status, String contentType, boolean countStatus) {
    responseHeaders(status, contentType, countStatus, -1, AnswerSource.UPSTREAM);
  }

  /**
   * Response headers from the upstream: its status (an overload shrinks an adaptive pool, and its
   * {@code retryAfterNanos}, negative if none, may pause it; only the upstream's own answers,
   * {@code source}, move an adaptive limit), and the usage reader for the body.
   */
  public void responseHeaders(
      int status,
      String contentType,
      boolean countStatus,
      long retryAfterNanos,
      AnswerSource source) {
    response.headers(status, contentType, countStatus, retryAfterNanos, source, permit, estimate);
  }

  /** A response body chunk, read in place for the usage it reports. */
  public void responseBody(byte[] data, int offset, int length, boolean last) {
    response.body(data, offset, length, last, permit, estimate, plan.pool());
  }

  /** Releases the permit (true for the call that did), reconciling the reservation with usage. */
  public boolean release(Outcome outcome) {
    if (tail.holds()) { // held for a predicted tail: the front end's end is only the stream's close
      return tail.frontDone();
    }
    Permit p = permit;
    if (p == null) {
      return endPass(outcome);
    }
    long now = env.ticker().nanos();
    if (!p.release(outcome, now)) {
      return false;
    }
    releaseSlot();
    steps.at(Step.RELEASE);
    steps.at(Step.METRICS);
    Usage u = endUsage(outcome); // the learners hear the release (ReserveLearner, AdaptiveSignals)
    steps.at(Step.DECISION_LOG);
    env.listener().on(new SessionEvent.Released(facts(), outcome, now - p.admittedAtNanos(), u));
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
    env.listener().on(new SessionEvent.Released(facts(), outcome, now - sh.passedAtNanos(), u));
    return true;
  }

  /**
   * The usage the response reported, and the tenant's token reservation reconciled with what the
   * request is charged ({@link ChargeRule}).
   */
  private Usage endUsage(Outcome outcome) {
    Usage u = response.end(outcome, estimate);
    var r = checks.held(TokenReservationCheck.Reservation.class);
    if (r != null && estimate != null) {
      r.reconcile(response.charge());
    }
    return u;
  }

  /** Output tokens the pool counts for this request now (the reserve, or grown past it). */
  public long outputCharge() {
    return response.outputCharge(estimate);
  }

  /**
   * The estimate with the learned output reserve: {@code min(cap, estimate)} per answer, the
   * estimate from the key's prior until it has {@code warmup} answers, then its own bound.
   */
  private TokenEstimate learnedReserve(TokenEstimate e) {
    requestedOutputTokens = e.outputReserveTokens();
    OutputReserves.Reserve r = ReserveLearner.reserve(env.reserves(), subject, e, shape.answers());
    reserveRule = r.rule();
    return r.outputTokens() == e.outputReserveTokens() ? e : e.withOutputReserve(r.outputTokens());
  }

  /**
   * The front end is done with the request (cancel, error, shutdown, the client left while held): a
   * queued request leaves its queue, a reservation for a request that will not run is refunded, a
   * permit is released with {@code outcome} (once). Later continuations find the session ended.
   */
  public void end(Outcome outcome) {
    boolean queued = phase == Phase.QUEUED;
    phase = Phase.ENDED;
    QueuePlace place = queue;
    if (place != null) {
      place.cancelTimer();
    }
    if (permit != null || passed()) {
      try {
        release(outcome);
      } finally {
        if (!tail.holds()) { // a held tail keeps the tenant's slot until it is released
          releaseSlot(); // a no-op unless the release above failed before giving it back
        }
      }
      return;
    }
    if (queued && place != null) { // it leaves the queue
      long now = env.ticker().nanos();
      if (env.controller().cancel(place.ticket.pool(), place.ticket.ticket(), now)) {
        env.listener()
            .on(new SessionEvent.Dequeued(subject, "cancelled", now - place.receivedNanos));
      }
    }
    // the request will not run: refunded, given back; an answer still to come as it comes
    checks.release(AdmissionCheck.Release.CANCELLED);
  }

  /** Last resort of a front end whose cleanup failed part-way: the permit goes back silently. */
  public void releaseQuietly(Outcome outcome) {
    if (tail.holds()) {
      return; // the tail's timer (or shutdown) releases it
    }
    Permit p = permit;
    try {
      if (p != null) {
        p.release(outcome, env.ticker().nanos()); // a no-op if it went back already
      }
    } finally {
      releaseSlot();
    }
  }

  // --- a response whose end the front end will not see

  /**
   * The front end will not see the response's end ({@code cause}, e.g. {@code body_mode_none}): the
   * permit is held for the predicted rest of the answer ({@link HeldTail#unseen}); the front end's
   * end paths ({@link #release}, {@link #end}) do not release it before that, nor twice.
   */
  public void responseEndUnseen(String cause) {
    tail.unseen(cause, permit, subject, response.eventStream());
  }

  /**
   * The response's end was seen after all (response trailers after body mode NONE): the tail hold
   * is called off, so the release that follows is an ordinary, measured one.
   */
  public void responseEndSeen() {
    tail.seen();
  }

  /** Gives the checks' holds back, once (every end path calls it; only the first does anything). */
  private void releaseSlot() {
    checks.release(AdmissionCheck.Release.ENDED);
  }

  /** Whether this request holds one of its tenant's slots across replicas now. */
  public boolean holdsTenantSlot() {
    return checks.holds(TenantSlotCheck.Slot.class);
  }

  /** Shadow mode let it through without a permit (ended or not); safe to read from any thread. */
  private boolean passed() {
    ShadowVerdicts sh = shadow;
    return sh != null && sh.passed();
  }

  // --- what events carry

  /**
   * The request's facts now, as an immutable value: built here only, when an event fires (and for
   * tests), so listeners never see the live session.
   */
  RequestFacts facts() {
    TokenEstimate e = estimate;
    ShadowVerdicts sh = shadow;
    QueuePlace place = queue;
    Permit p = permit;
    return new RequestFacts(
        subject,
        arrivalEpochMillis,
        atBody ? "body" : "headers",
        e == null
            ? null
            : new RequestFacts.Estimate(
                e,
                workUnits,
                fanOutWork,
                requestedOutputTokens,
                reserveRule,
                shape.answers(),
                ReserveLearner.scope(subject)),
        new RequestFacts.Decided(
            reason,
            decisionLatencyNanos,
            place == null ? 0 : place.position(),
            queueWaitNanos(),
            refusalWaitNanos,
            admittedDeadlineLeftNanos,
            limitAtDecision),
        plan.facts(p),
        sh == null ? null : sh.facts(),
        attempt(),
        response.facts(tail.cause(), p));
  }

  @Override
  public Subject subject() {
    return subject;
  }

  /** The estimate, or null before one was made. */
  @Override
  public @Nullable TokenEstimate estimate() {
    return estimate;
  }

  @Override
  public long workUnits() {
    return workUnits;
  }

  /** Whether this request holds a place in its workflow's budget now. */
  public boolean holdsWorkflowPlace() {
    return checks.holds(WorkflowPlaceCheck.Place.class);
  }

  public long queueWaitNanos() {
    QueuePlace place = queue;
    return place == null ? 0 : place.waitNanos();
  }

  /** {@link Reason#ADMITTED}, or the reason of the refusal. */
  public Reason reason() {
    return reason;
  }

  /** Admitted (or let through) or refused, ended since or not. */
  public boolean decided() {
    return switch (phase) {
      case RUNNING, REFUSED -> true;
      case CHECKS, DECIDING, QUEUED -> false;
      case ENDED -> permit != null || passed() || reason != Reason.ADMITTED;
    };
  }

  /** Where the session is. */
  public Phase phase() {
    return phase;
  }

  /** Whether a permit was granted (released or not); safe to read from any thread. */
  public boolean hasPermit() {
    return permit != null;
  }

  /** How retry control classified this request ({@code Attempt.UNCLASSIFIED} when it did not). */
  public io.sluice.core.retry.Attempt attempt() {
    RetryAttemptCheck.Claim c = checks.held(RetryAttemptCheck.Claim.class);
    return c == null ? io.sluice.core.retry.Attempt.UNCLASSIFIED : c.attempt;
  }

  /**
   * Whether the request was let through to the upstream (released or not): with a permit, or in
   * shadow mode without one. Safe to read from any thread.
   */
  public boolean runs() {
    return permit != null || passed();
  }

  /**
   * Shadow mode: {@code reject} or {@code queue}, what enforcement would have done ({@link
   * SessionEvent.Shadowed}); null when enforcement would have admitted it too (or it is enforced).
   */
  public @Nullable String would() {
    ShadowVerdicts sh = shadow;
    return sh == null ? null : sh.would();
  }

  /** With {@link #would}: the reason of the would-be refusal, or the capacity reason to queue. */
  public Reason wouldReason() {
    ShadowVerdicts sh = shadow;
    return sh == null ? Reason.ADMITTED : sh.wouldReason();
  }

  /** Waiting in a queue now. */
  public boolean isQueued() {
    return phase == Phase.QUEUED;
  }
}
