package io.sluice.core.session;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.PoolState;
import io.sluice.core.admission.Reason;
import io.sluice.core.admission.Waiter;
import io.sluice.core.estimate.BodyRewrite;
import io.sluice.core.estimate.EstimateLimits;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.OutputShape;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.estimate.Usage;
import io.sluice.core.estimate.UsageExtractor;
import io.sluice.core.policy.DegradePolicy;
import io.sluice.core.policy.EnginePriority;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.session.SessionSteps.Step;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
  private @Nullable UsageExtractor usage;
  private int upstreamStatus;
  private AdaptiveLimit.@Nullable Snapshot limitAtDecision;
  private boolean firstChunkSeen; // a response body chunk before the last one came
  private boolean bodySeen; // any response body chunk came
  private long outputCharge; // output tokens the pool counts for this request now (grows)
  private boolean overran; // the answer streamed past its output reserve
  private Charge charge = Charge.NONE; // what the tenant was charged at the end
  private long firstChunkNanos; // when
  // read by the front end's idle sweep on another thread
  private volatile @Nullable Permit permit;
  // the response's end the front end will not see: the cause, null when it is seen
  private @Nullable String endUnseen;
  private boolean tailDue; // the predicted end (or the deadline) passed
  private boolean tailFrontDone; // the front end is done with the stream
  private boolean tailReleasing; // the tail's own release is under way
  private HoldTimer.@Nullable Handle tailTimer;
  // --- the degrade ladder and what the upstream gets
  private byte @Nullable [] body; // the request body, kept while it may be rewritten (not copied)
  private int bodyOffset;
  private int bodyLength;
  private boolean degradeForbidden;
  private @Nullable String degradedRung; // concise or reroute, null when not degraded
  private @Nullable String degradeTrigger; // wait or headroom
  private PoolPolicy runPool; // the pool the request runs in (another one when rerouted)
  private byte @Nullable [] upstreamBody; // the rewritten body, null when unchanged
  private Map<String, String> upstreamHeaders = Map.of();
  private boolean clearRouteCache;
  private @Nullable String enginePriority; // the engine priority written, null when none
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
    this.runPool = subject.pool();
    this.shadow = ShadowVerdicts.of(subject, env.listener());
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
    if (mayRewrite()) {
      this.body = body;
      this.bodyOffset = offset;
      this.bodyLength = length;
    }
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
    outputCharge = e.outputReserveTokens();
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
    DegradePolicy ladder = ladder();
    boolean tried = false;
    if (ladder != null && ladder.headroomBelow() > 0) {
      PoolState state = env.controller().pool(subject.pool().name());
      if (state != null
          && state.classHeadroom(subject.requestClass().name()) < ladder.headroomBelow()) {
        tried = true;
        if (tryLadder(ladder, TRIGGER_HEADROOM, receivedNanos)) {
          return;
        }
      }
    }
    if (tried) {
      // the pool's free capacity for the class is low and no rung starts the request now: it waits
      // (or is refused) as its concise version, as a concise one that started would have run
      request = waitConcise(Objects.requireNonNull(ladder), request, TRIGGER_HEADROOM);
    }
    long waitTrigger = ladder == null || tried ? 0 : ladder.waitAbove().toNanos();
    Decision d =
        subject.shadow()
            ? env.controller()
                .decide(request, Ask.shadow(subject.maxHoldNanos(), env.ticker().nanos()))
            : env.controller()
                .decide(
                    request,
                    Ask.hold(subject.maxHoldNanos(), this, env.ticker().nanos())
                        .degradeAbove(waitTrigger));
    if (d instanceof Decision.Degradable && ladder != null) {
      if (tryLadder(ladder, TRIGGER_WAIT, receivedNanos)) {
        return;
      }
      // no rung starts it now: it waits (or is refused) as its concise version when it has one
      d =
          env.controller()
              .decide(
                  waitConcise(ladder, request, TRIGGER_WAIT),
                  Ask.hold(subject.maxHoldNanos(), this, env.ticker().nanos()));
    }
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

  // --- the degrade ladder

  /** The ladder's trigger: the predicted wait (or a refusal) of a request that cannot start now. */
  public static final String TRIGGER_WAIT = "wait";

  /** The ladder's trigger: the capacity free for the class fell below the class's level. */
  public static final String TRIGGER_HEADROOM = "headroom";

  /** Why a rung did not admit the request ({@link SessionEvent.DegradeSkipped#cause}). */
  public static final List<String> SKIP_CAUSES = DegradeLadder.SKIP_CAUSES;

  /**
   * The front end's trusted signal (the route's {@code degrade: false}, the {@code noDegrade}
   * signal): this request is never degraded; called before it is decided.
   */
  public void forbidDegradation() {
    degradeForbidden = true;
  }

  /** The class's ladder when this request may be degraded, else null. */
  private @Nullable DegradePolicy ladder() {
    DegradePolicy d = subject.requestClass().degrade();
    if (!d.enabled() || subject.shadow()) {
      return null;
    }
    if (degradeForbidden) {
      env.listener().on(new SessionEvent.DegradeSkipped(subject, "all", "forbidden"));
      return null;
    }
    return d;
  }

  /** Whether the body may be rewritten (kept until the decision): a ladder or engine priority. */
  private boolean mayRewrite() {
    if (subject.shadow()) {
      return false;
    }
    if (subject.requestClass().degrade().enabled() && !degradeForbidden) {
      return true;
    }
    EnginePriority ep = subject.pool().enginePriority();
    return ep.enabled() && ep.field() != null;
  }

  /**
   * Tries the ladder ({@link DegradeLadder}): when a rung starts the request at once, it runs with
   * the rung's estimate, work, pool, body and headers, and is admitted degraded. False when none
   * did; the caller then queues or refuses it as it would have.
   */
  private boolean tryLadder(DegradePolicy ladder, String trigger, long receivedNanos) {
    TokenEstimate e = Objects.requireNonNull(estimate, "estimate before the ladder");
    DegradeLadder.Run run =
        DegradeLadder.tryRungs(
            env,
            ladder,
            new DegradeLadder.Request(
                subject,
                atBody ? body : null,
                bodyOffset,
                bodyLength,
                e,
                workUnits,
                fanOutWork,
                limits()));
    if (run == null) {
      return false;
    }
    runAs(run.estimate(), run.workUnits(), run.body());
    fanOutWork = run.fanOutWork();
    runPool = run.pool();
    upstreamHeaders = run.headers();
    clearRouteCache = run.clearRouteCache();
    degradedRung = run.rung();
    degradeTrigger = trigger;
    admit(run.permit(), receivedNanos);
    return true;
  }

  /**
   * A trigger fired ({@code trigger}: the wait, or the headroom) and no rung starts the request
   * now: with a concise rung (and a body it applies to), the request waits as its concise version —
   * a cheaper answer that frees its place sooner — and is degraded when it starts (refused: not
   * degraded). Else {@code request}.
   */
  private AdmissionRequest waitConcise(
      DegradePolicy ladder, AdmissionRequest request, String trigger) {
    DegradePolicy.Concise c = DegradeLadder.conciseRung(ladder);
    TokenEstimate e = estimate;
    if (c == null || e == null) {
      return request;
    }
    Object v =
        DegradeLadder.conciseVariant(
            env,
            c,
            new DegradeLadder.Request(
                subject,
                atBody ? body : null,
                bodyOffset,
                bodyLength,
                e,
                workUnits,
                fanOutWork,
                limits()));
    if (!(v instanceof DegradeLadder.Variant variant)) {
      return request;
    }
    runAs(variant.estimate(), variant.workUnits(), variant.body());
    degradedRung = DegradePolicy.Concise.NAME;
    degradeTrigger = trigger;
    return new AdmissionRequest(
        subject.pool(),
        subject.requestClass(),
        subject.tenant(),
        variant.workUnits(),
        subject.arrivalNanos(),
        subject.deadlineNanos(),
        variant.estimate().inputTokens(),
        variant.estimate().outputReserveTokens());
  }

  /**
   * The request runs as {@code e} ({@code work} units, the upstream gets {@code rewritten}): the
   * tenant's token reservation is cut to it.
   */
  private void runAs(TokenEstimate e, long work, byte @Nullable [] rewritten) {
    var r = checks.held(TokenReservationCheck.Reservation.class);
    if (r != null) {
      r.cutTo(e); // give back what the cheaper answer no longer needs
    }
    estimate = e;
    workUnits = work;
    outputCharge = e.outputReserveTokens();
    upstreamBody = rewritten;
  }

  /**
   * What the upstream gets beyond the decision's own headers, fixed when the request is admitted:
   * the engine priority (body field and/or header) of the pool it runs in, the rung's rewrite.
   */
  private void prepareUpstream() {
    if (passed()) {
      return; // shadow: observe only, nothing is rewritten
    }
    PoolPolicy pool = runPool;
    EnginePriority ep = pool.enginePriority();
    String v = DegradeLadder.enginePriority(env, subject, pool);
    enginePriority = v;
    if (v != null && ep.header() != null) {
      Map<String, String> h = new LinkedHashMap<>(upstreamHeaders);
      h.put(ep.header(), v);
      upstreamHeaders = h;
    }
    byte[] b = body;
    if (upstreamBody == null && degradedRung == null && v != null && ep.field() != null) {
      if (atBody && b != null) {
        upstreamBody =
            BodyRewrite.apply(
                subject.format(),
                b,
                bodyOffset,
                bodyLength,
                DegradeLadder.priorityEdits(env, subject, pool));
      }
      if (upstreamBody == null && ep.header() == null) {
        enginePriority = null; // written nowhere: the decision must not claim it
      }
    }
    body = null; // decided: the body is not needed any more
  }

  /** The rung that degraded this request ({@code concise}, {@code reroute}), or null. */
  public @Nullable String degradedRung() {
    return degradedRung;
  }

  /** What fired the ladder for a degraded request ({@code wait}, {@code headroom}), or null. */
  public @Nullable String degradeTrigger() {
    return degradeTrigger;
  }

  /** The pool the request runs in: its own, or the reroute rung's. */
  public PoolPolicy runPool() {
    return runPool;
  }

  /** The body the upstream gets instead of the client's, or null when it is unchanged. */
  public byte @Nullable [] upstreamBody() {
    return upstreamBody;
  }

  /** Request headers to set for the upstream (reroute, engine priority); empty when none. */
  public Map<String, String> upstreamHeaders() {
    return upstreamHeaders;
  }

  /** Whether Envoy must pick the route again (the reroute rung changed the routing header). */
  public boolean clearRouteCache() {
    return clearRouteCache;
  }

  /**
   * The predicted wait or drain time a capacity refusal's Retry-After was computed from (before
   * clamping and jitter), or -1 when none (a refusal retrying cannot help, a tenant budget's own
   * refill time).
   */
  public long refusalWaitNanos() {
    return refusalWaitNanos;
  }

  /** The engine priority written for the upstream, or null when none. */
  public @Nullable String enginePriority() {
    return enginePriority;
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
    String rung = degradedRung;
    if (rung != null && reason == Reason.ADMITTED) {
      reason = Reason.DEGRADED;
      env.listener().on(new SessionEvent.Degraded(subject, rung, String.valueOf(degradeTrigger)));
    }
    prepareUpstream();
    admittedDeadlineLeftNanos = Math.max(0, subject.deadlineNanos() - env.ticker().nanos());
    steps.at(Step.ADMIT);
    decisionLatencyNanos = env.ticker().nanos() - receivedNanos - queueWaitNanos();
    noteLimit();
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
    this.body = null;
    degradedRung = null; // a refused request is not degraded (it may have waited as concise)
    degradeTrigger = null;
    upstreamBody = null;
    checks.release(AdmissionCheck.Release.REFUSED); // in reverse order, the reservation refunded
    checks.remember(why, retryAfterSeconds); // retries: its next attempt is early or honours this
    steps.at(Step.REJECT);
    reason = why;
    decisionLatencyNanos = env.ticker().nanos() - receivedNanos - queueWaitNanos();
    noteLimit();
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
    responseHeaders(status, contentType, countStatus, -1);
  }

  /**
   * Response headers from the upstream: its status (an overload shrinks an adaptive pool, and its
   * {@code retryAfterNanos}, negative if none, may pause it), and the usage reader for the body.
   */
  public void responseHeaders(
      int status, String contentType, boolean countStatus, long retryAfterNanos) {
    responseHeaders(
        status,
        contentType,
        countStatus,
        retryAfterNanos,
        io.sluice.core.adapt.AnswerSource.UPSTREAM);
  }

  /**
   * As above, the answer produced by {@code source}: only the upstream's own answers move an
   * adaptive limit (an Envoy local reply or a Sluice refusal is counted apart).
   */
  public void responseHeaders(
      int status,
      String contentType,
      boolean countStatus,
      long retryAfterNanos,
      io.sluice.core.adapt.AnswerSource source) {
    upstreamStatus = status;
    if (countStatus) {
      env.listener().on(new SessionEvent.UpstreamResponded(subject, status));
      Permit p = permit;
      PoolState pool = p == null ? null : adaptivePool();
      if (p != null && pool != null) {
        pool.onAnswer(p, status, retryAfterNanos, source, env.ticker().nanos());
      }
    }
    TokenEstimate e = estimate;
    usage =
        UsageExtractor.forResponse(
            contentType, env.estimator().meter(e == null ? null : e.model()));
  }

  /** A response body chunk, read in place for the usage it reports. */
  public void responseBody(byte[] data, int offset, int length, boolean last) {
    if (length > 0 && !firstChunkSeen && !last) {
      firstChunkSeen = true;
      firstChunkNanos = env.ticker().nanos();
      Permit p = permit;
      PoolState pool = adaptivePool();
      if (p != null && pool != null && upstreamStatus / 100 == 2) {
        pool.onLatency(
            AdaptiveLimit.Signal.TTFT, firstChunkNanos - p.admittedAtNanos(), p.admittedAtNanos());
      }
    }
    if (usage == null || length <= 0) {
      return;
    }
    bodySeen = true;
    if (last) {
      usage.onLastChunk(data, offset, length);
    } else {
      usage.onChunk(data, offset, length); // copies nothing
      if (usage.isEventStream()) {
        meterInFlight(usage.outputSoFar());
      }
    }
  }

  /**
   * The answer streamed {@code produced} output tokens so far: past what the pool counts for it,
   * its charge grows to the tokens produced plus a quarter more (the rest expected; steps of 25 %,
   * so an answer that runs to 8× its reserve grows about 10 times), and the pool's free capacity
   * with it. Released with the permit.
   */
  private void meterInFlight(long produced) {
    Permit p = permit;
    TokenEstimate e = estimate;
    if (p == null || e == null || produced <= outputCharge) {
      return;
    }
    long next = produced + Math.max(1, produced / 4);
    long more =
        runPool.workUnits(e.inputTokens(), next) - runPool.workUnits(e.inputTokens(), outputCharge);
    outputCharge = next;
    boolean first = !overran;
    overran = true;
    long added = p.grow(more);
    env.listener().on(new SessionEvent.OutputOverran(subject, added, produced, first));
  }

  /** Releases the permit (true for the call that did), reconciling the reservation with usage. */
  public boolean release(Outcome outcome) {
    if (inTail()) { // held for a predicted tail: the front end's end is only the stream's close
      return frontDoneInTail();
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
    Usage u = endUsage(outcome);
    if (upstreamStatus / 100 == 2 && degradedRung == null) { // a degraded answer: not the full
      learnReserve(charge.outputTokens(), !answerComplete());
    }
    if (outcome == Outcome.COMPLETED && upstreamStatus / 100 == 2 && u.outputTokens() > 0) {
      timePerOutputToken(p, u.outputTokens(), now);
    }
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
    Usage u = endUsage(outcome);
    if (upstreamStatus / 100 == 2) { // shadow mode learns too: enforcing starts warmed
      learnReserve(charge.outputTokens(), !answerComplete());
    }
    steps.at(Step.DECISION_LOG);
    env.listener().on(new SessionEvent.Released(facts(), outcome, now - sh.passedAtNanos(), u));
    return true;
  }

  /**
   * The usage the response reported, and the tenant's token reservation reconciled with what the
   * request is charged ({@link #chargeFor}).
   */
  private Usage endUsage(Outcome outcome) {
    Usage u = Usage.NONE;
    if (usage != null) {
      usage.onEnd();
      u = usage.usage();
    }
    TokenEstimate e = estimate;
    if (e == null) {
      return u;
    }
    charge = chargeFor(outcome, e, u);
    var r = checks.held(TokenReservationCheck.Reservation.class);
    if (r != null) {
      r.reconcile(charge);
    }
    return u;
  }

  /**
   * What a request that ran is charged, by how its answer ended (docs/estimation.md,
   * "Reconciliation"): the reported usage of a complete answer; for a request cut before any answer
   * began, its input; nothing for an upstream error without usage; for a stream cut short (or
   * complete without usage), the output streamed (the larger of the usage reported on the way and
   * the metered text) and the reported or estimated input; the reservation for an answer Sluice
   * could not see (response body mode NONE, a JSON body without usage).
   */
  private Charge chargeFor(Outcome outcome, TokenEstimate e, Usage u) {
    UsageExtractor x = usage;
    long metered = x == null ? 0 : x.meteredOutputTokens();
    boolean complete = x != null && x.complete();
    boolean stream = x != null && x.isEventStream();
    // A stream's usage is final only with its last event: one that ended without it (an upstream
    // that closed mid-answer) reported at most its usage on the way (Anthropic's message_start:
    // output_tokens 2), and is charged below as a stream cut short.
    if (u.reported() && (complete || (outcome == Outcome.COMPLETED && bodySeen && !stream))) {
      return new Charge(Charge.REPORTED, u.inputTokens(), u.outputTokens(), metered);
    }
    if (x == null) { // no answer began: the prompt went upstream, nothing came back
      return new Charge(Charge.NO_ANSWER, e.inputTokens(), 0, 0);
    }
    if (upstreamStatus >= 400 && !u.reported()) {
      return new Charge(Charge.UPSTREAM_ERROR, 0, 0, metered);
    }
    if (!bodySeen && outcome == Outcome.COMPLETED) { // the answer went by unseen
      return new Charge(Charge.RESERVE, e.inputTokens(), e.outputReserveTokens(), 0);
    }
    if (stream) { // what the stream showed is what was produced
      long input = u.reported() && u.inputTokens() > 0 ? u.inputTokens() : e.inputTokens();
      return new Charge(Charge.STREAMED, input, x.outputSoFar(), metered);
    }
    if (u.reported()) { // a JSON answer cut after its usage
      return new Charge(Charge.REPORTED, u.inputTokens(), u.outputTokens(), metered);
    }
    return new Charge(Charge.RESERVE, e.inputTokens(), e.outputReserveTokens(), metered);
  }

  /** Output tokens the pool counts for this request now (the reserve, or grown past it). */
  public long outputCharge() {
    return outputCharge;
  }

  /**
   * Whether the answer's own end was seen and its output is known: a complete answer with its
   * reported usage, or a complete stream whose text was metered (no usage sent). Only those teach
   * the learned reserve: a cut answer would teach it its cut.
   */
  private boolean answerComplete() {
    UsageExtractor x = usage;
    return charge.rule().equals(Charge.REPORTED)
        || (charge.rule().equals(Charge.STREAMED) && x != null && x.complete());
  }

  /**
   * The estimate with the learned output reserve: {@code min(cap, estimate)} per answer, the
   * estimate from the key's prior until it has {@code warmup} answers, then its own bound.
   */
  private TokenEstimate learnedReserve(TokenEstimate e) {
    requestedOutputTokens = e.outputReserveTokens();
    OutputReserves.Reserve r =
        env.reserves()
            .reserve(
                subject.pool().name(),
                e.model(),
                reserveScope(),
                subject.tenant().id(),
                subject.requestClass().reserveQuantile(),
                e.outputReserveTokens() / shape.answers(),
                subject.requestClass().defaultOutputTokens(),
                shape.answers(),
                e.outputReserveTokens());
    reserveRule = r.rule();
    return r.outputTokens() == e.outputReserveTokens() ? e : e.withOutputReserve(r.outputTokens());
  }

  /**
   * An answer's actual output, learned for the next requests of its key: a complete one as it is;
   * one cut short ({@code cut}: what a stream showed before a cancel or reset) as a lower bound.
   */
  private void learnReserve(long outputTokens, boolean cut) {
    TokenEstimate e = estimate;
    if (e == null || (cut && !charge.rule().equals(Charge.STREAMED))) {
      return; // nothing of the answer was seen
    }
    OutputReserves r = env.reserves();
    String pool = subject.pool().name();
    String scope = reserveScope();
    String tenant = subject.tenant().id();
    double q = subject.requestClass().reserveQuantile();
    long cap = requestedOutputTokens / shape.answers();
    if (cut) {
      r.recordCut(pool, e.model(), scope, tenant, q, cap, shape.answers(), outputTokens);
    } else {
      r.record(pool, e.model(), scope, tenant, q, cap, shape.answers(), outputTokens);
    }
  }

  /** The route's name, or the class's when the route has none. */
  private String reserveScope() {
    String route = subject.route();
    return route != null && !route.isEmpty() ? route : "class:" + subject.requestClass().name();
  }

  /** For the decision record: an adaptive pool's limit when this request was decided. */
  private void noteLimit() {
    PoolState pool = adaptivePool();
    AdaptiveLimit a = pool == null ? null : pool.adaptive();
    if (a != null) {
      limitAtDecision = a.snapshot(env.ticker().nanos());
    }
  }

  /** The pool of this request when its limit is adaptive, else null. */
  private @Nullable PoolState adaptivePool() {
    Permit p = permit;
    PoolState pool = p != null ? p.pool() : env.controller().pool(subject.pool().name());
    return pool != null && pool.adaptive() != null ? pool : null;
  }

  /**
   * An adaptive pool's time-per-output-token sample of a completed answer: from its first chunk to
   * its end over the tokens after the first when it streamed, else its whole time over its tokens.
   */
  private void timePerOutputToken(Permit p, long outputTokens, long now) {
    PoolState pool = adaptivePool();
    if (pool == null) {
      return;
    }
    double tpot =
        firstChunkSeen && outputTokens >= 2
            ? (double) (now - firstChunkNanos) / (outputTokens - 1)
            : (double) (now - p.admittedAtNanos()) / outputTokens;
    pool.onLatency(AdaptiveLimit.Signal.TPOT, tpot, p.admittedAtNanos());
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
        if (!inTail()) { // a held tail keeps the tenant's slot until it is released
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
    if (inTail()) {
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
   * The front end will not see the response's end ({@code cause}, e.g. {@code body_mode_none}:
   * Envoy sends no response body and may close the stream right after the response headers, at the
   * answer's first token). The permit is held for the predicted rest of the answer: until {@code
   * admittedAt + }{@link PoolState#tailNanos} (from the headers time now, its reserved output and
   * the pool's learned time per output token; at most the request's deadline), and, if the front
   * end's stream is still open then, until it closes (Envoy before 1.37 keeps it to the request's
   * end); at once when both have passed. The front end's end paths ({@link #release}, {@link #end})
   * do not release it before that, nor twice. Its release is {@link Outcome#COMPLETED} and teaches
   * the pool no service time ({@link Permit#markEndUnseen}); the token reservation stays charged
   * (no usage is seen). Emits {@link SessionEvent.ResponseEndUnseen}. A shadow pass (no permit)
   * ends at once.
   */
  public void responseEndUnseen(String cause) {
    if (endUnseen != null) {
      return;
    }
    endUnseen = cause;
    Permit p = permit;
    boolean guessed = p != null && p.pool().serviceTimeGuessed();
    env.listener().on(new SessionEvent.ResponseEndUnseen(subject, cause, guessed));
    if (p == null || !p.markEndUnseen()) {
      release(Outcome.COMPLETED); // nothing held (a shadow pass), or released already (a no-op)
      return;
    }
    if (!env.tails().add(this)) { // the server shuts down
      tailDue = true;
      tailFrontDone = true;
      releaseTail();
      return;
    }
    long now = env.ticker().nanos();
    // called at the response headers: of a streamed answer (SSE), they came with its first token;
    // of a whole one, with its end (the headers time is then no first token: not used)
    UsageExtractor u = usage;
    long headers = u != null && u.isEventStream() ? now - p.admittedAtNanos() : -1;
    long rest =
        Math.min(
            p.pool().tailNanos(p, headers),
            Math.max(0, subject.deadlineNanos() - p.admittedAtNanos()));
    long delay = p.admittedAtNanos() + rest - now;
    if (delay <= 0) {
      tailDue = true;
    } else {
      tailTimer = env.timer().schedule(delay, () -> serial.execute(this::onTailDue));
    }
  }

  /**
   * The response's end was seen after all (response trailers after body mode NONE): the tail hold
   * is called off, so the release that follows is an ordinary, measured one.
   */
  public void responseEndSeen() {
    Permit p = permit;
    if (endUnseen == null || p == null || p.isReleased()) {
      return;
    }
    endUnseen = null;
    env.tails().remove(this);
    cancelTailTimer();
    p.markEndSeen();
  }

  /** Held for a predicted tail and not released yet. */
  private boolean inTail() {
    Permit p = permit;
    return endUnseen != null && !tailReleasing && p != null && p.endUnseen() && !p.isReleased();
  }

  private boolean frontDoneInTail() {
    tailFrontDone = true;
    return tailDue && releaseTail();
  }

  private void onTailDue() {
    tailTimer = null;
    tailDue = true;
    if (inTail() && tailFrontDone) {
      releaseTail();
    }
  }

  /** Shutdown ({@link TailHolds#releaseAll}): the tail ends now, in the serial context. */
  void endTailNow() {
    serial.execute(
        () -> {
          tailDue = true;
          tailFrontDone = true;
          if (inTail()) {
            releaseTail();
          }
        });
  }

  private boolean releaseTail() {
    tailReleasing = true;
    env.tails().remove(this);
    cancelTailTimer();
    boolean released = release(Outcome.COMPLETED);
    releaseSlot(); // a no-op after the release above
    return released;
  }

  private void cancelTailTimer() {
    if (tailTimer != null) {
      tailTimer.cancel();
      tailTimer = null;
    }
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
    String c = endUnseen;
    ShadowVerdicts sh = shadow;
    QueuePlace place = queue;
    return new RequestFacts(
        subject,
        arrivalEpochMillis,
        atBody ? "body" : "headers",
        e == null
            ? null
            : new RequestFacts.Estimate(
                e, workUnits, fanOutWork, requestedOutputTokens, reserveRule),
        new RequestFacts.Decided(
            reason,
            decisionLatencyNanos,
            place == null ? 0 : place.position(),
            queueWaitNanos(),
            refusalWaitNanos,
            admittedDeadlineLeftNanos,
            limitAtDecision),
        new RequestFacts.Run(runPool, permit != null, degradedRung, degradeTrigger, enginePriority),
        sh == null ? null : sh.facts(),
        attempt(),
        new RequestFacts.End(upstreamStatus, c == null ? "seen" : c, overran, charge));
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
