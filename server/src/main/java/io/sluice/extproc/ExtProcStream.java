package io.sluice.extproc;

import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest.RequestCase;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Reason;
import io.sluice.core.session.AdmissionSession;
import io.sluice.core.session.SessionFront;
import io.sluice.core.session.SessionSteps;
import io.sluice.observability.StreamTally;
import java.util.Objects;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * One ext_proc stream = one HTTP request: the Envoy protocol mapping of an {@link
 * AdmissionSession}, which owns the admission itself (quotas, estimate, decide / queue, release).
 *
 * <pre>
 * request_headers ─┬─ decide now (headers-only route, no body, body mode NONE/STREAMED) ─┐
 *                  └─ CONTINUE, wait ─ request_body (BUFFERED) ─ decide ──────────────────┤
 *                        admit: CONTINUE + headers + dynamic metadata; reject: ImmediateResponse
 * response_headers ─ observe status ─ (end_of_stream: release; body mode NONE: held for the
 *                    predicted tail, released by its timer once the stream has ended)
 * response_body*  ─ CONTINUE each chunk at once, extract usage ─ end_of_stream: release, answer
 * cancel / error / half-close at any point ─ release exactly once
 * </pre>
 *
 * <p>Every message gets exactly one answer; failures and out-of-phase messages end the stream
 * non-OK (Envoy's {@code failure_mode_allow} decides), never OK before the outstanding message is
 * answered. A queued request's deciding message gets only {@code override_message_timeout}; the
 * answer follows from the session before the hold ends. Every event (messages, cancel, the
 * session's continuations from other threads) runs through one {@link SerialExecutor} per stream.
 */
final class ExtProcStream extends StreamOutput
    implements StreamObserver<Inbound>, SessionFront, Runnable, Consumer<Throwable> {
  private final AdmissionRuntime rt;
  private final Metadata initialMetadata;
  private final SerialExecutor sync = new SerialExecutor(this); // a task that throws: accept
  private final SessionSteps steps;
  private final LiveStreams<ExtProcStream> live;
  private boolean messageSeen; // on the transport thread: the first onNext marks it
  private final PhaseTracker at;
  private final EnvoyRequest request;
  private @Nullable AdmissionSession session; // from request headers on
  private boolean bodyDecides; // the request body (BUFFERED) is the deciding message
  private @Nullable BodyRouting routing; // its body chooses its pool: the session opens there

  ExtProcStream(
      AdmissionRuntime rt,
      ServerCallStreamObserver<Answer> call,
      Metadata md,
      LiveStreams<ExtProcStream> live,
      StreamFaults faults,
      SessionSteps steps) {
    super(call, faults); // the answering side: no object of its own
    this.rt = rt;
    this.steps = steps;
    this.initialMetadata = md;
    this.live = live;
    long opened = rt.ticker().nanos();
    this.request = new EnvoyRequest(opened);
    this.at = request; // its phase: one object per stream
    this.openedNanos = opened;
  }

  /** The session, opened at request headers: every step after them has one. */
  private AdmissionSession opened() {
    return Objects.requireNonNull(session, "session");
  }

  /** Marks the stream closed once (true for the call that did); an undecided end is counted. */
  private boolean markClosed(StreamTally.Close how) {
    if (!close(live, this, how)) {
      return false;
    }
    if (!at.isLocalReply() && (session == null || !session.decided())) {
      StreamFailures.undecided(rt.metrics(), at.undecidedTag(), how, session);
    }
    return true;
  }

  @Override
  public void onNext(Inbound req) {
    long received = rt.ticker().nanos();
    if (!messageSeen) { // gRPC never calls onNext of one call concurrently
      messageSeen = true;
      live.seen(this); // no longer evictable for room
    }
    sync.execute(ExtProcStream::handle, this, req, received); // nothing allocated when idle
  }

  /** Ended to make room at {@code maxStreams} (it has sent no message): non-OK, undecided. */
  void evict(Status status) {
    sync.execute(
        () -> {
          if (!closed()) {
            fail(status, Outcome.ERROR);
          }
        });
  }

  private void handle(Inbound req, long received) {
    if (closed()) {
      return;
    }
    at.received(received);
    if (req.malformedCause() != null) {
      fail(StreamFailures.malformed(rt.metrics(), req, at.phase()), Outcome.ERROR);
      return;
    }
    if (at.is(StreamPhase.QUEUED)) {
      if (request.proxyless()
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
    if (at.isLocalReply()) { // each response message continued (LocalReplies)
      Answer next = LocalReplies.next(req.requestCase());
      answerIf(next != null, next, req.requestCase() + " after a local reply's headers");
      return;
    }
    try {
      switch (req.requestCase()) {
        case REQUEST_HEADERS -> onRequestHeaders(req, received);
        case REQUEST_BODY -> onRequestBody(req, received);
        case REQUEST_TRAILERS ->
            answerIf(at.requestOpen(), Responses.CONTINUE_REQUEST_TRAILERS, "request_trailers");
        case RESPONSE_HEADERS -> onResponseHeaders(req);
        case RESPONSE_BODY -> onResponseBody(req);
        case RESPONSE_TRAILERS -> {
          if (answerIf(at.responding(permit()), null, "response_trailers")) {
            send(UpstreamFailures.trailers(rt, opened(), req)); // a gRPC failure typed, or continue
            NativeMetadataReader.endSeen(rt, req, opened().running()); // seen after all
            release(Outcome.COMPLETED);
          }
        }
        default -> protocolError("unknown_message", "ProcessingRequest carries no known message");
      }
    } catch (RuntimeException e) {
      accept(e);
    }
  }

  private void onRequestHeaders(Inbound req, long now) {
    if (!at.is(StreamPhase.START)) {
      protocolError("out_of_phase", "request_headers after " + at.phase());
      return;
    }
    at.headersSeen();
    EnvoySignals signals = EnvoySignals.of(initialMetadata, req, rt.tables());
    request.onRequestHeaders(req, signals);
    if (request.unsupportedBodyMode()) {
      protocolError(
          "unsupported_body_mode",
          "body send mode not supported: set request_body_mode and response_body_mode to NONE");
      return;
    }
    faults.at(StreamFaults.Step.RESOLVE);
    var r = rt.resolver().resolve(signals, now, rt.decisionLog().enabled());
    boolean noBody = req.headersEndOfStream();
    boolean atHeaders = request.decidesAtHeaders(noBody, r.estimateFrom());
    long contentLength = EnvoyRequest.parseLong(signals.contentLength(), -1);
    String over = EnvoyRequest.overLimit(contentLength, rt.config().limits(), "request body");
    routing = BodyRouting.of(rt, r, !atHeaders, over, contentLength, now);
    if (routing != null) {
      bodyWanted();
      return;
    }
    AdmissionSession session =
        rt.sessions().open(r.subject(now), this, sync, steps, sync.stepMillisOr(rt.clock()));
    this.session = session;
    if (r.noDegrade()) {
      session.forbidDegradation();
    }
    bodyDecides = !atHeaders; // a shadow pass at headers answers at the body (admitted)
    if (r.rejectReason() != null) {
      Reason why = r.rejectReason();
      String message = Objects.requireNonNull(r.rejectMessage(), "rejectMessage"); // with a reason
      session.refuse(why, why.defaultStatus(), 0, message, false, now);
      return;
    }
    if (tooLarge(over, false, now)) {
      return;
    }
    NativeMetadataReader.begin(rt, req, session, atHeaders, contentLength, now); // answers here
  }

  /** Refuses with 413 {@code body_too_large} when there is a {@code message} (over the limit). */
  private boolean tooLarge(@Nullable String message, boolean atBody, long now) {
    if (message != null) {
      opened().refuse(Reason.BODY_TOO_LARGE, 413, 0, message, atBody, now);
    }
    return message != null;
  }

  private void onRequestBody(Inbound body, long now) {
    if (at.is(StreamPhase.ADMITTED) && request.streamedBody()) {
      // streamed after a headers-time decision: over limits.maxBodyBytes in sum, the permit goes
      // back and the chunk gets the 413 (Envoy accepts it before the response started)
      String over = request.streamedOverLimit(body.bodyLength(), rt.config().limits());
      if (over != null && opened().running().wouldRefuseLater(Reason.BODY_TOO_LARGE, 413, over)) {
        over = null; // shadow mode: recorded, the request runs on
      }
      if (over != null) {
        release(Outcome.CANCELLED);
      }
      if (!tooLarge(over, true, now)) {
        send(Responses.CONTINUE_REQUEST_BODY);
      }
      return;
    }
    if (at.is(StreamPhase.DONE) && request.wasStreamedRefused()) { // pipelined before the 413
      at.owes(false); // Envoy answers nothing more after an ImmediateResponse: they need none
      return;
    }
    if (!at.is(StreamPhase.AWAIT_BODY)) {
      protocolError("out_of_phase", "request_body in phase " + at.phase());
      return;
    }
    if (routing != null && session == null) { // opens in the pool its body names
      session = routing.open(rt, this, sync, steps, body, request, now);
      routing.start();
      return;
    }
    if (opened().running().runs()) { // shadow mode: let through at headers, answered here
      admitted(true);
      return;
    }
    int length = body.bodyLength();
    if (!tooLarge(
        EnvoyRequest.overLimit(length, rt.config().limits(), "request body"), true, now)) {
      opened().decideWithBody(body.bodyArray(), body.bodyOffset(), length, now);
    }
  }

  private void onResponseHeaders(Inbound h) {
    if (at.first()) { // a local reply (LocalReplies): nothing to decide
      at.localReply();
      send(LocalReplies.headers(rt.metrics(), h));
      return;
    }
    if (!at.is(StreamPhase.ADMITTED)) {
      protocolError("out_of_phase", "response_headers in phase " + at.phase());
      return;
    }
    boolean ends = request.onResponseHeaders(h.headersEndOfStream());
    int status = UpstreamFailures.status(h, request.grpc()); // proxyless: 0 or its grpc-status
    opened()
        .running()
        .headers(
            status,
            UpstreamFailures.contentType(h), // null: JSON
            !request.proxyless() || status > 0,
            status >= 400 ? UpstreamRetryAfter.nanos(h, rt.clock()) : -1,
            AnswerSources.classify(h, status));
    Answer typed = UpstreamFailures.answer(rt, opened(), h, status, request.grpc());
    if (typed != null) { // the upstream's own failure, typed; released as any error answer
      send(typed);
      release(Outcome.COMPLETED); // no long tail (late chunks still answered)
      return;
    }
    String unseen = ends ? null : request.unseenEnd();
    if (unseen != null && status >= 400) {
      // an error answer (body NONE) has no long tail: its short body is all of it
      unseen = null;
      ends = true;
    }
    if (unseen != null) {
      // nothing more may come (Envoy 1.37+ closes after this): held for the predicted rest
      opened().running().endUnseen(unseen);
      at.to(StreamPhase.DONE);
    }
    var disclosed = DecisionAnswers.responseHeaders(opened().running());
    if (ends) { // released before Envoy learns of the end: the next call finds the slot free
      release(Outcome.COMPLETED);
    }
    send(
        disclosed.isEmpty()
            ? Responses.CONTINUE_RESPONSE_HEADERS
            : Responses.continueResponseHeaders(disclosed));
  }

  private void onResponseBody(Inbound body) {
    if (!answerIf(at.responding(permit()), null, "response_body")) {
      return;
    }
    request.onResponseBody();
    boolean last = body.bodyEndOfStream();
    NativeMetadataReader.body(rt, body, opened().running(), last); // its usage, at the last
    if (last) { // released before Envoy learns of the end, as at headers that end the response
      release(Outcome.COMPLETED);
    }
    send(Responses.CONTINUE_RESPONSE_BODY);
  }

  /** Answers with {@code answer} (if any) when {@code inPhase}, else ends out of phase. */
  private boolean answerIf(boolean inPhase, @Nullable Answer answer, String message) {
    if (!inPhase) {
      protocolError("out_of_phase", message + " in phase " + at.phase());
      return false;
    }
    if (answer != null) {
      send(answer);
    }
    return true;
  }

  @Override
  public void admitted(boolean atBody) {
    atBody |= routing != null; // opened at its body
    if (!atBody && bodyDecides) { // shadow mode, let through at headers: the body follows
      at.to(StreamPhase.AWAIT_BODY);
      send(Responses.CONTINUE_REQUEST_HEADERS);
      return;
    }
    at.to(StreamPhase.ADMITTED);
    send(DecisionAnswers.admit(rt, opened(), atBody, sync));
  }

  @Override
  public void bodyWanted() {
    if (routing != null && routing.decide(sync, () -> !closed())) {
      return; // opened at its body: decides that one
    }
    at.to(StreamPhase.AWAIT_BODY);
    send(Responses.CONTINUE_REQUEST_HEADERS);
  }

  @Override
  public void held(long holdMillis) {
    at.to(StreamPhase.QUEUED);
    send(Responses.hold(holdMillis));
    at.owes(true); // the override answers nothing: the real answer follows
  }

  @Override
  public void refused(Reason reason, int status, long retryAfterSeconds, String message) {
    var a = routing == null ? null : routing.refusal(reason, status, retryAfterSeconds, message);
    if (a != null) {
      answered(a); // in the protocol of the router's clients
      return;
    }
    at.to(StreamPhase.DONE);
    send(
        DecisionAnswers.refusal(
            rt, opened(), request.grpc(), reason, status, retryAfterSeconds, message));
  }

  @Override
  public void answered(io.sluice.core.session.AdmissionCheck.Answered a) {
    at.to(StreamPhase.DONE);
    send(DecisionAnswers.answered(rt, opened(), a));
  }

  @Override
  public void storeFailed(Throwable cause) {
    fail(StreamFailures.quotaStore(rt.metrics()), Outcome.ERROR);
  }

  // --- ends: cancel, half-close, shutdown, failures

  /** Envoy reset the stream or the client went away: the call's cancel handler (no lambda). */
  @Override
  public void run() {
    sync.execute(ExtProcStream::cancelled, this); // nothing allocated when idle
  }

  private void cancelled() {
    markClosed(StreamTally.Close.CANCELLED);
    faults.at(StreamFaults.Step.CANCEL);
    abandon(Outcome.CANCELLED);
  }

  @Override
  public void onError(Throwable t) { // gRPC's, after the cancel handler (ExtProcCall) ended it
    if (!closed()) {
      run();
    }
  }

  @Override
  public void onCompleted() {
    sync.execute(ExtProcStream::halfClosed, this);
  }

  private void halfClosed() {
    if (closed()) {
      return;
    }
    faults.at(StreamFaults.Step.HALF_CLOSE);
    if (at.outstanding() || at.is(StreamPhase.QUEUED)) {
      // the client gave up on a message not answered yet (held, or at the quota store): non-OK
      fail(
          Status.CANCELLED.withDescription("half-closed before the message was answered"),
          Outcome.CANCELLED);
      return;
    }
    // a graceful close: Envoy will send nothing more
    boolean first = markClosed(StreamTally.Close.COMPLETED);
    release(request.responseHeadersSeen() ? Outcome.COMPLETED : Outcome.CANCELLED);
    if (first) {
      complete();
    }
  }

  /** Server shutdown after the grace period: release and end the stream non-OK. */
  void shutdown() {
    sync.execute(
        () -> fail(Status.UNAVAILABLE.withDescription("sluice shut down"), Outcome.SHUTDOWN));
  }

  /** The stream ends here: the session leaves its queue, refunds, releases (once). */
  private void abandon(Outcome outcome) {
    if (session != null) {
      session.end(request.onEnd(outcome));
    }
    at.to(StreamPhase.DONE);
  }

  private void release(Outcome outcome) {
    if (session != null && session.release(outcome)) {
      at.to(StreamPhase.DONE);
    }
  }

  /** An exception on a path of the stream or in a task (the executor's handler): it fails. */
  @Override
  public void accept(Throwable e) {
    fail(StreamFailures.internal(rt.metrics(), e, at.phase()), Outcome.ERROR);
  }

  private void protocolError(String cause, String message) {
    fail(StreamFailures.protocol(rt.metrics(), cause, message), Outcome.ERROR);
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
      StreamFailures.cleanupFailed(e);
      if (session != null) {
        session.releaseQuietly(outcome); // no-op if the release above got that far
      }
    } finally {
      at.to(StreamPhase.DONE);
      if (first) {
        endWith(status);
      }
    }
  }

  private void send(Answer r) {
    if (trySend(r)) {
      at.answered(sync.stepNanosOr(rt.ticker())); // the message's instant when answered at once
    }
  }

  /**
   * The sweep (another thread): true if this stream has been silent past its phase's bound ({@link
   * StreamPhase#idleBoundNanos}); then the stream re-checks in its own context and ends itself.
   */
  boolean checkIdle(long now, SluiceConfig.Streams limits) {
    if (closed() || at.silentPast(now, permit(), limits) == 0) {
      return false;
    }
    sync.execute(
        () -> {
          long bound = at.silentPast(now, permit(), limits);
          if (!closed() && bound > 0) {
            Status s =
                StreamFailures.silent(
                    rt.metrics(), at.phase(), permit(), at.silentNanos(now), bound);
            fail(s, Outcome.ERROR);
          }
        });
    return true;
  }

  private boolean permit() { // admitted to the upstream (a permit, or none in shadow mode)
    AdmissionSession s = session;
    return s != null && s.running().runs();
  }
}
