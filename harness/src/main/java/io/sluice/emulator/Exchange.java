package io.sluice.emulator;

import com.google.protobuf.Struct;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.Status;
import io.grpc.SynchronizationContext;
import io.sluice.emulator.FilterConfig.BodyMode;
import io.sluice.emulator.FilterConfig.HeaderMode;
import io.sluice.emulator.HttpRequest.Phase;
import io.sluice.emulator.HttpResult.Outcome;
import io.sluice.emulator.ProcessorState.CallbackState;
import io.sluice.emulator.ResponsePath.Stage;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.jspecify.annotations.Nullable;

/**
 * One HTTP request going through the emulated ext_proc filter. Every event (gRPC message or close,
 * timer, upstream headers or data, client cancel) runs in this exchange's {@link
 * SynchronizationContext}, so the state below needs no locks and nothing blocks.
 *
 * <p>This class sequences the filter: the processor's answers, the stream's close and the message
 * timeout, local replies and the end. Its parts: {@link RequestPath} (request direction, router,
 * upstream call), {@link ResponsePath} (response direction), {@link ProcessorState} (per
 * direction), {@link ProcessorStream} (the gRPC stream) and {@link Downstream} (what the client
 * receives).
 */
final class Exchange {
  private static final Logger LOG = Logger.getLogger(Exchange.class.getName());
  static final String TIMEOUT_DETAILS = "ext_proc_error_per-message_timeout_exceeded";

  private final EnvoyExtProcEmulator emulator;
  private final FilterConfig config;
  private final Stats stats;
  final HttpRequest request;
  final ScheduledExecutorService scheduler;
  final SynchronizationContext sync;
  private final CompletableFuture<HttpResult> result = new CompletableFuture<>();
  private final long startNanos;

  // ext_proc stream
  boolean processingComplete;
  boolean bypassed;
  final ProcessorState decoding;
  final ProcessorState encoding;
  private final ProcessorStream stream;
  private final Struct.Builder dynamicMetadata = Struct.newBuilder();

  final RequestPath requestPath;
  final ResponsePath responsePath;
  private final Downstream downstream;
  boolean finished;
  // A phase cancel (cancelAfter(Phase)) is queued: the client is gone from that point, so nothing
  // that arrives before the cancel task runs (a processor's answer, a message timeout) is acted on.
  boolean clientGone;

  Exchange(EnvoyExtProcEmulator emulator, HttpRequest request) {
    this.emulator = emulator;
    this.config = emulator.config();
    this.stats = emulator.stats();
    this.scheduler = emulator.scheduler();
    this.startNanos = emulator.nanoTime();
    this.request = request;
    this.sync =
        new SynchronizationContext(
            (thread, error) -> {
              // An exchange still running when its emulator shut down (end of a run) is not news.
              boolean closing =
                  error instanceof java.util.concurrent.RejectedExecutionException
                      && scheduler.isShutdown();
              LOG.log(closing ? Level.FINE : Level.WARNING, "emulator exchange failed", error);
              result.completeExceptionally(error);
            });
    this.decoding =
        new ProcessorState(true, config, stats, sync, scheduler, this::onMessageTimeout);
    this.encoding =
        new ProcessorState(false, config, stats, sync, scheduler, this::onMessageTimeout);
    this.stream =
        new ProcessorStream(
            emulator,
            request,
            sync,
            decoding,
            encoding,
            this::onProcessingResponse,
            this::onGrpcClose);
    this.downstream = new Downstream(emulator::nanoTime);
    this.requestPath = new RequestPath(this, emulator, request);
    if (config.tracing() != null) {
      stream.traceparent(config.tracing().begin(requestPath.requestHeaders));
    }
    this.responsePath = new ResponsePath(this, config, downstream);
  }

  CompletableFuture<HttpResult> start() {
    sync.execute(
        () -> {
          request
              .cancelAfterDelay()
              .ifPresent(
                  d ->
                      sync.schedule(
                          this::clientCancel, d.toNanos(), TimeUnit.NANOSECONDS, scheduler));
          requestPath.headersPhase();
        });
    return result;
  }

  boolean active() {
    return !processingComplete && !request.routeDisabled();
  }

  /** True if the phase is configured; marks the exchange bypassed if ext_proc is already done. */
  boolean wants(boolean configured) {
    if (!configured || request.routeDisabled()) {
      return false;
    }
    if (processingComplete) {
      bypassed = true;
      return false;
    }
    return true;
  }

  /** Dynamic metadata an AI filter put on the stream ({@link AiFilters}). */
  void publish(AiFilters.Published p) {
    stream.publish(p);
  }

  void send(ProcessorState direction, ProcessingRequest.Builder msg, CallbackState next) {
    stream.send(direction, msg, next);
  }

  // ---------------------------------------------------------------------------------------------
  // downstream

  /** Envoy's {@code sendLocalReply}; after response headers went downstream it resets. */
  void localReply(int status, String replyDetails, @Nullable HeaderMutation mutation, byte[] body) {
    io.sluice.upstream.HttpHeaders responseHeaders = new io.sluice.upstream.HttpHeaders();
    responseHeaders.add(":status", Integer.toString(status));
    if (body.length > 0) {
      responseHeaders.add("content-length", Integer.toString(body.length));
      responseHeaders.add("content-type", "text/plain");
    }
    localReply(responseHeaders, replyDetails, mutation, body);
  }

  /** A local reply with {@code responseHeaders} (a gRPC one: {@link GrpcLocalReply}). */
  private void localReply(
      io.sluice.upstream.HttpHeaders responseHeaders,
      String replyDetails,
      @Nullable HeaderMutation mutation,
      byte[] body) {
    if (finished) {
      return;
    }
    downstream.details(replyDetails);
    responsePath.cancelUpstreamBody();
    if (downstream.headersSent()) {
      finish(Outcome.DOWNSTREAM_RESET);
      return;
    }
    responsePath.replaceHeaders(responseHeaders);
    if (mutation != null) {
      // ImmediateResponse headers: the configured rules; a failure is only logged by Envoy
      HeaderMutations.apply(mutation, responseHeaders, config.mutationRules(), stats, false, false);
    }
    downstream.clearBody();
    responsePath.sendDownstreamHeaders();
    downstream.emit(body);
    finish(Outcome.LOCAL_REPLY);
  }

  private void clientCancel() {
    clientGone = false; // from here on, finished says the same
    if (finished) {
      return;
    }
    responsePath.cancelUpstreamBody();
    downstream.details("downstream_remote_disconnect");
    finish(Outcome.CLIENT_CANCELLED);
  }

  void cancelIfAt(Phase phase) {
    if (request.cancelAfterPhase().filter(p -> p == phase).isPresent()) {
      // The cancel runs after the current task, so the phase completes as it would in Envoy. The
      // processor's answer to the message just sent can be queued before it (this thread may be
      // descheduled between the send and this line, e.g. on a loaded machine), so until the
      // cancel runs nothing the processor sends is acted on: otherwise a client that left after
      // request_headers would still get its body sent and decided (CancelE2eTest's flake).
      clientGone = true;
      sync.executeLater(this::clientCancel);
    }
  }

  /** The HTTP stream is over: Envoy's {@code onDestroy} closes the ext_proc stream. */
  void finish(Outcome outcome) {
    if (finished) {
      return;
    }
    finished = true;
    responsePath.stage = Stage.DONE;
    decoding.stopTimer();
    encoding.stopTimer();
    requestPath.stopResponseTimer();
    stream.close(true);
    long end = emulator.nanoTime();
    RouterFilter router = requestPath.router;
    result.complete(
        downstream.result(
            outcome,
            startNanos,
            end,
            dynamicMetadata.build(),
            bypassed,
            requestPath.upstreamRequest(),
            router.route(),
            router.timeoutMillis()));
  }

  // ---------------------------------------------------------------------------------------------
  // ext_proc stream

  private void onGrpcClose(Status status) {
    if (stream.onCallClosed()) {
      return; // Envoy dropped the stream already; no callbacks reach the filter
    }
    if (status.isOk()) {
      // onGrpcClose: clean close = proceed without the processor
      if (processingComplete) {
        return;
      }
      processingComplete = true;
      stats.streamsClosed.increment();
      stream.markClosedByEnvoy();
      clearAsyncState();
      return;
    }
    stats.streamsFailed.increment();
    if (processingComplete) {
      return;
    }
    if (config.failureModeAllow()) {
      processingComplete = true;
      stream.markClosedByEnvoy();
      stats.streamsClosed.increment();
      stats.failureModeAllowed.increment();
      clearAsyncState();
      return;
    }
    processingComplete = true;
    stream.markClosedByEnvoy();
    decoding.finishCall(CallbackState.IDLE);
    encoding.finishCall(CallbackState.IDLE);
    String message = status.getDescription() == null ? "" : status.getDescription();
    localReply(
        500,
        ExtProcMessages.replaceWhitespace(
            "ext_proc_error_gRPC_error_" + status.getCode().value() + "{" + message + "}"),
        null,
        new byte[0]);
  }

  private void onMessageTimeout() {
    if (finished || processingComplete || clientGone) {
      return;
    }
    stats.messageTimeouts.increment();
    processingComplete = true;
    stream.close(false);
    if (config.failureModeAllow()) {
      stats.failureModeAllowed.increment();
      clearAsyncState();
    } else {
      decoding.finishCall(CallbackState.IDLE);
      encoding.finishCall(CallbackState.IDLE);
      localReply(504, TIMEOUT_DETAILS, null, new byte[0]);
    }
  }

  private void onProcessingResponse(ProcessingResponse response) {
    if (stream.closedByEnvoy() || finished || processingComplete || clientGone) {
      return; // ignored: processing complete or the stream is gone
    }
    if (response.hasOverrideMessageTimeout()) {
      onNewTimeout(response.getOverrideMessageTimeout());
      return;
    }
    String spurious = null;
    switch (response.getResponseCase()) {
      case REQUEST_HEADERS -> {
        applyDynamicMetadata(response);
        if (decoding.state != CallbackState.HEADERS) {
          spurious = "spurious message";
        } else {
          countReceived();
          requestPath.onHeadersResponse(response.getRequestHeaders().getResponse());
        }
      }
      case REQUEST_BODY -> {
        applyDynamicMetadata(response);
        if (!decoding.inBodyState()) {
          spurious = "spurious message";
        } else {
          countReceived();
          requestPath.onBodyResponse(response.getRequestBody().getResponse());
        }
      }
      case RESPONSE_HEADERS -> {
        applyDynamicMetadata(response);
        if (encoding.state != CallbackState.HEADERS) {
          spurious = "spurious message";
        } else {
          countReceived();
          responsePath.onHeadersResponse(response.getResponseHeaders().getResponse());
        }
      }
      case RESPONSE_BODY -> {
        applyDynamicMetadata(response);
        if (!encoding.inBodyState()) {
          spurious = "spurious message";
        } else {
          countReceived();
          responsePath.onBodyResponse(response.getResponseBody().getResponse());
        }
      }
      case RESPONSE_TRAILERS -> {
        applyDynamicMetadata(response);
        if (encoding.state != CallbackState.TRAILERS) {
          spurious = "spurious message";
        } else {
          countReceived();
          responsePath.onTrailersResponse(response.getResponseTrailers());
        }
      }
      case REQUEST_TRAILERS -> {
        // request trailers are never sent by this emulator, so the state can never match
        applyDynamicMetadata(response);
        spurious = "spurious message";
      }
      case IMMEDIATE_RESPONSE -> {
        applyDynamicMetadata(response);
        countReceived();
        processingComplete = true;
        decoding.finishCall(CallbackState.IDLE);
        encoding.finishCall(CallbackState.IDLE);
        stream.close(true);
        stats.immediateResponsesSent.increment();
        sendImmediateResponse(response.getImmediateResponse());
      }
      default -> spurious = "unhandled message";
    }
    if (spurious != null) {
      stats.spuriousMsgsReceived.increment();
      if (config.failureModeAllow()) {
        stats.failureModeAllowed.increment();
        stream.close(false);
        processingComplete = true;
        clearAsyncState();
      } else {
        handleErrorResponse(spurious);
      }
      return;
    }
    if (config.streamClose().afterLastResponse() && !processingComplete && !finished) {
      maybeCloseAfterLastResponse();
    }
  }

  private void countReceived() {
    stats.streamMsgsReceived.increment();
  }

  /** Envoy 1.37 {@code closeGrpcStreamIfLastRespReceived}, approximated on phase completion. */
  private void maybeCloseAfterLastResponse() {
    if (decoding.state != CallbackState.IDLE || encoding.state != CallbackState.IDLE) {
      return;
    }
    boolean responseNeedsNothing =
        config.processingMode().responseHeaderMode() == HeaderMode.SKIP
            && config.processingMode().responseBodyMode() == BodyMode.NONE
            && config.processingMode().responseTrailerMode() == HeaderMode.SKIP;
    boolean requestDone = requestPath.forwarded();
    Stage stage = responsePath.stage;
    boolean responseDone =
        stage == Stage.PASSTHROUGH
            || stage == Stage.DONE
            || (stage == Stage.STREAMING && responsePath.upstreamEnded);
    if (requestDone && (responseNeedsNothing || responseDone) && !responsePath.trailersOwed()) {
      stream.close(true);
    }
  }

  /**
   * {@code Filter::onNewTimeout}: only the timer is touched; the rest of the message is dropped.
   */
  private void onNewTimeout(com.google.protobuf.Duration timeout) {
    long millis;
    try {
      if (timeout.getSeconds() < 0 || timeout.getNanos() < 0) {
        throw new ArithmeticException("negative");
      }
      millis =
          Math.addExact(
              Math.multiplyExact(timeout.getSeconds(), 1000L), timeout.getNanos() / 1_000_000);
    } catch (ArithmeticException e) {
      stats.overrideMessageTimeoutIgnored.increment();
      return;
    }
    if (millis < 1 || millis > config.maxMessageTimeout().toMillis()) {
      stats.overrideMessageTimeoutIgnored.increment();
      return;
    }
    boolean restartedDecoding = decoding.restartTimer(millis);
    boolean restartedEncoding = encoding.restartTimer(millis);
    if (restartedDecoding || restartedEncoding) {
      stats.overrideMessageTimeoutReceived.increment();
    } else {
      stats.overrideMessageTimeoutIgnored.increment();
    }
  }

  /** {@code handleErrorResponse}: processing error ⇒ stream closed, 500 with the message. */
  void handleErrorResponse(String message) {
    processingComplete = true;
    decoding.finishCall(CallbackState.IDLE);
    encoding.finishCall(CallbackState.IDLE);
    stream.close(false);
    localReply(500, ExtProcMessages.replaceWhitespace(message), null, new byte[0]);
  }

  /**
   * {@code clearAsyncState}: every direction waiting for the processor continues unprocessed with
   * what it has (headers mutated so far, chunks answered so far plus the unanswered ones).
   */
  private void clearAsyncState() {
    boolean requestWaiting = decoding.state != CallbackState.IDLE;
    boolean responseWaiting = encoding.state != CallbackState.IDLE;
    decoding.finishCall(CallbackState.IDLE);
    encoding.finishCall(CallbackState.IDLE);
    if (requestWaiting) {
      bypassed = true;
      requestPath.continueUnprocessed();
    }
    if (responseWaiting) {
      bypassed = true;
      responsePath.continueUnprocessed();
    }
  }

  private void sendImmediateResponse(ImmediateResponse immediate) {
    int status = immediate.hasStatus() ? immediate.getStatus().getCodeValue() : 200;
    if (status < 200 || status >= 600) {
      status = 200;
    }
    String details = ExtProcMessages.replaceWhitespace(immediate.getDetails());
    @Nullable HeaderMutation headers = immediate.hasHeaders() ? immediate.getHeaders() : null;
    byte[] body = immediate.getBody().toByteArray();
    if (GrpcLocalReply.isGrpc(request)) { // trailers-only: status 200, grpc-status, no body
      localReply(GrpcLocalReply.headers(immediate, status, body), details, headers, new byte[0]);
      return;
    }
    localReply(status, details, headers, body);
  }

  private void applyDynamicMetadata(ProcessingResponse response) {
    ExtProcMessages.mergeDynamicMetadata(
        response, config.metadataOptions().receivingNamespaces(), dynamicMetadata);
  }
}
