package io.sluice.emulator;

import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import io.grpc.ClientCall;
import io.grpc.Metadata.Key;
import io.grpc.Status;
import io.grpc.SynchronizationContext;
import io.grpc.SynchronizationContext.ScheduledHandle;
import io.sluice.emulator.FilterConfig.BodyMode;
import io.sluice.emulator.FilterConfig.HeaderMode;
import io.sluice.emulator.HttpRequest.Phase;
import io.sluice.emulator.HttpResult.Outcome;
import io.sluice.upstream.ResponseBody;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One HTTP request going through the emulated ext_proc filter. Every event (gRPC message or close,
 * timer, upstream headers or data, client cancel) runs in this exchange's {@link
 * SynchronizationContext}, so the state below needs no locks and nothing blocks.
 */
final class Exchange {
  private static final Logger LOG = Logger.getLogger(Exchange.class.getName());
  private static final String ATTRIBUTES_KEY = "envoy.filters.http.ext_proc";
  static final String TIMEOUT_DETAILS = "ext_proc_error_per-message_timeout_exceeded";

  // Router request headers (Envoy's Http::Headers), read in FilterUtility::finalTimeout
  static final String UPSTREAM_RQ_TIMEOUT_MS = "x-envoy-upstream-rq-timeout-ms";
  static final String EXPECTED_RQ_TIMEOUT_MS = "x-envoy-expected-rq-timeout-ms";
  static final String UPSTREAM_RQ_TIMEOUT_ALT_RESPONSE = "x-envoy-upstream-rq-timeout-alt-response";
  static final String RESPONSE_TIMEOUT_DETAILS = "upstream_response_timeout";
  static final String ROUTE_NOT_FOUND_DETAILS = "route_not_found";

  /** Envoy's {@code ProcessorState::CallbackState} (trailers and partial modes not emulated). */
  private enum CallbackState {
    IDLE,
    HEADERS,
    BUFFERED_BODY,
    STREAMED_BODY
  }

  /** Where the response is on its way downstream. */
  private enum ResponseStage {
    NOT_STARTED,
    AWAIT_HEADERS_RESPONSE,
    PASSTHROUGH,
    BUFFERING,
    AWAIT_BUFFERED_BODY_RESPONSE,
    STREAMING,
    DONE
  }

  private record Chunk(byte[] data, boolean endOfStream) {}

  /** Envoy's per-direction {@code ProcessorState}: callback state, timer, override flag. */
  private final class Direction {
    final boolean request;
    CallbackState state = CallbackState.IDLE;
    ScheduledHandle timer;
    boolean overrideAccepted;
    boolean attributesSent;
    final ArrayDeque<Chunk> chunkQueue = new ArrayDeque<>();

    Direction(boolean request) {
      this.request = request;
    }

    /** {@code onStartProcessorCall}. */
    void startCall(CallbackState next) {
      state = next;
      armTimer(config.messageTimeout().toNanos());
      overrideAccepted = false;
    }

    /** {@code onFinishProcessorCall}: timer off, next state, override flag cleared. */
    void finishCall(CallbackState next) {
      stopTimer();
      state = next;
      overrideAccepted = false;
    }

    /** {@code restartMessageTimer}. */
    boolean restartTimer(long millis) {
      if (timer != null && timer.isPending() && !overrideAccepted) {
        armTimer(TimeUnit.MILLISECONDS.toNanos(millis));
        overrideAccepted = true;
        return true;
      }
      return false;
    }

    private void armTimer(long nanos) {
      stopTimer();
      timer =
          sync.schedule(Exchange.this::onMessageTimeout, nanos, TimeUnit.NANOSECONDS, scheduler);
    }

    void stopTimer() {
      if (timer != null) {
        timer.cancel();
        timer = null;
      }
    }
  }

  private final EnvoyExtProcEmulator emulator;
  private final FilterConfig config;
  private final Stats stats;
  private final HttpRequest request;
  private final java.util.concurrent.ScheduledExecutorService scheduler;
  private final SynchronizationContext sync;
  private final CompletableFuture<HttpResult> result = new CompletableFuture<>();
  private final long startNanos;

  // ext_proc stream
  private ClientCall<ProcessingRequest, ProcessingResponse> call;
  private boolean closedByEnvoy;
  private boolean callDone;
  private ScheduledHandle remoteCloseTimer;
  private boolean firstMessageSent;
  private boolean processingComplete;
  private boolean bypassed;
  private final Direction decoding = new Direction(true);
  private final Direction encoding = new Direction(false);
  private final Struct.Builder dynamicMetadata = Struct.newBuilder();

  // request side
  private final io.sluice.upstream.HttpHeaders requestHeaders;
  private final ByteArrayOutputStream forwardedBody = new ByteArrayOutputStream();
  private byte[] requestBody;
  private boolean requestHeadersHeld;
  private boolean forwarded;
  private UpstreamRequest upstreamRequest;

  // route cache and router
  private final RouteTable routes;
  // HCM resolves the route from the client's headers before the filter chain runs (and ext_proc's
  // decodeHeaders reads it): cached, including "no route", until a clear_route_cache
  private Optional<Route> cachedRoute;
  private boolean routeCacheCleared;
  private boolean routerDecoded;
  private Route route;
  private long routerTimeoutMillis;
  private int timeoutResponseStatus = 504;
  private ScheduledHandle responseTimer;
  private CompletableFuture<UpstreamResponse> upstreamFuture;

  // response side
  private UpstreamResponse upstreamResponse;
  private io.sluice.upstream.HttpHeaders responseHeaders;
  private Runnable cancelUpstreamBody = () -> {};
  private ResponseStage stage = ResponseStage.NOT_STARTED;
  private final List<byte[]> heldChunks = new ArrayList<>();
  private boolean upstreamEnded;

  // downstream
  private boolean finished;
  // A phase cancel (cancelAfter(Phase)) is queued: the client is gone from that point, so nothing
  // that arrives before the cancel task runs (a processor's answer, a message timeout) is acted on.
  private boolean clientGone;
  private boolean downstreamHeadersSent;
  private int downstreamStatus;
  private io.sluice.upstream.HttpHeaders downstreamHeaders = new io.sluice.upstream.HttpHeaders();
  private final List<byte[]> downstreamChunks = new ArrayList<>();
  private long headersAtNanos = -1;
  private long firstByteAtNanos = -1;
  private String details = "via_upstream";

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
    this.requestBody = request.body();
    this.requestHeaders = new io.sluice.upstream.HttpHeaders();
    requestHeaders.add(":authority", request.authority());
    requestHeaders.add(":path", request.path());
    requestHeaders.add(":method", request.method());
    requestHeaders.add(":scheme", request.scheme());
    for (Map.Entry<String, String> e : request.headers().entries()) {
      requestHeaders.add(e.getKey(), e.getValue());
    }
    if (!requestHeaders.contains("x-request-id")) {
      requestHeaders.add(
          "x-request-id", request.requestId().orElseGet(() -> UUID.randomUUID().toString()));
    }
    if (!requestHeaders.contains("x-forwarded-proto")) {
      requestHeaders.add("x-forwarded-proto", request.scheme());
    }
    // A client that sends its body chunked (HTTP/1.1 transfer-encoding: chunked, or HTTP/2 without
    // content-length) gives no size: Envoy's codec consumes transfer-encoding, adds no length.
    boolean chunked = requestHeaders.contains("transfer-encoding");
    requestHeaders.remove("transfer-encoding");
    if (requestBody.length > 0 && !chunked && !requestHeaders.contains("content-length")) {
      requestHeaders.add("content-length", Integer.toString(requestBody.length));
    }
    this.routes = emulator.routes();
    this.cachedRoute = routes.select(requestHeaders);
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
          requestHeadersPhase();
        });
    return result;
  }

  // ---------------------------------------------------------------------------------------------
  // request direction

  private boolean active() {
    return !processingComplete && !request.routeDisabled();
  }

  /** True if the phase is configured; marks the exchange bypassed if ext_proc is already done. */
  private boolean wants(boolean configured) {
    if (!configured || request.routeDisabled()) {
      return false;
    }
    if (processingComplete) {
      bypassed = true;
      return false;
    }
    return true;
  }

  private void requestHeadersPhase() {
    if (wants(config.requestHeaderMode() == HeaderMode.SEND)) {
      requestHeadersHeld = true;
      ProcessingRequest.Builder msg = ProcessingRequest.newBuilder();
      msg.setRequestHeaders(
          HttpHeaders.newBuilder()
              .setHeaders(toHeaderMap(requestHeaders))
              .setEndOfStream(requestBody.length == 0));
      send(decoding, msg, CallbackState.HEADERS);
      cancelIfAt(Phase.REQUEST_HEADERS_SENT);
      return;
    }
    requestBodyPhase();
  }

  private void onRequestHeadersResponse(CommonResponse common) {
    Optional<String> error = mutateHeaders(common, requestHeaders, decoding);
    if (error.isPresent()) {
      handleErrorResponse(error.get());
      return;
    }
    clearRouteCache(common);
    if (common.getStatus() == CommonResponse.ResponseStatus.CONTINUE_AND_REPLACE) {
      decoding.finishCall(CallbackState.IDLE);
      if (common.hasBodyMutation()) {
        requestHeaders.remove("content-length");
        requestBody = applyBodyMutation(common.getBodyMutation(), requestBody);
      }
      forwardedBody.writeBytes(requestBody);
      forwardUpstream();
      return;
    }
    decoding.finishCall(CallbackState.IDLE);
    requestBodyPhase();
  }

  private void requestBodyPhase() {
    BodyMode mode = config.requestBodyMode();
    if (requestBody.length == 0 || !wants(mode != BodyMode.NONE)) {
      forwardedBody.writeBytes(requestBody);
      forwardUpstream();
      return;
    }
    if ((mode == BodyMode.STREAMED || !requestHeadersHeld) && !routerDecodeHeaders()) {
      // The headers go on to the router before the body is processed (ext_proc's
      // shouldRemoveContentLength case); the router picked no route and answered 404.
      return;
    }
    if (mode == BodyMode.BUFFERED) {
      ProcessingRequest.Builder msg = ProcessingRequest.newBuilder();
      msg.setRequestBody(
          HttpBody.newBuilder().setBody(ByteString.copyFrom(requestBody)).setEndOfStream(true));
      send(decoding, msg, CallbackState.BUFFERED_BODY);
    } else {
      List<byte[]> chunks = request.bodyChunks();
      for (int i = 0; i < chunks.size(); i++) {
        boolean eos = i == chunks.size() - 1;
        decoding.chunkQueue.add(new Chunk(chunks.get(i), eos));
        ProcessingRequest.Builder msg = ProcessingRequest.newBuilder();
        msg.setRequestBody(
            HttpBody.newBuilder().setBody(ByteString.copyFrom(chunks.get(i))).setEndOfStream(eos));
        send(decoding, msg, CallbackState.STREAMED_BODY);
        if (finished || processingComplete) {
          return;
        }
      }
    }
    cancelIfAt(Phase.REQUEST_BODY_SENT);
  }

  private void onRequestBodyResponse(CommonResponse common) {
    if (decoding.state == CallbackState.BUFFERED_BODY) {
      if (common.hasHeaderMutation()) {
        Optional<String> error = mutateHeaders(common, requestHeaders, decoding);
        if (error.isPresent()) {
          handleErrorResponse(error.get());
          return;
        }
      }
      if (common.hasBodyMutation()) {
        byte[] mutated = applyBodyMutation(common.getBodyMutation(), requestBody);
        Optional<String> error = validateContentLength(requestHeaders, decoding, mutated);
        if (error.isPresent()) {
          handleErrorResponse(error.get());
          return;
        }
        requestBody = mutated;
      }
      decoding.finishCall(CallbackState.IDLE);
      clearRouteCache(common);
      forwardedBody.writeBytes(requestBody);
      forwardUpstream();
      return;
    }
    // STREAMED: header_mutation is ignored, the body mutation applies to the dequeued chunk only
    Chunk chunk = decoding.chunkQueue.poll();
    byte[] data = chunk.data();
    if (common.hasBodyMutation()) {
      data = applyBodyMutation(common.getBodyMutation(), data);
    }
    forwardedBody.writeBytes(data);
    decoding.finishCall(
        decoding.chunkQueue.isEmpty() ? CallbackState.IDLE : CallbackState.STREAMED_BODY);
    clearRouteCache(common); // counted as in Envoy; the router holds its route already
    if (chunk.endOfStream()) {
      forwardUpstream();
    }
  }

  /**
   * Envoy's {@code DecodingProcessorState::clearRouteCache} ({@code processor_state.cc}), run after
   * every request-path headers or body response (the encoding side's is a no-op): without a {@code
   * header_mutation} nothing is cleared ({@code clear_route_cache_ignored} if it was asked for);
   * with one, DEFAULT clears iff {@code clear_route_cache}, CLEAR always, RETAIN never ({@code
   * clear_route_cache_disabled} if it was asked for). The route is picked again, from the headers
   * as they are then, when the router next asks for it.
   */
  private void clearRouteCache(CommonResponse common) {
    boolean asked = common.getClearRouteCache();
    if (!common.hasHeaderMutation()) {
      if (asked) {
        stats.clearRouteCacheIgnored.increment();
      }
      return;
    }
    switch (config.effectiveRouteCacheAction()) {
      case DEFAULT -> routeCacheCleared |= asked;
      case CLEAR -> routeCacheCleared = true;
      case RETAIN -> {
        if (asked) {
          stats.clearRouteCacheDisabled.increment();
        }
      }
    }
  }

  /** {@code StreamDecoderFilterCallbacks::route()}: the cached route, re-picked after a clear. */
  private Optional<Route> cachedRoute() {
    if (routeCacheCleared) {
      routeCacheCleared = false;
      cachedRoute = routes.select(requestHeaders);
    }
    return cachedRoute;
  }

  /**
   * The router's {@code Filter::decodeHeaders} ({@code source/common/router/router.cc}), once, when
   * ext_proc releases the request headers: takes the route ({@code no_route} ⇒ 404 local reply
   * {@code route_not_found}, empty body) and its final timeout. False if it answered.
   */
  private boolean routerDecodeHeaders() {
    if (routerDecoded) {
      return route != null;
    }
    routerDecoded = true;
    Optional<Route> selected = cachedRoute();
    if (selected.isEmpty()) {
      localReply(404, ROUTE_NOT_FOUND_DETAILS, null, new byte[0]);
      return false;
    }
    route = selected.get();
    routerTimeoutMillis = finalTimeoutMillis(route);
    if (requestHeaders.contains(UPSTREAM_RQ_TIMEOUT_ALT_RESPONSE)) {
      // decodeHeaders: any value makes a global timeout answer 204 (no body)
      timeoutResponseStatus = 204;
      requestHeaders.remove(UPSTREAM_RQ_TIMEOUT_ALT_RESPONSE);
    }
    return true;
  }

  /**
   * Envoy's {@code FilterUtility::finalTimeout} + {@code setTimeoutHeaders} ({@code
   * source/common/router/router.cc}; per-try and gRPC timeouts not emulated). The route's {@code
   * timeout}, overridden by a parseable {@code x-envoy-upstream-rq-timeout-ms}, which is removed
   * from the request whether it parsed or not. With {@code respect_expected_rq_timeout} a present
   * {@code x-envoy-expected-rq-timeout-ms} is used instead (and {@code
   * x-envoy-upstream-rq-timeout-ms} is then left alone). Unless {@code suppress_envoy_headers}, a
   * final timeout above 0 is written to {@code x-envoy-expected-rq-timeout-ms} on the request the
   * upstream receives. 0 means no timeout.
   */
  private long finalTimeoutMillis(Route selected) {
    long timeout = selected.timeout().toMillis();
    Optional<String> expected = requestHeaders.first(EXPECTED_RQ_TIMEOUT_MS);
    if (routes.respectExpectedRqTimeout() && expected.isPresent()) {
      timeout = parseTimeoutHeader(expected.get()).orElse(timeout);
    } else {
      Optional<String> upstreamTimeout = requestHeaders.first(UPSTREAM_RQ_TIMEOUT_MS);
      if (upstreamTimeout.isPresent()) {
        timeout = parseTimeoutHeader(upstreamTimeout.get()).orElse(timeout);
        requestHeaders.remove(UPSTREAM_RQ_TIMEOUT_MS);
      }
    }
    if (timeout > 0 && !routes.suppressEnvoyHeaders()) {
      requestHeaders.set(EXPECTED_RQ_TIMEOUT_MS, Long.toString(timeout));
    }
    return timeout;
  }

  /** {@code FilterUtility::tryParseHeaderTimeout}: {@code absl::SimpleAtoi} into a uint64. */
  private static Optional<Long> parseTimeoutHeader(String value) {
    String v = value.strip();
    if (v.startsWith("+")) {
      v = v.substring(1);
    }
    if (v.isEmpty() || !v.chars().allMatch(c -> c >= '0' && c <= '9')) {
      return Optional.empty();
    }
    try {
      return Optional.of(Long.parseLong(v));
    } catch (NumberFormatException e) {
      return Optional.empty(); // beyond what the emulator represents
    }
  }

  /**
   * Envoy's {@code Filter::onResponseTimeout} → {@code onUpstreamTimeoutAbort} → {@code
   * onUpstreamAbort} ({@code source/common/router/router.cc}): the upstream request is reset and
   * {@code sendLocalReply(504, "upstream request timeout")} with details {@code
   * upstream_response_timeout}. The filter manager sends that through the filter chain if no
   * response headers exist yet, straight to the codec if an encoder filter (ext_proc) still holds
   * them, and resets the stream if they went downstream ({@code FilterManager::sendLocalReply}):
   * {@link #localReply} does the same (local replies never reach the ext_proc server, 1.34+).
   */
  private void onResponseTimeout() {
    responseTimer = null;
    if (finished || clientGone) {
      return;
    }
    if (upstreamFuture != null) {
      upstreamFuture.cancel(false);
    }
    byte[] body =
        timeoutResponseStatus == 504
            ? "upstream request timeout".getBytes(StandardCharsets.UTF_8)
            : new byte[0];
    localReply(timeoutResponseStatus, RESPONSE_TIMEOUT_DETAILS, null, body);
  }

  /** {@code Filter::onUpstreamComplete} → {@code cleanup}: the global timeout is over. */
  private void stopResponseTimer() {
    if (responseTimer != null) {
      responseTimer.cancel();
      responseTimer = null;
    }
  }

  private void forwardUpstream() {
    if (forwarded || finished) {
      return;
    }
    forwarded = true;
    // drain what ext_proc never answered (fail-open / clean close while chunks were in flight)
    while (!decoding.chunkQueue.isEmpty()) {
      forwardedBody.writeBytes(decoding.chunkQueue.poll().data());
    }
    if (requestHeadersHeld && stripsContentLength(decoding)) {
      requestHeaders.remove("content-length");
    }
    if (!routerDecodeHeaders()) {
      return;
    }
    upstreamRequest = new UpstreamRequest(requestHeaders, forwardedBody.toByteArray());
    cancelIfAt(Phase.UPSTREAM_REQUEST_SENT);
    if (routerTimeoutMillis > 0) {
      // Filter::onRequestComplete: the whole request goes upstream now; the global timeout runs
      // until the upstream response is complete (armed before the upstream is called, so it is in
      // place once the upstream has seen the request)
      responseTimer =
          sync.schedule(
              this::onResponseTimeout, routerTimeoutMillis, TimeUnit.MILLISECONDS, scheduler);
    }
    CompletableFuture<UpstreamResponse> future;
    try {
      future = route.upstream().send(upstreamRequest);
    } catch (RuntimeException e) {
      future = CompletableFuture.failedFuture(e);
    }
    upstreamFuture = future;
    future.whenComplete(
        (response, error) ->
            sync.execute(
                () -> {
                  if (error != null) {
                    localReply(
                        503,
                        "upstream_reset_before_response_started{" + error + "}",
                        null,
                        new byte[0]);
                  } else {
                    onUpstreamResponse(response);
                  }
                }));
  }

  // ---------------------------------------------------------------------------------------------
  // response direction

  private void onUpstreamResponse(UpstreamResponse response) {
    if (finished) {
      response.body().subscribe((data, eos) -> {}).run();
      return;
    }
    upstreamResponse = response;
    responseHeaders = new io.sluice.upstream.HttpHeaders();
    responseHeaders.add(":status", Integer.toString(response.status()));
    for (Map.Entry<String, String> e : response.headers().entries()) {
      responseHeaders.add(e.getKey(), e.getValue());
    }
    upstreamEnded = response.body().isEmpty();
    if (upstreamEnded) {
      stopResponseTimer();
    } else {
      ResponseBody body = response.body();
      cancelUpstreamBody =
          body.subscribe((data, eos) -> sync.execute(() -> onUpstreamData(data, eos)));
    }
    responseHeadersPhase();
  }

  private void responseHeadersPhase() {
    if (wants(config.responseHeaderMode() == HeaderMode.SEND)) {
      stage = ResponseStage.AWAIT_HEADERS_RESPONSE;
      ProcessingRequest.Builder msg = ProcessingRequest.newBuilder();
      msg.setResponseHeaders(
          HttpHeaders.newBuilder()
              .setHeaders(toHeaderMap(responseHeaders))
              .setEndOfStream(upstreamResponse.body().isEmpty()));
      send(encoding, msg, CallbackState.HEADERS);
      cancelIfAt(Phase.RESPONSE_HEADERS_SENT);
      return;
    }
    responseBodyStart();
  }

  private void onResponseHeadersResponse(CommonResponse common) {
    Optional<String> error = mutateHeaders(common, responseHeaders, encoding);
    if (error.isPresent()) {
      handleErrorResponse(error.get());
      return;
    }
    encoding.finishCall(CallbackState.IDLE);
    if (common.getStatus() == CommonResponse.ResponseStatus.CONTINUE_AND_REPLACE) {
      byte[] body = new byte[0];
      if (common.hasBodyMutation()) {
        responseHeaders.remove("content-length");
        body = applyBodyMutation(common.getBodyMutation(), concat(heldChunks));
      }
      heldChunks.clear();
      cancelUpstreamBody.run();
      sendDownstreamHeaders();
      emitDownstream(body);
      finish(Outcome.UPSTREAM_RESPONSE);
      return;
    }
    responseBodyStart();
  }

  /** The response headers are released (or about to be buffered with the body). */
  private void responseBodyStart() {
    BodyMode mode = config.responseBodyMode();
    boolean process = !upstreamResponse.body().isEmpty() && wants(mode != BodyMode.NONE);
    if (!process) {
      sendDownstreamHeaders();
      stage = ResponseStage.PASSTHROUGH;
      flushHeldDownstream();
      return;
    }
    if (mode == BodyMode.BUFFERED) {
      stage = ResponseStage.BUFFERING;
      if (upstreamEnded) {
        sendBufferedResponseBody();
      }
      return;
    }
    // STREAMED: headers go downstream now, content-length removed
    if (stripsContentLength(encoding)) {
      responseHeaders.remove("content-length");
    }
    sendDownstreamHeaders();
    stage = ResponseStage.STREAMING;
    if (!heldChunks.isEmpty()) {
      byte[] coalesced = concat(heldChunks);
      heldChunks.clear();
      sendResponseChunk(coalesced, upstreamEnded);
    }
  }

  private void onUpstreamData(byte[] data, boolean endOfStream) {
    if (finished) {
      return;
    }
    upstreamEnded |= endOfStream;
    if (endOfStream) {
      stopResponseTimer();
    }
    switch (stage) {
      case NOT_STARTED, AWAIT_HEADERS_RESPONSE -> heldChunks.add(data);
      case PASSTHROUGH -> {
        emitDownstream(data);
        if (endOfStream) {
          finish(Outcome.UPSTREAM_RESPONSE);
        }
      }
      case BUFFERING -> {
        heldChunks.add(data);
        if (endOfStream) {
          if (active()) {
            sendBufferedResponseBody();
          } else {
            bypassed = true;
            sendDownstreamHeaders();
            flushHeldDownstream();
          }
        }
      }
      case STREAMING -> {
        if (processingComplete) {
          emitDownstream(data);
          if (endOfStream) {
            finish(Outcome.UPSTREAM_RESPONSE);
          }
        } else {
          sendResponseChunk(data, endOfStream);
        }
      }
      default -> {}
    }
  }

  private void sendBufferedResponseBody() {
    stage = ResponseStage.AWAIT_BUFFERED_BODY_RESPONSE;
    byte[] body = concat(heldChunks);
    heldChunks.clear();
    heldChunks.add(body);
    ProcessingRequest.Builder msg = ProcessingRequest.newBuilder();
    msg.setResponseBody(
        HttpBody.newBuilder().setBody(ByteString.copyFrom(body)).setEndOfStream(true));
    send(encoding, msg, CallbackState.BUFFERED_BODY);
  }

  private void sendResponseChunk(byte[] data, boolean endOfStream) {
    encoding.chunkQueue.add(new Chunk(data, endOfStream));
    ProcessingRequest.Builder msg = ProcessingRequest.newBuilder();
    msg.setResponseBody(
        HttpBody.newBuilder().setBody(ByteString.copyFrom(data)).setEndOfStream(endOfStream));
    send(encoding, msg, CallbackState.STREAMED_BODY);
  }

  private void onResponseBodyResponse(CommonResponse common) {
    if (encoding.state == CallbackState.BUFFERED_BODY) {
      if (common.hasHeaderMutation()) {
        Optional<String> error = mutateHeaders(common, responseHeaders, encoding);
        if (error.isPresent()) {
          handleErrorResponse(error.get());
          return;
        }
      }
      byte[] body = concat(heldChunks);
      if (common.hasBodyMutation()) {
        byte[] mutated = applyBodyMutation(common.getBodyMutation(), body);
        Optional<String> error = validateContentLength(responseHeaders, encoding, mutated);
        if (error.isPresent()) {
          handleErrorResponse(error.get());
          return;
        }
        body = mutated;
      }
      heldChunks.clear();
      encoding.finishCall(CallbackState.IDLE);
      sendDownstreamHeaders();
      emitDownstream(body);
      finish(Outcome.UPSTREAM_RESPONSE);
      return;
    }
    Chunk chunk = encoding.chunkQueue.poll();
    byte[] data = chunk.data();
    if (common.hasBodyMutation()) {
      data = applyBodyMutation(common.getBodyMutation(), data);
    }
    encoding.finishCall(
        encoding.chunkQueue.isEmpty() ? CallbackState.IDLE : CallbackState.STREAMED_BODY);
    emitDownstream(data);
    if (chunk.endOfStream()) {
      finish(Outcome.UPSTREAM_RESPONSE);
    }
  }

  private void flushHeldDownstream() {
    for (byte[] c : heldChunks) {
      emitDownstream(c);
    }
    heldChunks.clear();
    if (upstreamEnded) {
      finish(Outcome.UPSTREAM_RESPONSE);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // downstream

  private void sendDownstreamHeaders() {
    if (downstreamHeadersSent) {
      return;
    }
    downstreamHeadersSent = true;
    downstreamHeaders = responseHeaders.copy();
    downstreamStatus = Integer.parseInt(responseHeaders.first(":status").orElse("200"));
    headersAtNanos = emulator.nanoTime();
    cancelIfAt(Phase.RESPONSE_HEADERS_DOWNSTREAM);
  }

  private void emitDownstream(byte[] data) {
    if (data.length == 0) {
      return;
    }
    if (firstByteAtNanos < 0) {
      firstByteAtNanos = emulator.nanoTime();
    }
    downstreamChunks.add(data);
  }

  /** Envoy's {@code sendLocalReply}; after response headers went downstream it resets. */
  private void localReply(int status, String replyDetails, HeaderMutation mutation, byte[] body) {
    if (finished) {
      return;
    }
    details = replyDetails;
    cancelUpstreamBody.run();
    if (downstreamHeadersSent) {
      finish(Outcome.DOWNSTREAM_RESET);
      return;
    }
    responseHeaders = new io.sluice.upstream.HttpHeaders();
    responseHeaders.add(":status", Integer.toString(status));
    if (body.length > 0) {
      responseHeaders.add("content-length", Integer.toString(body.length));
      responseHeaders.add("content-type", "text/plain");
    }
    if (mutation != null) {
      // ImmediateResponse headers: the configured rules; a failure is only logged by Envoy
      HeaderMutations.apply(mutation, responseHeaders, config.mutationRules(), stats, false, false);
    }
    downstreamChunks.clear();
    sendDownstreamHeaders();
    emitDownstream(body);
    finish(Outcome.LOCAL_REPLY);
  }

  private void clientCancel() {
    clientGone = false; // from here on, finished says the same
    if (finished) {
      return;
    }
    cancelUpstreamBody.run();
    details = "downstream_remote_disconnect";
    finish(Outcome.CLIENT_CANCELLED);
  }

  private void cancelIfAt(Phase phase) {
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
  private void finish(Outcome outcome) {
    if (finished) {
      return;
    }
    finished = true;
    stage = ResponseStage.DONE;
    decoding.stopTimer();
    encoding.stopTimer();
    stopResponseTimer();
    closeStream(true);
    long end = emulator.nanoTime();
    Optional<Duration> toHeaders =
        headersAtNanos < 0
            ? Optional.empty()
            : Optional.of(Duration.ofNanos(headersAtNanos - startNanos));
    Optional<Duration> toFirstByte =
        firstByteAtNanos >= 0
            ? Optional.of(Duration.ofNanos(firstByteAtNanos - startNanos))
            : toHeaders;
    result.complete(
        new HttpResult(
            outcome,
            downstreamHeadersSent ? downstreamStatus : 0,
            downstreamHeaders,
            downstreamChunks,
            details,
            dynamicMetadata.build(),
            bypassed,
            Optional.ofNullable(upstreamRequest),
            toHeaders,
            toFirstByte,
            Duration.ofNanos(end - startNanos),
            Optional.ofNullable(route).map(Route::name),
            route == null
                ? Optional.empty()
                : Optional.of(Duration.ofMillis(routerTimeoutMillis))));
  }

  // ---------------------------------------------------------------------------------------------
  // ext_proc stream

  private void send(Direction direction, ProcessingRequest.Builder msg, CallbackState next) {
    if (call == null) {
      openStream();
    }
    Map<String, Object> attributes = new LinkedHashMap<>();
    if (direction.request) {
      attributes.putAll(config.requestAttributes());
      attributes.putAll(request.requestAttributes());
    } else {
      attributes.putAll(config.responseAttributes());
    }
    if (!direction.attributesSent && !attributes.isEmpty()) {
      msg.putAttributes(ATTRIBUTES_KEY, toStruct(attributes));
    }
    direction.attributesSent = true;
    Metadata.Builder context = Metadata.newBuilder();
    for (Map.Entry<String, Struct> e : request.streamMetadata().entrySet()) {
      if (config.forwardingNamespaces().contains(e.getKey())) {
        context.putFilterMetadata(e.getKey(), e.getValue());
      }
    }
    msg.setMetadataContext(context);
    if (!firstMessageSent && config.sendProtocolConfig()) {
      msg.setProtocolConfig(
          ProtocolConfiguration.newBuilder()
              .setRequestBodyMode(toProto(config.requestBodyMode()))
              .setResponseBodyMode(toProto(config.responseBodyMode())));
    }
    firstMessageSent = true;
    direction.startCall(next);
    if (callDone) {
      return; // the stream already failed; its close is being handled
    }
    call.sendMessage(msg.build());
    stats.streamMsgsSent.increment();
  }

  private void openStream() {
    io.grpc.Metadata headers = new io.grpc.Metadata();
    Map<String, String> merged = new LinkedHashMap<>(config.grpcInitialMetadata());
    merged.putAll(request.routeGrpcInitialMetadata());
    merged.forEach((k, v) -> headers.put(Key.of(k, io.grpc.Metadata.ASCII_STRING_MARSHALLER), v));
    call = emulator.newCall();
    stats.streamsStarted.increment();
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onMessage(ProcessingResponse message) {
            sync.execute(() -> onProcessingResponse(message));
          }

          @Override
          public void onClose(Status status, io.grpc.Metadata trailers) {
            sync.execute(() -> onGrpcClose(status));
          }
        },
        headers);
    call.request(Integer.MAX_VALUE);
  }

  /**
   * Envoy's {@code closeStream} / {@code closeStreamMaybeGraceful}: reset (the server sees
   * CANCELLED), or half-close and reset after the remote close timeout when graceful.
   */
  private void closeStream(boolean maybeGraceful) {
    if (call == null || closedByEnvoy) {
      return;
    }
    closedByEnvoy = true;
    decoding.stopTimer();
    encoding.stopTimer();
    if (callDone) {
      return;
    }
    stats.streamsClosed.increment();
    if (maybeGraceful && config.gracefulClose()) {
      call.halfClose();
      remoteCloseTimer =
          sync.schedule(
              () -> {
                if (!callDone) {
                  call.cancel("ext_proc remote close timeout", null);
                }
              },
              config.remoteCloseTimeout().toNanos(),
              TimeUnit.NANOSECONDS,
              scheduler);
    } else {
      call.cancel("ext_proc stream reset by Envoy", null);
    }
  }

  private void onGrpcClose(Status status) {
    boolean ours = closedByEnvoy;
    callDone = true;
    if (remoteCloseTimer != null) {
      remoteCloseTimer.cancel();
    }
    if (ours) {
      return; // Envoy dropped the stream already; no callbacks reach the filter
    }
    if (status.isOk()) {
      // onGrpcClose: clean close = proceed without the processor
      if (processingComplete) {
        return;
      }
      processingComplete = true;
      stats.streamsClosed.increment();
      closedByEnvoy = true;
      clearAsyncState();
      return;
    }
    stats.streamsFailed.increment();
    if (processingComplete) {
      return;
    }
    if (config.failureModeAllow()) {
      processingComplete = true;
      closedByEnvoy = true;
      stats.streamsClosed.increment();
      stats.failureModeAllowed.increment();
      clearAsyncState();
      return;
    }
    processingComplete = true;
    closedByEnvoy = true;
    decoding.finishCall(CallbackState.IDLE);
    encoding.finishCall(CallbackState.IDLE);
    String message = status.getDescription() == null ? "" : status.getDescription();
    localReply(
        500,
        replaceWhitespace(
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
    closeStream(false);
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
    if (closedByEnvoy || finished || processingComplete || clientGone) {
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
          onRequestHeadersResponse(response.getRequestHeaders().getResponse());
        }
      }
      case REQUEST_BODY -> {
        applyDynamicMetadata(response);
        if (!isBodyState(decoding.state)) {
          spurious = "spurious message";
        } else {
          countReceived();
          onRequestBodyResponse(response.getRequestBody().getResponse());
        }
      }
      case RESPONSE_HEADERS -> {
        applyDynamicMetadata(response);
        if (encoding.state != CallbackState.HEADERS) {
          spurious = "spurious message";
        } else {
          countReceived();
          onResponseHeadersResponse(response.getResponseHeaders().getResponse());
        }
      }
      case RESPONSE_BODY -> {
        applyDynamicMetadata(response);
        if (!isBodyState(encoding.state)) {
          spurious = "spurious message";
        } else {
          countReceived();
          onResponseBodyResponse(response.getResponseBody().getResponse());
        }
      }
      case REQUEST_TRAILERS, RESPONSE_TRAILERS -> {
        // trailers are never sent by this emulator, so the state can never match
        applyDynamicMetadata(response);
        spurious = "spurious message";
      }
      case IMMEDIATE_RESPONSE -> {
        applyDynamicMetadata(response);
        countReceived();
        processingComplete = true;
        decoding.finishCall(CallbackState.IDLE);
        encoding.finishCall(CallbackState.IDLE);
        closeStream(true);
        stats.immediateResponsesSent.increment();
        sendImmediateResponse(response.getImmediateResponse());
      }
      default -> spurious = "unhandled message";
    }
    if (spurious != null) {
      stats.spuriousMsgsReceived.increment();
      if (config.failureModeAllow()) {
        stats.failureModeAllowed.increment();
        closeStream(false);
        processingComplete = true;
        clearAsyncState();
      } else {
        handleErrorResponse(spurious);
      }
      return;
    }
    if (config.closeStreamAfterLastResponse() && !processingComplete && !finished) {
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
        config.responseHeaderMode() == HeaderMode.SKIP
            && config.responseBodyMode() == BodyMode.NONE;
    boolean requestDone = forwarded;
    boolean responseDone =
        stage == ResponseStage.PASSTHROUGH
            || stage == ResponseStage.DONE
            || (stage == ResponseStage.STREAMING && upstreamEnded);
    if (requestDone && (responseNeedsNothing || responseDone)) {
      closeStream(true);
    }
  }

  private static boolean isBodyState(CallbackState state) {
    return state == CallbackState.BUFFERED_BODY || state == CallbackState.STREAMED_BODY;
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
  private void handleErrorResponse(String message) {
    processingComplete = true;
    decoding.finishCall(CallbackState.IDLE);
    encoding.finishCall(CallbackState.IDLE);
    closeStream(false);
    localReply(500, replaceWhitespace(message), null, new byte[0]);
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
      if (!forwarded) {
        if (forwardedBody.size() == 0 && decoding.chunkQueue.isEmpty()) {
          forwardedBody.writeBytes(requestBody);
        }
        forwardUpstream();
      }
    }
    if (responseWaiting) {
      bypassed = true;
      switch (stage) {
        case AWAIT_HEADERS_RESPONSE -> responseBodyStart();
        case AWAIT_BUFFERED_BODY_RESPONSE -> {
          sendDownstreamHeaders();
          flushHeldDownstream();
        }
        case STREAMING -> {
          boolean ended = false;
          while (!encoding.chunkQueue.isEmpty()) {
            Chunk c = encoding.chunkQueue.poll();
            emitDownstream(c.data());
            ended |= c.endOfStream();
          }
          if (ended) {
            finish(Outcome.UPSTREAM_RESPONSE);
          }
        }
        default -> {}
      }
    }
  }

  private void sendImmediateResponse(ImmediateResponse immediate) {
    int status = immediate.hasStatus() ? immediate.getStatus().getCodeValue() : 200;
    if (status < 200 || status >= 600) {
      status = 200;
    }
    localReply(
        status,
        replaceWhitespace(immediate.getDetails()),
        immediate.hasHeaders() ? immediate.getHeaders() : null,
        immediate.getBody().toByteArray());
  }

  private void applyDynamicMetadata(ProcessingResponse response) {
    if (!response.hasDynamicMetadata()) {
      return;
    }
    for (Map.Entry<String, Value> e : response.getDynamicMetadata().getFieldsMap().entrySet()) {
      if (!config.receivingNamespaces().contains(e.getKey()) || !e.getValue().hasStructValue()) {
        continue;
      }
      Struct existing =
          dynamicMetadata
              .getFieldsOrDefault(e.getKey(), Value.getDefaultInstance())
              .getStructValue();
      Struct merged = existing.toBuilder().mergeFrom(e.getValue().getStructValue()).build();
      dynamicMetadata.putFields(e.getKey(), Value.newBuilder().setStructValue(merged).build());
    }
  }

  // ---------------------------------------------------------------------------------------------
  // helpers

  private Optional<String> mutateHeaders(
      CommonResponse common, io.sluice.upstream.HttpHeaders headers, Direction direction) {
    if (!common.hasHeaderMutation()) {
      return Optional.empty();
    }
    return HeaderMutations.apply(
        common.getHeaderMutation(),
        headers,
        config.mutationRules(),
        stats,
        stripsContentLength(direction),
        common.getStatus() == CommonResponse.ResponseStatus.CONTINUE_AND_REPLACE);
  }

  /** Envoy removes content-length in STREAMED, and in BUFFERED when headers are skipped. */
  private boolean stripsContentLength(Direction direction) {
    BodyMode body = direction.request ? config.requestBodyMode() : config.responseBodyMode();
    HeaderMode header =
        direction.request ? config.requestHeaderMode() : config.responseHeaderMode();
    return body == BodyMode.STREAMED || (body == BodyMode.BUFFERED && header == HeaderMode.SKIP);
  }

  private Optional<String> validateContentLength(
      io.sluice.upstream.HttpHeaders headers, Direction direction, byte[] body) {
    if (stripsContentLength(direction)) {
      return Optional.empty();
    }
    Optional<String> cl = headers.first("content-length");
    if (cl.isPresent() && !cl.get().equals(Integer.toString(body.length))) {
      return Optional.of("mismatch between content length and the length of the mutated body");
    }
    return Optional.empty();
  }

  private static byte[] applyBodyMutation(BodyMutation mutation, byte[] original) {
    return switch (mutation.getMutationCase()) {
      case BODY -> mutation.getBody().toByteArray();
      case CLEAR_BODY -> mutation.getClearBody() ? new byte[0] : original;
      default -> original;
    };
  }

  private static HeaderMap toHeaderMap(io.sluice.upstream.HttpHeaders headers) {
    HeaderMap.Builder map = HeaderMap.newBuilder();
    for (Map.Entry<String, String> e : headers.entries()) {
      map.addHeaders(
          HeaderValue.newBuilder()
              .setKey(e.getKey())
              .setRawValue(ByteString.copyFrom(e.getValue(), StandardCharsets.UTF_8)));
    }
    return map.build();
  }

  private static Struct toStruct(Map<String, Object> values) {
    Struct.Builder struct = Struct.newBuilder();
    values.forEach((k, v) -> struct.putFields(k, toValue(v)));
    return struct.build();
  }

  private static Value toValue(Object v) {
    if (v instanceof Value value) {
      return value;
    }
    if (v instanceof Boolean b) {
      return Value.newBuilder().setBoolValue(b).build();
    }
    if (v instanceof Number n) {
      return Value.newBuilder().setNumberValue(n.doubleValue()).build();
    }
    return Value.newBuilder().setStringValue(String.valueOf(v)).build();
  }

  private static ProcessingMode.BodySendMode toProto(BodyMode mode) {
    return switch (mode) {
      case NONE -> ProcessingMode.BodySendMode.NONE;
      case STREAMED -> ProcessingMode.BodySendMode.STREAMED;
      case BUFFERED -> ProcessingMode.BodySendMode.BUFFERED;
    };
  }

  private static byte[] concat(List<byte[]> chunks) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] c : chunks) {
      out.writeBytes(c);
    }
    return out.toByteArray();
  }

  static String replaceWhitespace(String s) {
    return s.replaceAll("\\s", "_");
  }
}
