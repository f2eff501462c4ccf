package io.sluice.extproc;

import io.sluice.core.admission.Reason;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.BodyRouter;
import io.sluice.core.session.SessionFront;
import io.sluice.core.session.SessionSteps;
import io.sluice.core.session.Subject;
import io.sluice.routing.ResolvedRequest;
import java.util.concurrent.Executor;
import org.jspecify.annotations.Nullable;

/**
 * A request whose pool its body chooses ({@link BodyRouter}, e.g. an MCP {@code tools/call}): its
 * headers are let on without a session, the session opens at the body with the router's subject,
 * runs its headers' checks, then decides the body it was opened with. A refusal is answered in the
 * router's protocol. One per such stream, in its serial context.
 */
final class BodyRouting {
  private final ResolvedRequest resolved;
  private final long headersNanos;
  private final long contentLength;
  private byte @Nullable [] body; // the body to decide once the headers' checks let it on
  private int offset;
  private int length;
  private long bodyNanos;
  private BodyRouter.@Nullable Refusals refusals;
  private AdmissionCheck.@Nullable Answered answer; // the router's own answer to the body
  private @Nullable AdmissionSession session; // opened at the body
  private @Nullable String overLimit; // the body's size over the limit, or null

  private BodyRouting(ResolvedRequest resolved, long headersNanos, long contentLength) {
    this.resolved = resolved;
    this.headersNanos = headersNanos;
    this.contentLength = contentLength;
  }

  /**
   * A routing for the request resolved as {@code r}, or null when its session opens at its headers
   * as usual: its route is not the router's, it is refused at its headers, it has no body to decide
   * with, or its declared body is over the limit (refused there).
   */
  static @Nullable BodyRouting of(
      AdmissionRuntime rt,
      ResolvedRequest r,
      boolean bodyDecides,
      @Nullable String overLimit,
      long contentLength,
      long now) {
    if (!bodyDecides
        || r.rejectReason() != null
        || overLimit != null
        || !rt.sessions().bodyRouter().routes(r.route())) {
      return null;
    }
    return new BodyRouting(r, now, contentLength);
  }

  /**
   * The body arrived: routed, the session opened and returned, to be {@link #start started} once
   * the front end holds it; the body is decided at {@link #decide} once the session wants it. A
   * body over the limit is refused (413) in the pool resolved at the headers.
   */
  AdmissionSession open(
      AdmissionRuntime rt,
      SessionFront front,
      SerialExecutor serial,
      SessionSteps steps,
      Inbound in,
      EnvoyRequest request,
      long now) {
    byte[] bytes = in.bodyArray();
    int off = in.bodyOffset();
    int len = in.bodyLength();
    overLimit = EnvoyRequest.overLimit(len, rt.config().limits(), "request body");
    Subject atHeaders = resolved.subject(headersNanos);
    BodyRouter.Route route =
        overLimit != null
            ? BodyRouter.Route.AS_RESOLVED
            : rt.sessions().bodyRouter().route(atHeaders, bytes, off, len);
    Subject subject = route instanceof BodyRouter.Route.InPool p ? p.subject() : atHeaders;
    if (route instanceof BodyRouter.Route.InPool p) {
      refusals = p.refusals();
    }
    AdmissionSession s =
        rt.sessions().open(subject, front, serial, steps, serial.stepMillisOr(rt.clock()));
    if (resolved.noDegrade()) {
      s.forbidDegradation();
    }
    if (route instanceof BodyRouter.Route.Answer a) {
      answer = a.answer();
    } else if (overLimit == null) {
      body = bytes;
      offset = off;
      length = len;
    }
    bodyNanos = now;
    session = s;
    return s;
  }

  /** Starts the session {@link #open} made: refused at once, or begun (its headers' checks). */
  void start() {
    AdmissionSession s = java.util.Objects.requireNonNull(session, "session");
    AdmissionCheck.Answered a = answer;
    String over = overLimit;
    if (over != null) {
      s.refuse(Reason.BODY_TOO_LARGE, 413, 0, over, true, bodyNanos);
    } else if (a != null) {
      s.refuse(a.reason(), a.status(), 0, a.reason().code(), true, bodyNanos);
    } else {
      s.begin(false, false, contentLength, headersNanos);
    }
  }

  /**
   * The session wants the body: decides the one it was opened with (true), or false when there is
   * no session or no such body yet (at the headers: the usual wait for it).
   */
  boolean decide(Executor serial, java.util.function.BooleanSupplier live) {
    byte[] b = body;
    AdmissionSession s = session;
    if (b == null || s == null) { // at the headers: no session yet
      return false;
    }
    body = null;
    // after the step that asked (the headers' checks may have answered at once)
    serial.execute(
        () -> {
          if (live.getAsBoolean()) {
            s.decideWithBody(b, offset, length, bodyNanos);
          }
        });
    return true;
  }

  /** The answer to a refusal in the router's protocol, or null for the front end's own. */
  AdmissionCheck.@Nullable Answered refusal(
      Reason reason, int status, long retryAfterSeconds, String message) {
    AdmissionCheck.Answered a = answer;
    if (a != null) {
      return a;
    }
    BodyRouter.Refusals r = refusals;
    return r == null ? null : r.refusal(reason, status, retryAfterSeconds, message);
  }
}
