package io.sluice.core.session;

import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Permit;
import io.sluice.core.estimate.EstimateLimits;
import io.sluice.core.estimate.NativeCheck;
import io.sluice.core.estimate.NativeEstimate;
import io.sluice.core.estimate.NativeRequestInfo;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.OutputShape;
import io.sluice.core.estimate.TokenEstimate;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What one request costs: its token estimate (at the headers or of the body), the learned output
 * reserve applied to it ({@link ReserveLearner}), and the work units its pool counts, fan-out
 * included. It builds the pool's {@link AdmissionRequest} and the decision record's {@link
 * RequestFacts.Estimate}; a planner's cheaper version replaces it ({@link #runAs}). One per
 * session, touched in its serial context. Public as a type only (a {@link Planner} reads it).
 */
public final class RequestCost {
  private final Sessions env;
  private final Subject subject;
  private @Nullable OutputShape shape; // the body's answers and cap (made with a body estimate)
  private @Nullable TokenEstimate estimate;
  private String reserveRule = OutputReserves.RULE_OFF; // the learned-reserve rule used
  private long requestedOutputTokens; // the reserve the old rule gave
  private long workUnits;
  private long fanOutWork; // of workUnits: what the request's tools and declared calls add
  private long declared = BODY_DECIDES; // at the headers: the body's size (-1 unknown), or none
  private @Nullable AdmissionRequest admission; // the pool's request, once built
  private RequestFacts.@Nullable Estimate facts; // kept until the estimate changes
  private NativeRequestInfo nativeInfo = NativeRequestInfo.NONE; // Envoy's request info
  // what the pool's request was built from, for its re-estimate when it starts (atStart)
  private volatile @Nullable Asked asked;

  /** The pool's request and what it was built from: the estimate as asked (before the reserve). */
  private record Asked(
      AdmissionRequest request, TokenEstimate estimate, int answers, long fanOutWork) {}

  private static final long BODY_DECIDES = Long.MIN_VALUE; // decided with its body

  RequestCost(Sessions env, Subject subject) {
    this.env = env;
    this.subject = subject;
  }

  /**
   * What the request headers declare ({@link AdmissionSession#begin}): decided at them ({@code
   * atHeaders}) or with its body; no body, or a body of {@code contentLength} bytes (-1 unknown).
   */
  void declared(boolean atHeaders, boolean noBody, long contentLength) {
    declared = !atHeaders ? BODY_DECIDES : noBody ? Math.max(0, contentLength) : contentLength;
  }

  /**
   * The estimate at the request headers, when the request is decided at them (else false). A
   * request without a body costs its output reserve only; one whose content-length is known costs
   * that many bytes; one with a body of unknown size costs {@code estimation.defaultInputTokens},
   * never 0, counted as the fallback {@code no_content_length}.
   */
  boolean atHeaders() {
    if (declared == BODY_DECIDES) {
      return false;
    }
    facts = null;
    if (declared >= 0) {
      estimate =
          env.estimator()
              .fromContentLength(declared, subject.pool().name(), nativeInfo.model(), limits());
    } else {
      env.listener().on(new SessionEvent.EstimateFellBack("no_content_length"));
      estimate = env.estimator().unknownSize(env.defaultInputTokens(), limits());
    }
    if (nativeInfo.any()) { // the estimate source at the headers (NativeEstimate)
      estimate = NativeEstimate.atHeaders(Objects.requireNonNull(estimate), nativeInfo, limits());
      noted(NativeCheck.UNCHECKED, true);
    }
    return true;
  }

  /** Envoy's request info, declared before the headers' estimate ({@link NativeEstimate}). */
  void nativeInfo(NativeRequestInfo info) {
    nativeInfo = info;
  }

  private void noted(String agreement, boolean used) {
    env.listener()
        .on(
            new SessionEvent.Noted(
                subject,
                new NativeCheck(NativeCheck.REQUEST_INFO, NativeCheck.DECLARED, agreement, used)));
  }

  /**
   * The estimate of the buffered body (read in place, never modified): null, or why the body must
   * be refused ({@code invalid_request}: never forward a body the engine reads differently).
   */
  @Nullable String ofBody(byte[] body, int offset, int length) {
    OutputShape shape = new OutputShape();
    this.shape = shape;
    TokenEstimate e =
        env.estimator().estimate(subject.format(), body, offset, length, limits(), shape);
    if (nativeInfo.any()) { // preferred where it declares a field, cross-checked with the body
      boolean agrees = NativeEstimate.agrees(e, nativeInfo, limits(), shape.answers());
      noted(agrees ? NativeCheck.AGREE : NativeCheck.DISAGREE, true);
      e = NativeEstimate.preferred(e, nativeInfo, limits(), shape.answers());
    }
    estimate = e;
    facts = null;
    if (e.fallbackCause() != null) {
      env.listener().on(new SessionEvent.EstimateFellBack(e.fallbackCause()));
    }
    String invalid = shape.invalid();
    if (invalid == null && !shape.jsonObject() && writesPriorityField()) {
      invalid = "the body is not a JSON object the engine priority can be written into";
    }
    return invalid;
  }

  /** An estimate made elsewhere (a replay's recorded one): no body, one answer. */
  void given(TokenEstimate e) {
    shape = null;
    estimate = e;
    facts = null;
  }

  /** Whether the engine priority goes into the body (its member replaces the client's own). */
  private boolean writesPriorityField() {
    return !subject.shadow()
        && DegradeLadder.priorityEdits(env, subject, subject.pool()).priorityField() != null;
  }

  /** The body's answers ({@code n}, {@code best_of}): 1 without a body estimate. */
  private int answers() {
    OutputShape s = shape;
    return s == null ? 1 : s.answers();
  }

  // the last class's limits: immutable, shared by its requests (most classes share the defaults)
  private static volatile @Nullable EstimateLimits lastLimits;

  private EstimateLimits limits() {
    long defaultOutput = subject.requestClass().defaultOutputTokens();
    long maxOutput = subject.requestClass().maxOutputTokens();
    EstimateLimits last = lastLimits;
    if (last != null
        && last.defaultOutputTokens() == defaultOutput
        && last.maxOutputTokens() == maxOutput) {
      return last;
    }
    last = new EstimateLimits(defaultOutput, maxOutput);
    lastLimits = last;
    return last;
  }

  /**
   * The pool's request: the estimate with the learned output reserve ({@code min(cap, estimate)}
   * per answer, from the key's prior until it has {@code warmup} answers, then its own bound), and
   * its work units.
   */
  AdmissionRequest request() {
    facts = null;
    TokenEstimate e = Objects.requireNonNull(estimate, "estimate before decide");
    TokenEstimate asAsked = e;
    requestedOutputTokens = e.outputReserveTokens();
    OutputReserves.Reserve r = ReserveLearner.reserve(env.reserves(), subject, e, answers());
    reserveRule = r.rule();
    if (r.outputTokens() != e.outputReserveTokens()) {
      e = e.withOutputReserve(r.outputTokens());
    }
    estimate = e;
    fanOutWork = subject.pool().fanout().workUnits(e.fanOut(), subject.fanout());
    workUnits = subject.pool().workUnits(e.inputTokens(), e.outputReserveTokens(), fanOutWork);
    AdmissionRequest asked =
        new AdmissionRequest(
            subject.pool(),
            subject.requestClass(),
            subject.tenant(),
            workUnits,
            subject.arrivalNanos(),
            subject.deadlineNanos(),
            e.inputTokens(),
            e.outputReserveTokens());
    admission = asked;
    this.asked = new Asked(asked, asAsked, answers(), fanOutWork);
    return asked;
  }

  /**
   * The pool's request as it would start now ({@link io.sluice.core.admission.Waiter#atStart}): a
   * queued request's output reserve estimated again with what the learner holds now (its key, or
   * the pool's prior, may have warmed while it waited), when that is smaller; else {@code queued}
   * itself. Never above the client's cap nor what it queued with. Under the pool's lock, from any
   * thread: reads only what {@link #request} published.
   */
  AdmissionRequest atStart(AdmissionRequest queued) {
    Asked a = asked;
    if (a == null || a.request() != queued || queued.outputTokens() <= 1) {
      return queued;
    }
    OutputReserves.Reserve r =
        ReserveLearner.reserve(env.reserves(), subject, a.estimate(), a.answers());
    long output = r.outputTokens();
    if (output >= queued.outputTokens()) {
      return queued;
    }
    long work = subject.pool().workUnits(queued.inputTokens(), output, a.fanOutWork());
    if (work >= queued.workUnits() || work <= 0) {
      return queued;
    }
    return new AdmissionRequest(
        queued.pool(),
        queued.requestClass(),
        queued.tenant(),
        work,
        queued.arrivalNanos(),
        queued.deadlineNanos(),
        queued.inputTokens(),
        output);
  }

  /**
   * The pool granted {@code p}: when it started with a smaller output reserve than it was decided
   * with ({@link #atStart}), that reserve is the estimate from here (what the meter grows past,
   * what the decision record and {@code sluice_reserve_decisions_total} show, rule {@code
   * started}); true then.
   */
  boolean started(Permit p) {
    TokenEstimate e = estimate;
    if (e == null || p.outputTokens() < 1 || p.outputTokens() >= e.outputReserveTokens()) {
      return false;
    }
    e = e.withOutputReserve(p.outputTokens());
    estimate = e;
    workUnits = subject.pool().workUnits(e.inputTokens(), e.outputReserveTokens(), fanOutWork);
    reserveRule = OutputReserves.RULE_STARTED;
    facts = null;
    return true;
  }

  /** The pool's request built by {@link #request}, the learned reserve applied. */
  AdmissionRequest admission() {
    return Objects.requireNonNull(admission, "the request before the decision");
  }

  /** The request runs as {@code c}, a planner's cheaper version. */
  void runAs(Planner.Cost c) {
    facts = null;
    estimate = c.estimate();
    workUnits = c.workUnits();
    fanOutWork = c.fanOutWork();
  }

  /** The estimate, or null before one was made. */
  @Nullable TokenEstimate estimate() {
    return estimate;
  }

  long workUnits() {
    return workUnits;
  }

  /** Of {@link #workUnits}: what the request's tools and declared calls add. */
  long fanOutWork() {
    return fanOutWork;
  }

  /**
   * For the decision record: the estimate and what it costs, or null before one was made; the same
   * value until the estimate changes (the events of one request share it).
   */
  RequestFacts.@Nullable Estimate facts() {
    TokenEstimate e = estimate;
    RequestFacts.Estimate f = facts;
    if (e == null || f != null) {
      return f;
    }
    f =
        new RequestFacts.Estimate(
            e,
            workUnits,
            fanOutWork,
            requestedOutputTokens,
            reserveRule,
            answers(),
            ReserveLearner.scope(subject));
    facts = f;
    return f;
  }
}
