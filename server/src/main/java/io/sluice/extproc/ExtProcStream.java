package io.sluice.extproc;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest.RequestCase;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.SessionSteps;
import io.sluice.core.session.Subject;
import io.sluice.observability.StreamTally;
import io.sluice.routing.ResolvedRequest;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One ext_proc stream = one HTTP request: the Envoy protocol mapping of an {@link
 * AdmissionSession}, which owns the admission itself (quotas, estimate, decide / queue, release).
 *
 * <pre>
 * request_headers ─┬─ decide now (headers-only route, no body, body mode NONE/STREAMED) ─┐
 *                  └─ CONTINUE, wait ─ request_body (BUFFERED) ─ decide ──────────────────┤
 *                        admit: CONTINUE + headers + dynamic metadata; reject: ImmediateResponse
 * response_headers ─ observe status ─ (body mode NONE or end_of_stream: release)
 * response_body*  ─ CONTINUE each chunk at once, extract usage ─ end_of_stream: release
 * cancel / error / half-close at any point ─ release exactly once
 * </pre>
 *
 * <p>Every message gets exactly one answer. Internal failures and out-of-phase messages end the
 * stream with a non-OK status so Envoy's {@code failure_mode_allow} decides; the stream is never
 * ended OK before the outstanding message is answered. Queue-hold: a queued request's deciding
 * message is answered at once with only {@code override_message_timeout} (within Envoy's {@code
 * max_message_timeout}); the real answer follows from the session before the hold ends.
 *
 * <p>Concurrency: every event — inbound messages, cancellation, and the session's continuations
 * (waiter callbacks from other streams' releases or the timer thread, quota store answers) — runs
 * through one {@link SerialExecutor} per stream, so state is touched by one thread at a time.
 */
final class ExtProcStream extends LiveStreams.Node
    implements StreamObserver<Inbound>, AdmissionSession.Front {
  private static final Logger LOG = LoggerFactory.getLogger(ExtProcStream.class);

  private final AdmissionRuntime rt;
  private final ServerCallStreamObserver<Answer> out;
  private final Metadata initialMetadata;
  private final AtomicBoolean closed = new AtomicBoolean();
  // A task that throws (a session continuation, a bug anywhere) ends the stream through the fail
  // path: no exception leaves a stream open or a permit held.
  private final SerialExecutor sync = new SerialExecutor(this::internalError);
  private final StreamFaults faults;
  private final SessionSteps steps;
  private final LiveStreams<ExtProcStream> live;
  // LiveStreams picks a stripe by it: a random int is cheaper than the identity hash
  private final int hash = java.util.concurrent.ThreadLocalRandom.current().nextInt();

  private StreamPhase phase = StreamPhase.START;
  private AdmissionSession session; // from request headers on
  private boolean outstanding; // a message was received and its answer not yet sent
  private boolean headersSeen;
  // When the stream last heard from the client or answered it. Plain: the sweep's first read is a
  // hint, the check that acts runs in the stream's serial context and reads it exactly.
  private long lastActivityNanos;
  private long streamedBytes; // request body bytes seen in STREAMED chunks
  private boolean streamedRefused;
  private BodySendMode requestBodyMode;
  private BodySendMode responseBodyMode;
  private boolean responseHeadersSeen;
  private boolean responseBodySeen;
  // A client-side gRPC filter (grpc-java's xDS ext_proc, gRFC A93) sends no pseudo-headers: the
  // call ends at response trailers or the stream's close, not at response headers.
  private boolean proxyless;
  private boolean grpcRequest; // refusals carry grpc_status

  ExtProcStream(
      AdmissionRuntime rt,
      ServerCallStreamObserver<Answer> out,
      Metadata md,
      LiveStreams<ExtProcStream> live,
      StreamFaults faults,
      SessionSteps steps) {
    this.rt = rt;
    this.faults = faults;
    this.steps = steps;
    this.out = out;
    this.initialMetadata = md;
    this.live = live;
    this.lastActivityNanos = rt.ticker().nanos();
  }

  @Override
  public int hashCode() {
    return hash;
  }

  @Override
  public boolean equals(Object o) {
    return this == o;
  }

  /** Marks the stream closed once (true for the call that did); an undecided end is counted. */
  private boolean markClosed(StreamTally.Close how) {
    if (!closed.compareAndSet(false, true)) {
      return false;
    }
    live.remove(this, how); // counted there (sluice_extproc_streams_total)
    if (session == null || !session.decided()) {
      try {
        String where = phase.undecidedTag(headersSeen);
        rt.metrics().streamUndecided(where, how.tag());
        Subject s = session != null ? session.subject() : null;
        StreamWarnings.warn(
            "ext_proc stream ended before a decision: phase={} end={} pool={} class={}",
            where,
            how.tag(),
            s != null ? s.pool().name() : "none",
            s != null ? s.requestClass().name() : "none");
      } catch (RuntimeException e) {
        LOG.debug("counting an undecided stream failed", e); // never stops the close
      }
    }
    return true;
  }

  @Override
  public void onNext(Inbound req) {
    long received = rt.ticker().nanos();
    sync.execute(() -> handle(req, received));
  }

  private void handle(Inbound req, long received) {
    if (closed.get()) {
      return;
    }
    lastActivityNanos = received;
    if (req.malformedCause() != null) {
      // counted, one WARN line without a stack trace, then the stream's own fail path
      rt.metrics().streamError("malformed_frame");
      StreamWarnings.warn(
          "ext_proc stream ended INVALID_ARGUMENT: a {}-byte frame does not parse in phase {}: {}",
          req.frameSize(),
          phase.name().toLowerCase(Locale.ROOT),
          req.malformedCause());
      fail(
          Status.INVALID_ARGUMENT.withDescription(
              "ProcessingRequest does not parse: " + req.malformedCause()),
          Outcome.ERROR);
      return;
    }
    outstanding = true;
    if (phase == StreamPhase.QUEUED) {
      if (proxyless
          && req.requestCase() == RequestCase.RESPONSE_HEADERS
          && req.headersEndOfStream()) {
        // a proxyless client's call ended while held (its deadline): the trailers-only response
        abandon(Outcome.CANCELLED); // leaves the queue, reservation refunded
        send(Responses.CONTINUE_RESPONSE_HEADERS);
      } else { // Envoy sends nothing new while a message is outstanding
        protocolError("out_of_phase", req.requestCase() + " while the request is held");
      }
      return;
    }
    try {
      switch (req.requestCase()) {
        case REQUEST_HEADERS -> onRequestHeaders(req, received);
        case REQUEST_BODY -> onRequestBody(req, received);
        case REQUEST_TRAILERS ->
            answerIf(
                phase != StreamPhase.START && phase != StreamPhase.DONE,
                Responses.CONTINUE_REQUEST_TRAILERS,
                "request_trailers");
        case RESPONSE_HEADERS -> onResponseHeaders(req);
        case RESPONSE_BODY -> onResponseBody(req);
        case RESPONSE_TRAILERS -> {
          if (answerIf(responding(), Responses.CONTINUE_RESPONSE_TRAILERS, "response_trailers")) {
            release(Outcome.COMPLETED);
          }
        }
        default -> protocolError("unknown_message", "ProcessingRequest carries no known message");
      }
    } catch (RuntimeException e) {
      internalError(e);
    }
  }

  private void onRequestHeaders(Inbound req, long now) {
    if (phase != StreamPhase.START) {
      protocolError("out_of_phase", "request_headers after " + phase);
      return;
    }
    headersSeen = true;
    if (req.hasProtocolConfig()) {
      requestBodyMode = req.requestBodyMode();
      responseBodyMode = req.responseBodyMode();
    }
    EnvoySignals signals = new EnvoySignals(initialMetadata, req, rt.tables());
    proxyless = signals.header(":method") == null && signals.header(":path") == null;
    String contentType = signals.header("content-type");
    grpcRequest =
        proxyless
            || (contentType != null
                && contentType.regionMatches(true, 0, "application/grpc", 0, 16));
    if (requestBodyMode == BodySendMode.UNRECOGNIZED
        || responseBodyMode == BodySendMode.UNRECOGNIZED) {
      // e.g. grpc-java's BodySendMode GRPC: the client forwards a message only once the server
      // sends it back as a body mutation, which Sluice does not do
      protocolError(
          "unsupported_body_mode",
          "body send mode not supported: set request_body_mode and response_body_mode to NONE");
      return;
    }
    faults.at(StreamFaults.Step.RESOLVE);
    ResolvedRequest r = rt.resolver().resolve(signals, now, rt.decisionLog().enabled());
    session =
        rt.sessions()
            .open(
                new Subject(
                    r.route(),
                    r.pool(),
                    r.requestClass(),
                    r.format(),
                    r.tenant(),
                    now,
                    r.deadlineNanos(),
                    r.operationId(),
                    r.maxMessageTimeoutMillis() * 1_000_000L),
                this,
                sync,
                steps);
    if (r.rejectReason() != null) {
      Reason why = r.rejectReason();
      session.refuse(why, why.defaultStatus(), 0, r.rejectMessage(), false, now);
      return;
    }
    long contentLength = parseLong(signals.header("content-length"), -1);
    if (tooLarge(contentLength, "request body of " + contentLength, false, now)) {
      return;
    }
    boolean noBody = req.headersEndOfStream();
    boolean decideAtHeaders =
        noBody
            || r.estimateFrom() == SluiceConfig.EstimateFrom.HEADERS
            || (requestBodyMode != null
                && requestBodyMode != BodySendMode.BUFFERED
                && requestBodyMode != BodySendMode.BUFFERED_PARTIAL);
    session.takeRequestToken(
        () -> {
          if (decideAtHeaders) {
            session.decideAtHeaders(noBody, contentLength, now);
          } else {
            phase = StreamPhase.AWAIT_BODY;
            send(Responses.CONTINUE_REQUEST_HEADERS);
          }
        });
  }

  /** Refuses with 413 {@code body_too_large} when {@code bytes} exceed the limit. */
  private boolean tooLarge(long bytes, String what, boolean atBody, long now) {
    long max = rt.config().limits().maxBodyBytes();
    if (bytes <= max) {
      return false;
    }
    String message = what + " bytes exceeds the limit of " + max;
    session.refuse(Reason.BODY_TOO_LARGE, 413, 0, message, atBody, now);
    return true;
  }

  private void onRequestBody(Inbound body, long now) {
    if (phase == StreamPhase.ADMITTED && requestBodyMode == BodySendMode.STREAMED) {
      // streamed chunks after a headers-time decision: limits.maxBodyBytes holds for their sum;
      // over it, the permit goes back (the request will not complete) and the chunk gets the 413,
      // which Envoy accepts for any phase before the response started
      streamedBytes += body.bodyLength();
      if (streamedBytes > rt.config().limits().maxBodyBytes()) {
        streamedRefused = true;
        release(Outcome.CANCELLED);
        tooLarge(streamedBytes, "streamed request body of " + streamedBytes, true, now);
        return;
      }
      send(Responses.CONTINUE_REQUEST_BODY);
      return;
    }
    if (phase == StreamPhase.DONE && streamedRefused) {
      // Chunks Envoy pipelined before it processed the 413: it answers nothing more after an
      // ImmediateResponse, so they need none.
      outstanding = false;
      return;
    }
    if (phase != StreamPhase.AWAIT_BODY) {
      protocolError("out_of_phase", "request_body in phase " + phase);
      return;
    }
    int length = body.bodyLength();
    if (!tooLarge(length, "request body of " + length, true, now)) {
      session.decideWithBody(body.bodyArray(), body.bodyOffset(), length, now);
    }
  }

  private void onResponseHeaders(Inbound h) {
    if (phase != StreamPhase.ADMITTED) {
      protocolError("out_of_phase", "response_headers in phase " + phase);
      return;
    }
    responseHeadersSeen = true;
    // a proxyless client sends no :status (gRPC's status is in the trailers): not counted
    session.responseHeaders(
        (int) parseLong(h.header(":status"), 0), h.header("content-type"), !proxyless);
    send(Responses.CONTINUE_RESPONSE_HEADERS);
    if (h.headersEndOfStream() || (responseBodyMode == BodySendMode.NONE && !proxyless)) {
      // Body mode NONE: Envoy sends nothing more, so the permit covers time to response headers.
      // A proxyless client's call runs on (a stream of messages): it ends at response trailers or
      // at the client's close of this stream, which it sends when the call closes.
      release(Outcome.COMPLETED);
    }
  }

  private void onResponseBody(Inbound body) {
    if (!answerIf(responding(), null, "response_body")) {
      return;
    }
    responseBodySeen = true;
    boolean last = body.bodyEndOfStream();
    session.responseBody(body.bodyArray(), body.bodyOffset(), body.bodyLength(), last);
    send(Responses.CONTINUE_RESPONSE_BODY);
    if (last) {
      release(Outcome.COMPLETED);
    }
  }

  /** Response messages flow while admitted, and after the release (late chunks, trailers). */
  private boolean responding() {
    return phase == StreamPhase.ADMITTED
        || (phase == StreamPhase.DONE && session != null && session.hasPermit());
  }

  /** Answers with {@code answer} (if any) when {@code inPhase}, else ends out of phase. */
  private boolean answerIf(boolean inPhase, Answer answer, String message) {
    if (!inPhase) {
      protocolError("out_of_phase", message + " in phase " + phase);
      return false;
    }
    if (answer != null) {
      send(answer);
    }
    return true;
  }

  // --- the session's answers (AdmissionSession.Front), in this stream's serial context

  @Override
  public void admitted(boolean atBody) {
    phase = StreamPhase.ADMITTED;
    send(DecisionAnswers.admit(rt, session, atBody));
  }

  @Override
  public void held(long holdMillis) {
    phase = StreamPhase.QUEUED;
    send(Responses.hold(holdMillis));
    outstanding = true; // the override answers nothing: the real answer follows
  }

  @Override
  public void refused(Reason reason, int status, long retryAfterSeconds, String message) {
    phase = StreamPhase.DONE;
    send(
        DecisionAnswers.refusal(
            rt, session, grpcRequest, reason, status, retryAfterSeconds, message));
  }

  @Override
  public void storeFailed(Throwable cause) {
    rt.metrics().streamError("quota_store");
    fail(Status.INTERNAL.withDescription("quota store failed"), Outcome.ERROR);
  }

  // --- ends: cancel, half-close, shutdown, failures

  /** Envoy reset the stream (normal at the end of every request) or the client went away. */
  void onCancel() {
    sync.execute(
        () -> {
          markClosed(StreamTally.Close.CANCELLED);
          faults.at(StreamFaults.Step.CANCEL);
          abandon(Outcome.CANCELLED);
        });
  }

  @Override
  public void onError(Throwable t) {
    onCancel();
  }

  @Override
  public void onCompleted() {
    sync.execute(this::halfClosed);
  }

  private void halfClosed() {
    if (closed.get()) {
      return;
    }
    faults.at(StreamFaults.Step.HALF_CLOSE);
    if (outstanding || phase == StreamPhase.QUEUED) {
      // The client gave up on a message that is not answered yet (held, or waiting for the quota
      // store): drop it from the queue and end the call non-OK, never OK before the answer.
      fail(
          Status.CANCELLED.withDescription("half-closed before the message was answered"),
          Outcome.CANCELLED);
      return;
    }
    // Envoy half-closed (graceful close): it will send nothing more.
    boolean first = markClosed(StreamTally.Close.COMPLETED);
    release(responseHeadersSeen ? Outcome.COMPLETED : Outcome.CANCELLED);
    if (first) {
      out.onCompleted();
    }
  }

  /** Server shutdown after the grace period: release and end the stream non-OK. */
  void shutdown() {
    sync.execute(
        () -> fail(Status.UNAVAILABLE.withDescription("sluice shut down"), Outcome.SHUTDOWN));
  }

  /**
   * The stream ends here: the session leaves its queue, refunds, releases (once). Without
   * protocol_config (Envoy < 1.34) the response body mode is unknown: a reset after response
   * headers with no body message means body mode NONE (the response went through); a reset after
   * some body chunks means the client left mid-stream.
   */
  private void abandon(Outcome outcome) {
    if (session != null) {
      boolean completed =
          outcome == Outcome.CANCELLED
              && responseHeadersSeen
              && responseBodyMode == null
              && !responseBodySeen;
      session.end(completed ? Outcome.COMPLETED : outcome);
    }
    phase = StreamPhase.DONE;
  }

  private void release(Outcome outcome) {
    if (session != null && session.release(outcome)) {
      phase = StreamPhase.DONE;
    }
  }

  /** An exception on any of the stream's paths (or a task of it): INTERNAL, counted, one WARN. */
  private void internalError(Throwable e) {
    try {
      rt.metrics().streamError("internal");
      StreamWarnings.warn(
          "ext_proc stream failed in phase {}: {}",
          phase.name().toLowerCase(Locale.ROOT),
          String.valueOf(e)); // no stack trace at WARN
      LOG.debug("ext_proc stream failure", e);
    } catch (RuntimeException again) {
      LOG.debug("counting a stream failure failed", again);
    } finally {
      fail(Status.INTERNAL.withDescription("sluice internal error"), Outcome.ERROR);
    }
  }

  private void protocolError(String cause, String message) {
    rt.metrics().streamError(cause);
    fail(Status.FAILED_PRECONDITION.withDescription(message), Outcome.ERROR);
  }

  /**
   * Ends the stream non-OK, whatever fails on the way: deregistered first, then abandoned (queue,
   * quota, permit), then the status sent. Each step runs even if an earlier one throws.
   */
  private void fail(Status status, Outcome outcome) {
    boolean first = markClosed(StreamTally.Close.FAILED);
    try {
      abandon(outcome);
    } catch (RuntimeException e) {
      LOG.debug("releasing a failed stream", e);
      if (session != null) {
        session.releaseQuietly(outcome); // no-op if the release above got that far
      }
    } finally {
      phase = StreamPhase.DONE;
      if (first) {
        try {
          out.onError(status.asRuntimeException());
        } catch (RuntimeException e) {
          LOG.debug("ending a failed stream", e);
        }
      }
    }
  }

  private void send(Answer r) {
    if (closed.get()) {
      return;
    }
    faults.at(StreamFaults.Step.ANSWER);
    out.onNext(r);
    outstanding = false;
    lastActivityNanos = rt.ticker().nanos();
  }

  // --- silence bounds (the service's periodic sweep)

  /**
   * The sweep (another thread): true if this stream has been silent past its phase's bound ({@link
   * StreamPhase#idleBoundNanos}); then the stream re-checks in its own context and ends itself.
   */
  boolean checkIdle(long now, SluiceConfig.Streams limits) {
    long bound = idleBound(limits);
    if (closed.get() || bound <= 0 || now - lastActivityNanos <= bound) {
      return false;
    }
    sync.execute(() -> idleCheck(now, limits));
    return true;
  }

  private long idleBound(SluiceConfig.Streams limits) {
    boolean permit = session != null && session.hasPermit();
    return phase.idleBoundNanos(headersSeen, outstanding, permit, limits);
  }

  private void idleCheck(long now, SluiceConfig.Streams limits) {
    long bound = idleBound(limits);
    if (closed.get() || bound <= 0 || now - lastActivityNanos <= bound) {
      return;
    }
    String[] cause = phase.idleCause(session != null && session.hasPermit());
    rt.metrics().streamError(cause[0]);
    StreamWarnings.warn(
        "ext_proc stream ended DEADLINE_EXCEEDED: silent for {} ms in phase {} ({})",
        (now - lastActivityNanos) / 1_000_000L,
        phase.name().toLowerCase(Locale.ROOT),
        cause[1]);
    fail(
        Status.DEADLINE_EXCEEDED.withDescription(
            "no message within " + (bound / 1_000_000L) + " ms (" + cause[1] + ")"),
        Outcome.ERROR);
  }

  private static long parseLong(String s, long def) {
    if (s == null) {
      return def;
    }
    try {
      return Long.parseLong(s.trim().toLowerCase(Locale.ROOT));
    } catch (NumberFormatException e) {
      return def;
    }
  }
}
