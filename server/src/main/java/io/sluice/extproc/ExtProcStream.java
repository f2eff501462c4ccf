package io.sluice.extproc;

import com.google.protobuf.util.Timestamps;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.sluice.api.v1.AdmissionRecord;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.Reason;
import io.sluice.core.admission.Waiter;
import io.sluice.core.estimate.EstimateLimits;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.estimate.Usage;
import io.sluice.core.estimate.UsageExtractor;
import io.sluice.core.quota.QuotaCheck;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.observability.AdmissionMetrics;
import io.sluice.observability.StreamTally;
import io.sluice.routing.ResolvedRequest;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One ext_proc stream = one HTTP request. A state machine over the messages Envoy sends:
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
 * ended OK before the outstanding message is answered.
 *
 * <p>Queue-hold: when the core answers {@link Decision.Queued}, the deciding message is answered at
 * once with a {@code ProcessingResponse} carrying only {@code override_message_timeout} (one per
 * message, within Envoy's {@code max_message_timeout}), an expiry timer is armed, and the real
 * answer (CONTINUE or ImmediateResponse) follows from {@link Waiter#admitted} or {@link
 * Waiter#refused} before the hold ends.
 *
 * <p>Concurrency: every event — inbound messages, cancellation, and waiter callbacks arriving from
 * other streams' releases or the timer thread — runs through one {@link SerialExecutor} per stream,
 * so state is touched by one thread at a time and no lock is held while calling into the core (no
 * lock-order deadlocks between streams). The permit's release is guarded by the permit itself
 * (exactly once).
 */
final class ExtProcStream extends LiveStreams.Node implements StreamObserver<Inbound>, Waiter {
  private static final Logger LOG = LoggerFactory.getLogger(ExtProcStream.class);

  enum Phase {
    START,
    AWAIT_BODY,
    QUEUED,
    ADMITTED,
    DONE
  }

  private final AdmissionRuntime rt;
  private final ServerCallStreamObserver<Answer> out;
  private final Metadata initialMetadata;
  private final AtomicBoolean closed = new AtomicBoolean();
  // A task that throws (a waiter callback, a quota continuation, a bug anywhere) ends the stream
  // through the fail path: no exception leaves a stream open or a permit held.
  private final SerialExecutor sync = new SerialExecutor(this::taskFailed);
  private final StreamFaults faults;
  // A message was received and its answer not yet sent (queue-hold's override does not answer).
  private boolean outstanding;
  private boolean headersSeen;
  private boolean decided; // admitted or refused: the stream's request has its answer
  // When the stream last heard from the client or answered it (the silence bounds count from
  // here). Plain: the sweep's first read is a hint, the check that acts runs in the stream's
  // serial context and reads it exactly.
  private long lastActivityNanos;
  private long streamedBytes; // request body bytes seen in STREAMED chunks
  private boolean streamedRefused;
  private Decision.Queued queued;
  private QueueTimer.Handle expiryTimer;
  private boolean heldAtBody;
  private String heldPhase;
  private long heldReceivedNanos;
  private int queuePosition;
  private boolean tokensReserved;
  private long queueWaitNanos;

  private Phase phase = Phase.START;
  private ResolvedRequest resolved;
  private AdmissionMetrics.ClassMeters meters; // set with resolved, when it resolves
  private TokenEstimate estimate;
  private long workUnits;
  private long arrivalNanos;
  private long arrivalEpochMillis;
  private volatile Permit permit;
  private BodySendMode requestBodyMode;
  private BodySendMode responseBodyMode;
  private boolean responseHeadersSeen;
  private boolean responseBodySeen;
  private int upstreamStatus;
  private UsageExtractor usage;
  private long decisionLatencyNanos;
  private Reason decidedReason = Reason.ADMITTED;
  // A client-side gRPC filter (grpc-java's xDS ext_proc, gRFC A93) sends no pseudo-headers: the
  // call ends at response trailers or the stream's close, not at response headers.
  private boolean proxyless;
  // refusals carry grpc_status (application/grpc through Envoy, or proxyless)
  private boolean grpcRequest;

  private final LiveStreams<ExtProcStream> live;
  private static final Map<String, String> DECISION_ADMIT_HEADER =
      Map.of("x-sluice-decision", "admit");
  // LiveStreams picks a stripe by it: a random int is cheaper than the identity hash
  // (equality stays identity).
  private final int hash = java.util.concurrent.ThreadLocalRandom.current().nextInt();

  ExtProcStream(
      AdmissionRuntime rt,
      ServerCallStreamObserver<Answer> out,
      Metadata md,
      LiveStreams<ExtProcStream> live,
      StreamFaults faults) {
    this.rt = rt;
    this.faults = faults;
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

  /**
   * Marks the stream closed once; returns true for the call that closed it. Call it before the
   * phase changes: a stream that ends before its request was decided is counted by the phase it was
   * in, and logged.
   */
  private boolean markClosed(StreamTally.Close how) {
    if (!closed.compareAndSet(false, true)) {
      return false;
    }
    live.remove(this, how); // counted there (sluice_extproc_streams_total)
    if (!decided) {
      undecided(how);
    }
    return true;
  }

  /** The phase a stream that ended before a decision was in (metric tag). */
  private String undecidedPhase() {
    return switch (phase) {
      case START -> headersSeen ? "request_headers" : "first_message";
      case AWAIT_BODY -> "request_body";
      case QUEUED -> "queued";
      default -> "decided"; // not reached: decided streams are not counted
    };
  }

  private void undecided(StreamTally.Close how) {
    try {
      String where = undecidedPhase();
      rt.metrics().streamUndecided(where, how.tag());
      StreamWarnings.warn(
          "ext_proc stream ended before a decision: phase={} end={} pool={} class={}",
          where,
          how.tag(),
          resolved != null ? resolved.pool().name() : "none",
          resolved != null ? resolved.requestClass().name() : "none");
    } catch (RuntimeException e) {
      LOG.debug("counting an undecided stream failed", e); // never stops the close
    }
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
      malformed(req);
      return;
    }
    outstanding = true;
    if (phase == Phase.QUEUED
        && proxyless
        && req.requestCase()
            == io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest.RequestCase
                .RESPONSE_HEADERS
        && req.headersEndOfStream()) {
      // a proxyless client's call ended while held (its deadline): the trailers-only response
      callEndedWhileHeld();
      return;
    }
    if (phase == Phase.QUEUED) {
      // Envoy sends nothing new while a message is outstanding; anything else is out of phase.
      protocolError("out_of_phase", req.requestCase() + " while the request is held");
      return;
    }
    try {
      switch (req.requestCase()) {
        case REQUEST_HEADERS -> onRequestHeaders(req, received);
        case REQUEST_BODY -> onRequestBody(req, received);
        case REQUEST_TRAILERS -> onRequestTrailers();
        case RESPONSE_HEADERS -> onResponseHeaders(req);
        case RESPONSE_BODY -> onResponseBody(req);
        case RESPONSE_TRAILERS -> onResponseTrailers();
        default -> protocolError("unknown_message", "ProcessingRequest carries no known message");
      }
    } catch (RuntimeException e) {
      internalError(e);
    }
  }

  /**
   * A frame that did not parse: INVALID_ARGUMENT through the stream's own fail path (permit
   * released once, a queued request leaves its queue, a token reservation is refunded as for a
   * cancel, the stream is deregistered), counted, and one WARN line without a stack trace.
   */
  private void malformed(Inbound req) {
    String where = phase.name().toLowerCase(Locale.ROOT);
    try {
      rt.metrics().streamError("malformed_frame");
      StreamWarnings.warn(
          "ext_proc stream ended INVALID_ARGUMENT: a {}-byte frame does not parse in phase {}: {}",
          req.frameSize(),
          where,
          req.malformedCause());
    } finally {
      fail(
          Status.INVALID_ARGUMENT.withDescription(
              "ProcessingRequest does not parse: " + req.malformedCause()),
          Outcome.ERROR);
    }
  }

  /** An exception on any of the stream's paths: INTERNAL, counted, one WARN line. */
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

  /** The serial executor's failure handler: runs on the draining thread, still serialized. */
  private void taskFailed(Throwable e) {
    internalError(e); // after a close: counted, and whatever is still held is released
  }

  private void onRequestHeaders(Inbound req, long now) {
    if (phase != Phase.START) {
      protocolError("out_of_phase", "request_headers after " + phase);
      return;
    }
    headersSeen = true;
    arrivalNanos = now;
    arrivalEpochMillis = rt.clock().millis();
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
    resolved = rt.resolver().resolve(signals, now, rt.decisionLog().enabled());
    if (resolved.rejectReason() != null) {
      Reason r = resolved.rejectReason();
      reject(r, r.defaultStatus(), 0, resolved.rejectMessage(), "headers", now);
      return;
    }
    meters =
        rt.metrics()
            .forClass(
                resolved.pool().name(),
                resolved.requestClass().name(),
                resolved.tenant().tier().name());
    long contentLength = parseLong(signals.header("content-length"), -1);
    if (contentLength > rt.config().limits().maxBodyBytes()) {
      reject(
          Reason.BODY_TOO_LARGE,
          413,
          0,
          "request body of "
              + contentLength
              + " bytes exceeds the limit of "
              + rt.config().limits().maxBodyBytes(),
          "headers",
          now);
      return;
    }
    boolean decideAtHeaders =
        req.headersEndOfStream()
            || resolved.estimateFrom() == SluiceConfig.EstimateFrom.HEADERS
            || (requestBodyMode != null
                && requestBodyMode != BodySendMode.BUFFERED
                && requestBodyMode != BodySendMode.BUFFERED_PARTIAL);
    Runnable next =
        () -> {
          if (decideAtHeaders) {
            estimate = headersEstimate(req.headersEndOfStream(), contentLength);
            decide(false, "headers", now);
          } else {
            phase = Phase.AWAIT_BODY;
            send(Responses.CONTINUE_REQUEST_HEADERS);
          }
        };
    if (!TenantQuotas.hasRequestBudget(resolved.tenant().tier())) {
      next.run();
      return;
    }
    // Tenant RPM: one token per request, checked at request headers (may complete later: Redis)
    await(
        rt.quotas().takeRequest(resolved.tenant(), rt.clock().millis()),
        check -> {
          countStoreFailure(check);
          if (!check.allowed()) {
            reject(
                Reason.TENANT_RATE,
                429,
                retryAfterSeconds(check.retryAfterMillis()),
                "tenant request budget (requests per minute) is used up",
                "headers",
                now);
          } else {
            next.run();
          }
        });
  }

  private void onRequestBody(Inbound body, long now) {
    if (phase == Phase.ADMITTED && requestBodyMode == BodySendMode.STREAMED) {
      // streamed chunks after a headers-time decision: limits.maxBodyBytes holds for their sum
      streamedBytes += body.bodyLength();
      long max = rt.config().limits().maxBodyBytes();
      if (streamedBytes > max) {
        refuseStreamedBody(max, now);
        return;
      }
      send(Responses.CONTINUE_REQUEST_BODY);
      return;
    }
    if (phase == Phase.DONE && streamedRefused) {
      // Chunks Envoy pipelined before it processed the 413: it answers nothing more after an
      // ImmediateResponse, so they need none.
      outstanding = false;
      return;
    }
    if (phase != Phase.AWAIT_BODY) {
      protocolError("out_of_phase", "request_body in phase " + phase);
      return;
    }
    int length = body.bodyLength();
    if (length > rt.config().limits().maxBodyBytes()) {
      reject(
          Reason.BODY_TOO_LARGE,
          413,
          0,
          "request body of "
              + length
              + " bytes exceeds the limit of "
              + rt.config().limits().maxBodyBytes(),
          "body",
          now);
      return;
    }
    // read in place: the estimator never keeps or modifies the array
    faults.at(StreamFaults.Step.ESTIMATE);
    estimate =
        rt.estimator()
            .estimate(resolved.format(), body.bodyArray(), body.bodyOffset(), length, limits());
    if (estimate.fallbackCause() != null) {
      rt.metrics().estimateFallback(estimate.fallbackCause());
    }
    decide(true, "body", now);
  }

  /**
   * The estimate of a request decided at its headers. A request without a body costs its output
   * reserve only; one whose content-length is known (Envoy's codec holds the body to it) costs that
   * many bytes; one with a body of unknown size (STREAMED/NONE: the client sent no content-length)
   * costs {@code estimation.defaultInputTokens}, never 0, counted as the fallback {@code
   * no_content_length}.
   */
  private TokenEstimate headersEstimate(boolean noBody, long contentLength) {
    if (noBody || contentLength >= 0) {
      return rt.estimator().fromContentLength(Math.max(0, contentLength), limits());
    }
    rt.metrics().estimateFallback("no_content_length");
    return rt.estimator().unknownSize(rt.config().estimation().defaultInputTokens(), limits());
  }

  /**
   * The streamed request body crossed {@code limits.maxBodyBytes} on this chunk: release the permit
   * (the request will not complete) and answer the chunk with 413 {@code body_too_large}, which
   * Envoy accepts for any phase before the response started (it resets the upstream request and
   * sends the local reply).
   */
  private void refuseStreamedBody(long max, long now) {
    streamedRefused = true;
    release(Outcome.CANCELLED);
    reject(
        Reason.BODY_TOO_LARGE,
        413,
        0,
        "streamed request body exceeds the limit of " + max + " bytes",
        "body",
        now);
  }

  private EstimateLimits limits() {
    return new EstimateLimits(
        resolved.requestClass().defaultOutputTokens(), resolved.requestClass().maxOutputTokens());
  }

  private void decide(boolean atBody, String phaseName, long receivedNanos) {
    workUnits = resolved.pool().workUnits(estimate.inputTokens(), estimate.outputReserveTokens());
    AdmissionRequest request =
        new AdmissionRequest(
            resolved.pool(),
            resolved.requestClass(),
            resolved.tenant(),
            workUnits,
            arrivalNanos,
            resolved.deadlineNanos(),
            estimate.inputTokens(),
            estimate.outputReserveTokens());
    if (!TenantQuotas.hasTokenBudget(resolved.tenant().tier())) {
      decideAdmission(request, atBody, phaseName, receivedNanos);
      return;
    }
    // Tenant TPM: reserve the estimate now, reconcile with actual usage when the response ends
    await(
        rt.quotas()
            .reserveTokens(
                resolved.tenant(),
                estimate.inputTokens(),
                estimate.outputReserveTokens(),
                rt.clock().millis()),
        check -> {
          countStoreFailure(check);
          if (!check.allowed()) {
            reject(
                Reason.TENANT_TOKENS,
                429,
                retryAfterSeconds(check.retryAfterMillis()),
                "tenant token budget (tokens per minute) is used up",
                phaseName,
                receivedNanos);
            return;
          }
          tokensReserved = !check.storeFailed();
          decideAdmission(request, atBody, phaseName, receivedNanos);
        });
  }

  private void decideAdmission(
      AdmissionRequest request, boolean atBody, String phaseName, long receivedNanos) {
    if (closed.get()) {
      refundTokens();
      return;
    }
    long maxHoldNanos = resolved.maxMessageTimeoutMillis() * 1_000_000L;
    faults.at(StreamFaults.Step.DECIDE);
    Decision d = rt.controller().decide(request, maxHoldNanos, this, rt.ticker().nanos());
    if (d instanceof Decision.Queued q) {
      hold(q, atBody, phaseName, receivedNanos, maxHoldNanos);
    } else if (d instanceof Decision.Admit a) {
      admit(a.permit(), atBody, phaseName, receivedNanos);
    } else {
      Decision.Reject r = (Decision.Reject) d;
      reject(r.reason(), r.status(), r.retryAfterSeconds(), r.message(), phaseName, receivedNanos);
    }
  }

  /** Answer the deciding message with only override_message_timeout and wait for the waiter. */
  private void hold(
      Decision.Queued q, boolean atBody, String phaseName, long receivedNanos, long maxHoldNanos) {
    queued = q;
    heldAtBody = atBody;
    heldPhase = phaseName;
    heldReceivedNanos = receivedNanos;
    queuePosition = q.position() + 1;
    phase = Phase.QUEUED;
    long holdMillis = Math.min(maxHoldNanos / 1_000_000L, (q.holdNanos() + 999_999L) / 1_000_000L);
    send(Responses.hold(Math.max(1, holdMillis)));
    outstanding = true; // the override answers nothing: the real answer follows
    rt.metrics()
        .queued(
            resolved.pool().name(),
            resolved.requestClass().name(),
            resolved.tenant().tier().name(),
            phaseName,
            rt.ticker().nanos() - receivedNanos,
            q.predictedWaitNanos());
    long delay = q.expiresAtNanos() - rt.ticker().nanos() + 1_000_000L;
    String pool = q.pool();
    expiryTimer =
        rt.timer().schedule(delay, () -> rt.controller().expireDue(pool, rt.ticker().nanos()));
  }

  @Override
  public void admitted(Permit p, long waitedNanos) {
    sync.execute(
        () -> {
          if (phase != Phase.QUEUED || closed.get() || permit != null) {
            p.release(Outcome.CANCELLED, rt.ticker().nanos()); // stream gone: give it back
            return;
          }
          permit = p; // from here every failure path releases it
          queued = null;
          faults.at(StreamFaults.Step.WAITER);
          cancelTimer();
          queueWaitNanos = waitedNanos;
          rt.metrics()
              .dequeued(
                  resolved.pool().name(), resolved.requestClass().name(), "admitted", waitedNanos);
          admit(p, heldAtBody, heldPhase, heldReceivedNanos);
        });
  }

  @Override
  public void refused(Decision.Reject r, long waitedNanos) {
    sync.execute(
        () -> {
          if (phase != Phase.QUEUED || closed.get()) {
            return;
          }
          queued = null; // refused: no longer in the queue
          faults.at(StreamFaults.Step.WAITER);
          cancelTimer();
          queueWaitNanos = waitedNanos;
          rt.metrics()
              .dequeued(
                  resolved.pool().name(),
                  resolved.requestClass().name(),
                  r.reason() == Reason.QUEUE_TIMEOUT ? "expired" : "refused",
                  waitedNanos);
          reject(
              r.reason(),
              r.status(),
              r.retryAfterSeconds(),
              r.message(),
              heldPhase,
              heldReceivedNanos);
        });
  }

  /** Continues with the value of {@code stage} inside this stream's context. */
  private <T> void await(CompletionStage<T> stage, Consumer<T> next) {
    CompletableFuture<T> f = faults.quota(stage).toCompletableFuture();
    if (f.isDone() && !f.isCompletedExceptionally()) {
      faults.at(StreamFaults.Step.QUOTA);
      next.accept(f.join());
      return;
    }
    f.whenComplete(
        (v, e) ->
            sync.execute(
                () -> {
                  faults.at(StreamFaults.Step.QUOTA);
                  if (e != null) {
                    rt.metrics().streamError("quota_store");
                    fail(Status.INTERNAL.withDescription("quota store failed"), Outcome.ERROR);
                  } else {
                    next.accept(v);
                  }
                }));
  }

  private void countStoreFailure(QuotaCheck check) {
    if (check.storeFailed()) {
      rt.metrics().quotaStoreFailure(check.allowed() ? "open" : "closed");
    }
  }

  private static long retryAfterSeconds(long millis) {
    return Math.max(1, (millis + 999) / 1000);
  }

  /** The request will not run: give its token reservation back. */
  private void refundTokens() {
    if (tokensReserved) {
      tokensReserved = false;
      rt.quotas()
          .release(
              resolved.tenant(),
              estimate.inputTokens(),
              estimate.outputReserveTokens(),
              rt.clock().millis());
    }
  }

  private void cancelTimer() {
    if (expiryTimer != null) {
      expiryTimer.cancel();
      expiryTimer = null;
    }
  }

  private void admit(Permit p, boolean atBody, String phaseName, long receivedNanos) {
    {
      permit = p;
      phase = Phase.ADMITTED;
      decided = true;
      faults.at(StreamFaults.Step.ADMIT);
      decisionLatencyNanos = rt.ticker().nanos() - receivedNanos - queueWaitNanos;
      meters.admitted(phaseName, decisionLatencyNanos);
      if (closed.get()) { // cancelled while deciding: give the permit back at once
        release(Outcome.CANCELLED);
        return;
      }
      boolean decisionHeader = rt.config().responses().decisionHeader();
      Map<String, String> headers;
      if (!rt.config().responses().estimateHeader()) {
        headers = decisionHeader ? DECISION_ADMIT_HEADER : Map.of();
      } else {
        headers = new LinkedHashMap<>(4);
        if (decisionHeader) {
          headers.put("x-sluice-decision", "admit");
        }
        headers.put(
            "x-sluice-estimate",
            "input="
                + estimate.inputTokens()
                + ";output="
                + estimate.outputReserveTokens()
                + ";work="
                + workUnits);
      }
      meters.estimated(estimate.inputTokens(), estimate.outputReserveTokens());
      send(
          Responses.admit(
              rt.tables().answerEntries(), atBody, headers, metadata("admit", Reason.ADMITTED)));
    }
  }

  private void reject(
      Reason reason, int status, long retryAfter, String message, String phaseName, long received) {
    phase = Phase.DONE;
    decided = true;
    refundTokens();
    faults.at(StreamFaults.Step.REJECT);
    decidedReason = reason;
    decisionLatencyNanos = rt.ticker().nanos() - received - queueWaitNanos;
    String pool = resolved != null ? resolved.pool().name() : "none";
    String cls = resolved != null ? resolved.requestClass().name() : "none";
    String tier = resolved != null ? resolved.tenant().tier().name() : "none";
    rt.metrics()
        .decision(pool, cls, tier, "reject", reason.code(), phaseName, decisionLatencyNanos);
    if (retryAfter > 0) {
      rt.metrics().retryAfter(reason.code(), retryAfter);
    }
    send(
        grpcRequest
            ? Responses.rejectGrpc(
                rt.tables().answerEntries(),
                reason,
                status,
                retryAfter,
                message,
                metadata("reject", reason))
            : Responses.reject(
                rt.tables().answerEntries(),
                reason,
                status,
                retryAfter,
                message,
                metadata("reject", reason)));
    faults.at(StreamFaults.Step.DECISION_LOG);
    if (rt.decisionLog().wants(true)) {
      rt.decisionLog()
          .write(
              record(io.sluice.api.v1.Decision.DECISION_REJECT, reason, status, retryAfter)
                  .setOutcome(io.sluice.api.v1.Outcome.OUTCOME_REJECTED)
                  .build());
    }
  }

  private AnswerEncoder.DecisionFields metadata(String decision, Reason reason) {
    boolean r = resolved != null;
    boolean e = estimate != null;
    return new AnswerEncoder.DecisionFields(
        r,
        r ? resolved.tenant().id() : null,
        r ? resolved.tenant().tier().name() : null,
        r ? resolved.requestClass().name() : null,
        r ? resolved.pool().name() : null,
        r ? resolved.route() : null,
        decision,
        reason.code(),
        e,
        e ? estimate.inputTokens() : 0,
        e ? estimate.outputReserveTokens() : 0,
        e ? workUnits : 0);
  }

  private void onRequestTrailers() {
    if (phase == Phase.START || phase == Phase.DONE) {
      protocolError("out_of_phase", "request_trailers in phase " + phase);
      return;
    }
    send(Responses.CONTINUE_REQUEST_TRAILERS);
  }

  private void onResponseHeaders(Inbound h) {
    if (phase != Phase.ADMITTED) {
      protocolError("out_of_phase", "response_headers in phase " + phase);
      return;
    }
    responseHeadersSeen = true;
    upstreamStatus = (int) parseLong(h.header(":status"), 0);
    if (!proxyless) { // a proxyless client sends no :status (gRPC's status is in the trailers)
      rt.metrics().upstreamResponse(resolved.pool().name(), upstreamStatus);
    }
    usage = UsageExtractor.forResponse(h.header("content-type"));
    send(Responses.CONTINUE_RESPONSE_HEADERS);
    if (h.headersEndOfStream() || (responseBodyMode == BodySendMode.NONE && !proxyless)) {
      // Body mode NONE: Envoy sends nothing more, so the permit covers time to response headers.
      // A proxyless client's call runs on (a stream of messages): it ends at response trailers or
      // at the client's close of this stream, which it sends when the call closes.
      release(Outcome.COMPLETED);
    }
  }

  private void onResponseBody(Inbound body) {
    if (phase != Phase.ADMITTED && !(phase == Phase.DONE && permit != null)) {
      protocolError("out_of_phase", "response_body in phase " + phase);
      return;
    }
    responseBodySeen = true;
    if (usage != null && body.bodyLength() > 0) {
      if (body.bodyEndOfStream()) {
        usage.onLastChunk(body.bodyArray(), body.bodyOffset(), body.bodyLength());
      } else {
        usage.onChunk(body.bodyArray(), body.bodyOffset(), body.bodyLength()); // copies nothing
      }
    }
    send(Responses.CONTINUE_RESPONSE_BODY);
    if (body.bodyEndOfStream()) {
      release(Outcome.COMPLETED);
    }
  }

  private void onResponseTrailers() {
    if (phase != Phase.ADMITTED && !(phase == Phase.DONE && permit != null)) {
      protocolError("out_of_phase", "response_trailers in phase " + phase);
      return;
    }
    send(Responses.CONTINUE_RESPONSE_TRAILERS);
    release(Outcome.COMPLETED);
  }

  /** Envoy reset the stream (normal at the end of every request) or the client went away. */
  void onCancel() {
    sync.execute(this::cancelled);
  }

  private void cancelled() {
    markClosed(StreamTally.Close.CANCELLED);
    faults.at(StreamFaults.Step.CANCEL);
    abandon(Outcome.CANCELLED);
  }

  /**
   * The stream ends here: a queued request leaves its queue and gets its token reservation back, a
   * request that will not run gets its reservation back, a permit is released (once: the permit
   * guards it). Used by cancel, half-close, and every failure.
   */
  private void abandon(Outcome outcome) {
    cancelTimer();
    if (permit == null) {
      if (phase == Phase.QUEUED && queued != null) {
        Decision.Queued q = queued;
        queued = null;
        phase = Phase.DONE;
        refundTokens();
        if (rt.controller().cancel(q.pool(), q.ticket(), rt.ticker().nanos())) {
          rt.metrics()
              .dequeued(
                  resolved.pool().name(),
                  resolved.requestClass().name(),
                  "cancelled",
                  rt.ticker().nanos() - heldReceivedNanos);
        }
      }
      refundTokens(); // the request will not run
      phase = Phase.DONE;
      return;
    }
    // Without protocol_config (Envoy < 1.34) the response body mode is unknown: a reset after
    // response headers with no body message means body mode NONE (the response went through);
    // a reset after some body chunks means the client left mid-stream.
    boolean completed =
        outcome == Outcome.CANCELLED
            && responseHeadersSeen
            && responseBodyMode == null
            && usage != null
            && !responseBodySeen;
    release(completed ? Outcome.COMPLETED : outcome);
  }

  /**
   * The proxyless client's call closed while its request was held (its deadline passed): it sends
   * the trailers-only response as response_headers. Leave the queue and answer it.
   */
  private void callEndedWhileHeld() {
    abandon(Outcome.CANCELLED); // dequeued as cancelled, reservation refunded, phase DONE
    send(Responses.CONTINUE_RESPONSE_HEADERS);
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
    if (outstanding || phase == Phase.QUEUED) {
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
        () -> {
          fail(Status.UNAVAILABLE.withDescription("sluice shut down"), Outcome.SHUTDOWN);
        });
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
      Permit p = permit;
      if (p != null) {
        p.release(outcome, rt.ticker().nanos()); // no-op if the release above got that far
      }
    } finally {
      phase = Phase.DONE;
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

  /**
   * The sweep (another thread): true if this stream has been silent past its bound; then the stream
   * re-checks in its own context and ends itself. The bound depends on the phase: before the first
   * message {@code firstMessageTimeout}; waiting for the client before a decision (the body) or
   * after a refusal {@code idleTimeout}; after admission {@code admittedIdleTimeout} (Envoy is
   * waiting for the upstream: an LLM's response headers can take minutes). Nothing is bounded while
   * Sluice itself holds the message (queued, or waiting for the quota store): those have their own
   * deadlines.
   */
  boolean checkIdle(long now, SluiceConfig.Streams limits) {
    if (closed.get() || idleBoundNanos(limits) <= 0) {
      return false;
    }
    if (now - lastActivityNanos <= idleBoundNanos(limits)) {
      return false;
    }
    sync.execute(() -> idleCheck(now, limits));
    return true;
  }

  private long idleBoundNanos(SluiceConfig.Streams l) {
    Phase p = phase;
    if (p == Phase.START) {
      return headersSeen ? 0 : l.firstMessageTimeout().toNanos(); // headersSeen: the store has it
    }
    if (p == Phase.QUEUED || outstanding) {
      return 0;
    }
    if (p == Phase.AWAIT_BODY || (p == Phase.DONE && permit == null)) {
      return l.idleTimeout().toNanos();
    }
    return l.admittedIdleTimeout().toNanos();
  }

  private void idleCheck(long now, SluiceConfig.Streams limits) {
    long bound = idleBoundNanos(limits);
    if (closed.get() || bound <= 0 || now - lastActivityNanos <= bound) {
      return;
    }
    String cause;
    String key;
    if (phase == Phase.START) {
      cause = "first_message_timeout";
      key = "server.grpc.firstMessageTimeout";
    } else if (phase == Phase.AWAIT_BODY || permit == null) {
      cause = "idle_timeout";
      key = "server.grpc.idleTimeout";
    } else {
      cause = "admitted_idle_timeout";
      key = "server.grpc.admittedIdleTimeout";
    }
    rt.metrics().streamError(cause);
    StreamWarnings.warn(
        "ext_proc stream ended DEADLINE_EXCEEDED: silent for {} ms in phase {} ({})",
        (now - lastActivityNanos) / 1_000_000L,
        phase.name().toLowerCase(Locale.ROOT),
        key);
    fail(
        Status.DEADLINE_EXCEEDED.withDescription(
            "no message within " + (bound / 1_000_000L) + " ms (" + key + ")"),
        Outcome.ERROR);
  }

  private void release(Outcome outcome) {
    Permit p = permit;
    if (p == null) {
      return;
    }
    long now = rt.ticker().nanos();
    if (!p.release(outcome, now)) {
      return;
    }
    phase = Phase.DONE;
    faults.at(StreamFaults.Step.RELEASE);
    String pool = resolved.pool().name();
    String cls = resolved.requestClass().name();
    faults.at(StreamFaults.Step.METRICS);
    meters.released(outcome, now - p.admittedAtNanos());
    Usage u = Usage.NONE;
    if (usage != null) {
      usage.onEnd();
      u = usage.usage();
      if (tokensReserved) {
        tokensReserved = false;
        rt.quotas()
            .reconcile(
                resolved.tenant(),
                estimate.inputTokens(),
                estimate.outputReserveTokens(),
                u.inputTokens(),
                u.outputTokens(),
                u.reported(),
                rt.clock().millis())
            .thenAccept(rc -> rt.metrics().reconciled(rc.refunded(), rc.overcharged()));
      }
      if (u.reported()) {
        rt.metrics()
            .actual(
                pool,
                cls,
                u.inputTokens(),
                u.outputTokens(),
                estimate.inputTokens(),
                estimate.outputReserveTokens());
      }
    }
    faults.at(StreamFaults.Step.DECISION_LOG);
    if (rt.decisionLog().wants(false)) {
      rt.decisionLog()
          .write(
              record(io.sluice.api.v1.Decision.DECISION_ADMIT, decidedReason, 200, 0)
                  .setActual(
                      io.sluice.api.v1.Usage.newBuilder()
                          .setInputTokens(u.inputTokens())
                          .setOutputTokens(u.outputTokens())
                          .setReported(u.reported()))
                  .setOutcome(outcome(outcome))
                  .setUpstreamStatus(upstreamStatus)
                  .setHeldMs((now - p.admittedAtNanos()) / 1_000_000L)
                  .build());
    }
  }

  private static io.sluice.api.v1.Outcome outcome(Outcome o) {
    return switch (o) {
      case COMPLETED -> io.sluice.api.v1.Outcome.OUTCOME_COMPLETED;
      case CANCELLED -> io.sluice.api.v1.Outcome.OUTCOME_CANCELLED;
      case ERROR -> io.sluice.api.v1.Outcome.OUTCOME_ERROR;
      case SHUTDOWN -> io.sluice.api.v1.Outcome.OUTCOME_SHUTDOWN;
    };
  }

  private AdmissionRecord.Builder record(
      io.sluice.api.v1.Decision decision, Reason reason, int status, long retryAfter) {
    AdmissionRecord.Builder b =
        AdmissionRecord.newBuilder()
            .setArrivalTime(Timestamps.fromMillis(arrivalEpochMillis))
            .setDecision(decision)
            .setReason(reason == Reason.ADMITTED ? "" : reason.code())
            .setHttpStatus(status)
            .setRetryAfterSeconds(retryAfter)
            .setDecisionLatencyUs(decisionLatencyNanos / 1000)
            .setQueuePosition(queuePosition)
            .setQueueWaitMs(queueWaitNanos / 1_000_000L);
    if (resolved != null) {
      b.setTenant(resolved.tenant().id())
          .setTier(resolved.tenant().tier().name())
          .setClassName(resolved.requestClass().name())
          .setPool(resolved.pool().name())
          .setRoute(resolved.route())
          .setRequestFormat(resolved.format().configName())
          .setDeadlineMs((resolved.deadlineNanos() - arrivalNanos) / 1_000_000L)
          .setMaxQueueAgeMs(resolved.requestClass().maxQueueWait().toMillis());
      if (resolved.operationId() != null) {
        b.setOperationId(resolved.operationId());
      }
    }
    if (estimate != null) {
      io.sluice.api.v1.Estimate.Builder e =
          io.sluice.api.v1.Estimate.newBuilder()
              .setInputTokens(estimate.inputTokens())
              .setOutputReserveTokens(estimate.outputReserveTokens())
              .setWorkUnits(workUnits)
              .setMethod(estimate.method());
      if (estimate.fallbackCause() != null) {
        e.setFallbackCause(estimate.fallbackCause());
      }
      b.setEstimate(e);
    }
    return b;
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
