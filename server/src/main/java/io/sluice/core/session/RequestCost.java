package io.sluice.core.session;

import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.estimate.EstimateLimits;
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
 * session, touched in its serial context.
 */
final class RequestCost {
  private final Sessions env;
  private final Subject subject;
  private final OutputShape shape = new OutputShape(); // the body's answers and cap
  private @Nullable TokenEstimate estimate;
  private String reserveRule = OutputReserves.RULE_OFF; // the learned-reserve rule used
  private long requestedOutputTokens; // the reserve the old rule gave
  private long workUnits;
  private long fanOutWork; // of workUnits: what the request's tools and declared calls add

  RequestCost(Sessions env, Subject subject) {
    this.env = env;
    this.subject = subject;
  }

  /**
   * The estimate at the request headers. A request without a body costs its output reserve only;
   * one whose content-length is known costs that many bytes; one with a body of unknown size costs
   * {@code estimation.defaultInputTokens}, never 0, counted as the fallback {@code
   * no_content_length}.
   *
   * @param contentLength the declared body size, or -1 when unknown
   */
  void atHeaders(boolean noBody, long contentLength) {
    if (noBody || contentLength >= 0) {
      estimate = env.estimator().fromContentLength(Math.max(0, contentLength), limits());
    } else {
      env.listener().on(new SessionEvent.EstimateFellBack("no_content_length"));
      estimate = env.estimator().unknownSize(env.defaultInputTokens(), limits());
    }
  }

  /**
   * The estimate of the buffered body (read in place, never modified): null, or why the body must
   * be refused ({@code invalid_request}: never forward a body the engine reads differently).
   */
  @Nullable String ofBody(byte[] body, int offset, int length) {
    TokenEstimate e =
        env.estimator().estimate(subject.format(), body, offset, length, limits(), shape);
    estimate = e;
    if (e.fallbackCause() != null) {
      env.listener().on(new SessionEvent.EstimateFellBack(e.fallbackCause()));
    }
    String invalid = shape.invalid();
    if (invalid == null && !shape.jsonObject() && writesPriorityField()) {
      invalid = "the body is not a JSON object the engine priority can be written into";
    }
    return invalid;
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

  /**
   * The pool's request: the estimate with the learned output reserve ({@code min(cap, estimate)}
   * per answer, from the key's prior until it has {@code warmup} answers, then its own bound), and
   * its work units.
   */
  AdmissionRequest request() {
    TokenEstimate e = Objects.requireNonNull(estimate, "estimate before decide");
    requestedOutputTokens = e.outputReserveTokens();
    OutputReserves.Reserve r = ReserveLearner.reserve(env.reserves(), subject, e, shape.answers());
    reserveRule = r.rule();
    if (r.outputTokens() != e.outputReserveTokens()) {
      e = e.withOutputReserve(r.outputTokens());
    }
    estimate = e;
    fanOutWork = subject.pool().fanout().workUnits(e.fanOut(), subject.fanout());
    workUnits = subject.pool().workUnits(e.inputTokens(), e.outputReserveTokens(), fanOutWork);
    return new AdmissionRequest(
        subject.pool(),
        subject.requestClass(),
        subject.tenant(),
        workUnits,
        subject.arrivalNanos(),
        subject.deadlineNanos(),
        e.inputTokens(),
        e.outputReserveTokens());
  }

  /** What the request costs as asked (after {@link #request}). */
  Planner.Cost asked() {
    return new Planner.Cost(
        Objects.requireNonNull(estimate, "estimate before the decision"), workUnits, fanOutWork);
  }

  /** The request runs as {@code c}, a planner's cheaper version. */
  void runAs(Planner.Cost c) {
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

  /** For the decision record: the estimate and what it costs, or null before one was made. */
  RequestFacts.@Nullable Estimate facts() {
    TokenEstimate e = estimate;
    return e == null
        ? null
        : new RequestFacts.Estimate(
            e,
            workUnits,
            fanOutWork,
            requestedOutputTokens,
            reserveRule,
            shape.answers(),
            ReserveLearner.scope(subject));
  }
}
