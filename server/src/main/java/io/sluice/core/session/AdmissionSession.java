package io.sluice.core.session;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.adapt.AnswerSource;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.PoolState;
import io.sluice.core.admission.Reason;
import io.sluice.core.admission.Waiter;
import io.sluice.core.estimate.EstimateLimits;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.OutputShape;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.estimate.Usage;
import io.sluice.core.policy.WorkflowPolicy;
import io.sluice.core.quota.QuotaCheck;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.quota.WorkflowBudget;
import io.sluice.core.session.SessionSteps.Step;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * One request's admission, from its tenant's rate token to the release of its permit, with no
 * transport in sight. A front end (the ext_proc adapter, a test, later a permit API) opens one per
 * request from the runtime snapshot ({@link Sessions#open}) and drives it:
 *
 * <pre>
 * takeRequestToken ─ decideAtHeaders | decideWithBody ─ (token reservation) ─ (tenant slot) ─ decide
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
 * <p>It owns the sequence: the tenant's request token and token reservation ({@link TenantQuotas}),
 * the capped tenant's slot across replicas ({@link TenantCaps}, shared store only; given back
 * exactly once on every path after it was granted, as the permit is), the estimate, decide / hold /
 * queue with itself as the {@link Waiter}, the permit's release (exactly once: the permit guards
 * it), reconciling the reservation with actual usage, and refunds on refusal or cancel. Each step
 * emits one {@link SessionEvent} to the snapshot's {@link SessionListener}, before the front end is
 * told, so metrics and the decision record never lag an answer.
 *
 * <p>Threading: not thread-safe. Every call comes from the front end's serial context, and every
 * continuation (a quota store's answer, a waiter callback from another request's release or the
 * timer thread) is handed to that context ({@code serial}), so state is touched by one thread at a
 * time and no lock is held while calling into the controller.
 */
public final class AdmissionSession implements Waiter {
  private final Sessions env;
  private final Subject subject;
  private final SessionFront front;
  private final Executor serial;
  private final SessionSteps steps;
  private final long arrivalEpochMillis;

  private @Nullable TokenEstimate estimate;
  // the learned output reserve (OutputReserves): answers and cap of the body, the rule used, and
  // the reserve the old rule gave
  private final OutputShape shape = new OutputShape();
  private String reserveRule = OutputReserves.RULE_OFF;
  private long requestedOutputTokens;
  private long workUnits;
  private boolean atBody;
  private Decision.@Nullable Queued queued;
  private HoldTimer.@Nullable Handle expiry;
  private long heldReceivedNanos;
  private int queuePosition;
  private long queueWaitNanos;
  private long decisionLatencyNanos;
  private boolean tokensReserved;
  private boolean slotHeld; // a tenant slot across replicas, to be given back once
  private long fanOutWork; // of workUnits: what the request's tools and declared calls add
  private boolean workflowHeld; // a place in the workflow's budget, to be given back once
  private long workflowWork; // the work units that place holds
  private boolean decided;
  private boolean ended;
  private Reason reason = Reason.ADMITTED;
  private AdaptiveLimit.@Nullable Snapshot limitAtDecision;
  // shadow mode: what enforcement would have done (SessionEvent.Shadowed), null when nothing
  private @Nullable String would;
  private Reason wouldReason = Reason.ADMITTED;
  private String wouldMessage = "";
  private int wouldStatus;
  private long passedAtNanos;
  private boolean passReleased;
  // shadow: let through without a permit; read by the front end's idle sweep on another thread
  private volatile boolean passed;
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
  private long reservedInput; // the tenant's token reservation, as taken
  private long reservedOutput;
  // --- retries: the attempt as classified, and its operation's in-flight claim
  private io.sluice.core.retry.Attempt attempt = io.sluice.core.retry.Attempt.UNCLASSIFIED;
  private boolean attemptHeld; // the claim, to be given back once (releaseSlot)
  private boolean attemptKept; // a shadow pass runs on: its claim stays until it ends

  AdmissionSession(
      Sessions env, Subject subject, SessionFront front, Executor serial, SessionSteps steps) {
    this.env = env;
    this.subject = subject;
    this.front = front;
    this.serial = serial;
    this.steps = steps;
    this.arrivalEpochMillis = env.clock().millis();
    this.planner = new DegradeLadder(env, subject);
    this.plan = UpstreamPlan.asAsked(subject.pool());
    this.response = new ResponseMeter(env, subject);
    this.tail = new HeldTail(env, serial, () -> release(Outcome.COMPLETED), this::releaseSlot);
  }

  // --- the steps, in order

  /** The tenant's request token (RPM), checked first; then {@code next}, in the serial context. */
  public void takeRequestToken(Runnable next) {
    if (!TenantQuotas.hasRequestBudget(subject.tenant().tier())) {
      next.run();
      return;
    }
    await(
        env.quotas().takeRequest(subject.tenant(), env.clock().millis()),
        check -> {
          countStoreFailure(check);
          if (!check.allowed()) {
            refuse(
                Reason.TENANT_RATE,
                429,
                retryAfterSeconds(check.retryAfterMillis()),
                "tenant request budget (requests per minute) is used up",
                false,
                subject.arrivalNanos());
          } else {
            next.run();
          }
        });
  }

  /**
   * Retry control, right after the request token: classifies the attempt (original or retry, early
   * or after its Retry-After), takes its operation's in-flight claim, and refuses a duplicate, an
   * early retry or a retry over its budget through {@link #refuse}; else {@code next}, in the
   * serial context. The claim is given back exactly once, with the tenant slot.
   */
  public void checkAttempt(Runnable next) {
    io.sluice.core.retry.RetryControl rc = env.retries();
    if (!rc.enabled()) {
      next.run();
      return;
    }
    String pool = subject.pool().name();
    await(
        rc.check(
            pool,
            subject.route(),
            subject.tenant().id(),
            subject.operationId(),
            subject.attempt(),
            () -> env.controller().tenantRetryAfterSeconds(pool)),
        a -> {
          attempt = a;
          attemptHeld = a.claimKey() != null;
          env.listener().on(new SessionEvent.Attempted(subject, a));
          if (ended) { // the front end went away while the store answered
            releaseAttempt();
            return;
          }
          io.sluice.core.retry.Attempt.Refusal r = a.refusal();
          if (r != null) {
            refuse(r.reason(), r.status(), r.retryAfterSeconds(), r.message(), false, now());
          } else {
            next.run();
          }
        });
  }

  private long now() {
    return env.ticker().nanos();
  }

  /** Gives the attempt's in-flight claim back, once. */
  private void releaseAttempt() {
    if (attemptHeld) {
      attemptHeld = false;
      env.retries().complete(attempt);
    }
  }

  /**
   * Decides at request headers. A request without a body costs its output reserve only; one whose
   * content-length is known costs that many bytes; one with a body of unknown size costs {@code
   * estimation.defaultInputTokens}, never 0, counted as the fallback {@code no_content_length}.
   *
   * @param contentLength the declared body size, or -1 when unknown
   */
  public void decideAtHeaders(boolean noBody, long contentLength, long receivedNanos) {
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
    if (!TenantQuotas.hasTokenBudget(subject.tenant().tier())) {
      takeSlot(request, receivedNanos);
      return;
    }
    // Tenant TPM: reserve the estimate now, reconcile with actual usage when the response ends
    await(
        env.quotas()
            .reserveTokens(
                subject.tenant(),
                estimate.inputTokens(),
                estimate.outputReserveTokens(),
                env.clock().millis()),
        check -> {
          countStoreFailure(check);
          if (!check.allowed()) {
            refuse(
                Reason.TENANT_TOKENS,
                429,
                retryAfterSeconds(check.retryAfterMillis()),
                "tenant token budget (tokens per minute) is used up",
                atBody,
                receivedNanos);
            return;
          }
          tokensReserved = !check.storeFailed();
          reservedInput = e.inputTokens();
          reservedOutput = e.outputReserveTokens();
          takeSlot(request, receivedNanos);
        });
  }

  /**
   * A capped tenant's slot across replicas (only with a shared store and a tier {@code
   * maxInFlight}), then the pool's decision. One store round trip; the pool's own per-replica check
   * still runs after it.
   */
  private void takeSlot(AdmissionRequest request, long receivedNanos) {
    if (ended) { // the front end went away while the store answered
      refundTokens();
      return;
    }
    if (!env.caps().applies(subject.tenant().tier())) {
      decideAdmission(request, receivedNanos);
      return;
    }
    CompletableFuture<TenantCaps.SlotCheck> f =
        env.caps()
            .acquire(subject.pool().name(), subject.tenant(), env.quotas().failureMode())
            .toCompletableFuture();
    if (f.isDone() && !f.isCompletedExceptionally()) {
      slotAnswered(f.join(), request, receivedNanos);
      return;
    }
    var unused = // the stage does not fail (a store failure is an answer); handled all the same
        f.whenComplete(
            (c, e) ->
                serial.execute(
                    () -> {
                      if (e != null || c == null) {
                        steps.at(Step.QUOTA);
                        front.storeFailed(e != null ? e : new IllegalStateException("no answer"));
                      } else {
                        slotAnswered(c, request, receivedNanos);
                      }
                    }));
  }

  private void slotAnswered(TenantCaps.SlotCheck c, AdmissionRequest request, long receivedNanos) {
    slotHeld = c.granted(); // from here every path gives it back (releaseSlot)
    steps.at(Step.QUOTA);
    String pool = subject.pool().name();
    env.listener()
        .on(
            new SessionEvent.TenantSlot(
                pool,
                c.storeFailed()
                    ? SessionEvent.TenantSlot.STORE_FAILED
                    : c.granted()
                        ? SessionEvent.TenantSlot.GRANTED
                        : SessionEvent.TenantSlot.DENIED));
    if (c.storeFailed()) {
      env.listener()
          .on(
              c.allowed()
                  ? SessionEvent.QuotaStoreFailed.OPEN
                  : SessionEvent.QuotaStoreFailed.CLOSED);
    }
    if (ended) { // the front end went away while the store answered
      releaseSlot();
      refundTokens();
      return;
    }
    if (!c.allowed()) {
      int cap = subject.tenant().tier().maxInFlight();
      refuse(
          Reason.TENANT_CONCURRENCY,
          429,
          c.storeFailed() ? 1 : env.controller().tenantRetryAfterSeconds(pool),
          c.storeFailed()
              ? "tenant concurrency cap across replicas: the store did not answer"
                  + " (quotas.failureMode closed)"
              : subject
                  .tenant()
                  .capRefusal(
                      "tenant has "
                          + c.total()
                          + " requests in flight or waiting across replicas (cap "
                          + cap
                          + ")"),
          atBody,
          receivedNanos);
      return;
    }
    decideAdmission(request, receivedNanos);
  }

  private void decideAdmission(AdmissionRequest request, long receivedNanos) {
    if (ended) { // the front end went away while the store answered
      releaseSlot();
      refundTokens();
      return;
    }
    if (!takeWorkflowPlace(receivedNanos)) {
      return; // refused fanout_budget (or, in shadow mode, let through)
    }
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
   * A place in the workflow's budget in its pool ({@code pools.<name>.workflow}), before the pool
   * decides; given back with the tenant slot on every path ({@link #releaseSlot}). False when
   * refused {@code fanout_budget}.
   */
  private boolean takeWorkflowPlace(long receivedNanos) {
    String wf = subject.workflow();
    WorkflowPolicy budget = subject.pool().workflow();
    if (wf == null || !budget.enabled()) {
      return true;
    }
    String pool = subject.pool().name();
    PoolState state = env.controller().pool(pool);
    WorkflowBudget.Check c =
        env.workflows()
            .acquire(
                pool,
                wf,
                workUnits,
                budget.maxRequests(),
                budget.maxWork(),
                state == null ? 1.0 : state.replicaShare());
    workflowHeld = c.granted(); // from here every path gives it back (releaseSlot)
    workflowWork = workUnits;
    if (c.allowed()) {
      return true;
    }
    refuse(
        Reason.FANOUT_BUDGET,
        429,
        env.controller().tenantRetryAfterSeconds(pool),
        "workflow has "
            + c.requests()
            + " requests ("
            + c.work()
            + " work units) in flight or waiting in pool "
            + pool
            + "; its budget here: maxRequests "
            + c.requestLimit()
            + ", maxWork "
            + c.workLimit()
            + " (0 = no cap)",
        atBody,
        receivedNanos);
    return false;
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
    if (tokensReserved) { // give back what the cheaper answer no longer needs
      long lessIn = Math.max(0, reservedInput - e.inputTokens());
      long lessOut = Math.max(0, reservedOutput - e.outputReserveTokens());
      if (lessIn > 0 || lessOut > 0) {
        env.quotas().release(subject.tenant(), lessIn, lessOut, env.clock().millis());
        reservedInput -= lessIn;
        reservedOutput -= lessOut;
      }
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
    queued = q;
    heldReceivedNanos = receivedNanos;
    queuePosition = q.position() + 1;
    long maxHold = subject.maxHoldNanos() / 1_000_000L;
    long holdMillis = Math.min(maxHold, (q.holdNanos() + 999_999L) / 1_000_000L);
    env.listener()
        .on(
            new SessionEvent.Queued(
                facts(), env.ticker().nanos() - receivedNanos, q.predictedWaitNanos()));
    front.held(Math.max(1, holdMillis));
    long delay = q.expiresAtNanos() - env.ticker().nanos() + 1_000_000L;
    String pool = q.pool();
    expiry =
        env.timer().schedule(delay, () -> env.controller().expireDue(pool, env.ticker().nanos()));
  }

  @Override
  public void admitted(Permit p, long waitedNanos) {
    serial.execute(
        () -> {
          if (queued == null || ended || permit != null) {
            p.release(Outcome.CANCELLED, env.ticker().nanos()); // the request is gone
            return;
          }
          permit = p; // from here every path releases it
          queued = null;
          steps.at(Step.WAITER);
          cancelTimer();
          queueWaitNanos = waitedNanos;
          env.listener().on(new SessionEvent.Dequeued(subject, "admitted", waitedNanos));
          admit(p, heldReceivedNanos);
        });
  }

  @Override
  public void refused(Decision.Reject r, long waitedNanos) {
    serial.execute(
        () -> {
          if (queued == null || ended) {
            return;
          }
          queued = null; // refused: no longer in the queue
          steps.at(Step.WAITER);
          cancelTimer();
          queueWaitNanos = waitedNanos;
          String outcome = r.reason() == Reason.QUEUE_TIMEOUT ? "expired" : "refused";
          refusalWaitNanos = r.waitNanos();
          env.listener().on(new SessionEvent.Dequeued(subject, outcome, waitedNanos));
          refuse(
              r.reason(),
              r.status(),
              r.retryAfterSeconds(),
              r.message(),
              atBody,
              heldReceivedNanos);
        });
  }

  private void admit(Permit p, long receivedNanos) {
    permit = p;
    decided = true;
    String rung = plan.rung();
    if (rung != null && reason == Reason.ADMITTED) {
      reason = Reason.DEGRADED;
      env.listener().on(new SessionEvent.Degraded(subject, rung, String.valueOf(plan.trigger())));
    }
    if (!passed) { // shadow: observe only, nothing is rewritten
      plan = planner.admitted(plan, atBody);
    }
    admittedDeadlineLeftNanos = Math.max(0, subject.deadlineNanos() - env.ticker().nanos());
    steps.at(Step.ADMIT);
    decisionLatencyNanos = env.ticker().nanos() - receivedNanos - queueWaitNanos;
    limitAtDecision = AdaptiveSignals.limit(env, subject, permit);
    env.listener().on(new SessionEvent.Admitted(facts()));
    if (ended) { // the front end went away while deciding: give the permit back at once
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
    if (subject.shadow() && shadowable(why)) {
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
    decided = true;
    atBody = body;
    planner.refused();
    plan = plan.notDegraded(); // a refused request is not degraded (it may have waited as concise)
    refundTokens();
    releaseSlot();
    env.retries() // retries: its next attempt is early or honours this
        .remember(
            subject.pool().name(),
            subject.tenant().id(),
            subject.operationId(),
            why,
            retryAfterSeconds);
    steps.at(Step.REJECT);
    reason = why;
    decisionLatencyNanos = env.ticker().nanos() - receivedNanos - queueWaitNanos;
    limitAtDecision = AdaptiveSignals.limit(env, subject, permit);
    steps.at(Step.DECISION_LOG);
    env.listener().on(new SessionEvent.Refused(facts(), why, status, retryAfterSeconds, message));
    front.refused(why, status, retryAfterSeconds, message);
  }

  /**
   * Shadow mode lets through what enforcement would refuse, except a request it cannot account to a
   * pool ({@code unknown_route}) and the server's own going away ({@code shutting_down}).
   */
  private static boolean shadowable(Reason why) {
    return why != Reason.UNKNOWN_ROUTE && why != Reason.SHUTTING_DOWN;
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
    decided = true;
    atBody = body;
    if (what.equals(SessionEvent.Shadowed.REJECT)) {
      refundTokens(); // enforcement charges no refused request
    }
    attemptKept = true; // retries: the operation stays claimed while the pass runs
    releaseSlot(); // no place in the tenant's cap, as none in the pool's ledger
    would = what;
    wouldReason = why;
    wouldStatus = status;
    wouldMessage = message;
    steps.at(Step.ADMIT);
    long now = env.ticker().nanos();
    decisionLatencyNanos = now - receivedNanos - queueWaitNanos;
    passedAtNanos = now;
    passed = true; // from here every path ends it (release)
    env.listener()
        .on(new SessionEvent.Shadowed(subject, what, why, status, retryAfterSeconds, message));
    env.listener().on(new SessionEvent.Admitted(facts()));
    if (ended) { // the front end went away while deciding
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
    if (!subject.shadow() || !shadowable(why)) {
      return false;
    }
    if (would == null) {
      would = SessionEvent.Shadowed.REJECT;
      wouldReason = why;
      wouldStatus = status;
      wouldMessage = message;
      env.listener()
          .on(
              new SessionEvent.Shadowed(
                  subject, SessionEvent.Shadowed.REJECT, why, status, 0, message));
    }
    return true;
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
      return passed && endPass(outcome);
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
    if (passReleased) {
      return false;
    }
    passReleased = true;
    attemptKept = false;
    releaseAttempt(); // retries
    long now = env.ticker().nanos();
    steps.at(Step.RELEASE);
    Usage u = endUsage(outcome); // shadow mode learns too: enforcing starts warmed
    steps.at(Step.DECISION_LOG);
    env.listener().on(new SessionEvent.Released(facts(), outcome, now - passedAtNanos, u));
    return true;
  }

  /**
   * The usage the response reported, and the tenant's token reservation reconciled with what the
   * request is charged ({@link ChargeRule}).
   */
  private Usage endUsage(Outcome outcome) {
    Usage u = response.end(outcome, estimate);
    if (tokensReserved && estimate != null) {
      tokensReserved = false;
      Charge c = response.charge();
      env.quotas()
          .reconcile(
              subject.tenant(),
              reservedInput,
              reservedOutput,
              c.inputTokens(),
              c.outputTokens(),
              !c.rule().equals(Charge.RESERVE),
              env.clock().millis())
          .thenAccept(
              rc -> {
                if (rc.refunded() > 0 || rc.overcharged() > 0) {
                  env.listener().on(new SessionEvent.Reconciled(rc.refunded(), rc.overcharged()));
                }
              });
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
    ended = true;
    cancelTimer();
    if (permit != null || passed) {
      try {
        release(outcome);
      } finally {
        if (!tail.holds()) { // a held tail keeps the tenant's slot until it is released
          releaseSlot(); // a no-op unless the release above failed before giving it back
        }
      }
      return;
    }
    Decision.Queued q = queued;
    if (q != null) {
      queued = null;
      refundTokens();
      long now = env.ticker().nanos();
      if (env.controller().cancel(q.pool(), q.ticket(), now)) {
        env.listener().on(new SessionEvent.Dequeued(subject, "cancelled", now - heldReceivedNanos));
      }
    }
    refundTokens(); // the request will not run
    releaseSlot(); // an acquire still outstanding is given back when it answers (ended)
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

  /** Continues with the value of {@code stage} inside the serial context. */
  private <T> void await(CompletionStage<T> stage, Consumer<T> next) {
    CompletableFuture<T> f = steps.quota(stage).toCompletableFuture();
    if (f.isDone() && !f.isCompletedExceptionally()) {
      steps.at(Step.QUOTA);
      next.accept(f.join());
      return;
    }
    var unused = // the callback handles every outcome, errors included
        f.whenComplete(
            (v, e) ->
                serial.execute(
                    () -> {
                      steps.at(Step.QUOTA);
                      if (e != null) {
                        front.storeFailed(e);
                      } else {
                        next.accept(v);
                      }
                    }));
  }

  private void countStoreFailure(QuotaCheck check) {
    if (check.storeFailed()) {
      env.listener()
          .on(
              check.allowed()
                  ? SessionEvent.QuotaStoreFailed.OPEN
                  : SessionEvent.QuotaStoreFailed.CLOSED);
    }
  }

  private static long retryAfterSeconds(long millis) {
    return Math.max(1, (millis + 999) / 1000);
  }

  private void refundTokens() {
    if (tokensReserved) {
      tokensReserved = false;
      env.quotas().release(subject.tenant(), reservedInput, reservedOutput, env.clock().millis());
    }
  }

  /** Gives the tenant slot back, once (every end path calls it; only the first does anything). */
  private void releaseSlot() {
    if (workflowHeld) {
      workflowHeld = false;
      env.workflows()
          .release(subject.pool().name(), Objects.requireNonNull(subject.workflow()), workflowWork);
    }
    if (slotHeld) {
      slotHeld = false;
      env.caps().release(subject.pool().name(), subject.tenant().id());
    }
    if (!attemptKept) {
      releaseAttempt(); // retries
    }
  }

  /** Whether this request holds one of its tenant's slots across replicas now. */
  public boolean holdsTenantSlot() {
    return slotHeld;
  }

  private void cancelTimer() {
    if (expiry != null) {
      expiry.cancel();
      expiry = null;
    }
  }

  // --- what events carry

  /**
   * The request's facts now, as an immutable value: built here only, when an event fires (and for
   * tests), so listeners never see the live session.
   */
  RequestFacts facts() {
    TokenEstimate e = estimate;
    String w = would;
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
            queuePosition,
            queueWaitNanos,
            refusalWaitNanos,
            admittedDeadlineLeftNanos,
            limitAtDecision),
        plan.facts(p),
        w == null ? null : new RequestFacts.Would(w, wouldReason, wouldStatus, wouldMessage),
        attempt,
        response.facts(tail.cause(), p));
  }

  public Subject subject() {
    return subject;
  }

  /** The estimate, or null before one was made. */
  public @Nullable TokenEstimate estimate() {
    return estimate;
  }

  public long workUnits() {
    return workUnits;
  }

  /** Whether this request holds a place in its workflow's budget now. */
  public boolean holdsWorkflowPlace() {
    return workflowHeld;
  }

  public long queueWaitNanos() {
    return queueWaitNanos;
  }

  /** {@link Reason#ADMITTED}, or the reason of the refusal. */
  public Reason reason() {
    return reason;
  }

  /** Admitted or refused. */
  public boolean decided() {
    return decided;
  }

  /** Whether a permit was granted (released or not); safe to read from any thread. */
  public boolean hasPermit() {
    return permit != null;
  }

  /** How retry control classified this request ({@code Attempt.UNCLASSIFIED} when it did not). */
  public io.sluice.core.retry.Attempt attempt() {
    return attempt;
  }

  /**
   * Whether the request was let through to the upstream (released or not): with a permit, or in
   * shadow mode without one. Safe to read from any thread.
   */
  public boolean runs() {
    return permit != null || passed;
  }

  /**
   * Shadow mode: {@code reject} or {@code queue}, what enforcement would have done ({@link
   * SessionEvent.Shadowed}); null when enforcement would have admitted it too (or it is enforced).
   */
  public @Nullable String would() {
    return would;
  }

  /** With {@link #would}: the reason of the would-be refusal, or the capacity reason to queue. */
  public Reason wouldReason() {
    return wouldReason;
  }

  /** Waiting in a queue now. */
  public boolean isQueued() {
    return queued != null;
  }
}
