package io.sluice.emulator;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.grpc.SynchronizationContext.ScheduledHandle;
import io.sluice.emulator.FilterConfig.BodyMode;
import io.sluice.emulator.FilterConfig.HeaderMode;
import io.sluice.emulator.HttpRequest.Phase;
import io.sluice.emulator.ProcessorState.CallbackState;
import io.sluice.emulator.ProcessorState.Chunk;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The request direction of one exchange: the request headers and body through ext_proc, then the
 * router (route, global timeout) and the call to the upstream. Runs in the exchange's
 * synchronization context.
 */
final class RequestPath {
  private final Exchange x;
  private final FilterConfig config;
  private final HttpRequest request;
  private final ProcessorState decoding;

  final io.sluice.upstream.HttpHeaders requestHeaders;
  private final ByteArrayOutputStream forwardedBody = new ByteArrayOutputStream();
  private byte[] requestBody;
  private boolean requestHeadersHeld;
  private boolean forwarded;
  private @Nullable UpstreamRequest upstreamRequest;

  final RouterFilter router;
  private @Nullable ScheduledHandle responseTimer;
  private @Nullable CompletableFuture<UpstreamResponse> upstreamFuture;

  RequestPath(Exchange x, EnvoyExtProcEmulator emulator, HttpRequest request) {
    this.x = x;
    this.config = emulator.config();
    this.request = request;
    this.decoding = x.decoding;
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
    this.router = new RouterFilter(config, emulator.stats(), emulator.routes(), requestHeaders);
  }

  /** True once the request went (or was meant to go) to the router. */
  boolean forwarded() {
    return forwarded;
  }

  Optional<UpstreamRequest> upstreamRequest() {
    return Optional.ofNullable(upstreamRequest);
  }

  void headersPhase() {
    if (x.wants(config.processingMode().requestHeaderMode() == HeaderMode.SEND)) {
      requestHeadersHeld = true;
      ProcessingRequest.Builder msg = ProcessingRequest.newBuilder();
      msg.setRequestHeaders(
          HttpHeaders.newBuilder()
              .setHeaders(ExtProcMessages.toHeaderMap(requestHeaders))
              .setEndOfStream(requestBody.length == 0));
      x.send(decoding, msg, CallbackState.HEADERS);
      x.cancelIfAt(Phase.REQUEST_HEADERS_SENT);
      return;
    }
    bodyPhase();
  }

  void onHeadersResponse(CommonResponse common) {
    Optional<String> error = decoding.mutateHeaders(common, requestHeaders);
    if (error.isPresent()) {
      x.handleErrorResponse(error.get());
      return;
    }
    router.clearRouteCache(common);
    if (common.getStatus() == CommonResponse.ResponseStatus.CONTINUE_AND_REPLACE) {
      decoding.finishCall(CallbackState.IDLE);
      if (common.hasBodyMutation()) {
        requestHeaders.remove("content-length");
        requestBody = ExtProcMessages.applyBodyMutation(common.getBodyMutation(), requestBody);
      }
      forwardedBody.writeBytes(requestBody);
      forwardUpstream();
      return;
    }
    decoding.finishCall(CallbackState.IDLE);
    bodyPhase();
  }

  private void bodyPhase() {
    BodyMode mode = config.processingMode().requestBodyMode();
    if (requestBody.length == 0 || !x.wants(mode != BodyMode.NONE)) {
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
      x.send(decoding, msg, CallbackState.BUFFERED_BODY);
    } else {
      List<byte[]> chunks = request.bodyChunks();
      for (int i = 0; i < chunks.size(); i++) {
        boolean eos = i == chunks.size() - 1;
        decoding.chunkQueue.add(new Chunk(chunks.get(i), eos));
        ProcessingRequest.Builder msg = ProcessingRequest.newBuilder();
        msg.setRequestBody(
            HttpBody.newBuilder().setBody(ByteString.copyFrom(chunks.get(i))).setEndOfStream(eos));
        x.send(decoding, msg, CallbackState.STREAMED_BODY);
        if (x.finished || x.processingComplete) {
          return;
        }
      }
    }
    x.cancelIfAt(Phase.REQUEST_BODY_SENT);
  }

  void onBodyResponse(CommonResponse common) {
    if (decoding.state == CallbackState.BUFFERED_BODY) {
      if (common.hasHeaderMutation()) {
        Optional<String> error = decoding.mutateHeaders(common, requestHeaders);
        if (error.isPresent()) {
          x.handleErrorResponse(error.get());
          return;
        }
      }
      if (common.hasBodyMutation()) {
        byte[] mutated = ExtProcMessages.applyBodyMutation(common.getBodyMutation(), requestBody);
        Optional<String> error = decoding.validateContentLength(requestHeaders, mutated);
        if (error.isPresent()) {
          x.handleErrorResponse(error.get());
          return;
        }
        requestBody = mutated;
      }
      decoding.finishCall(CallbackState.IDLE);
      router.clearRouteCache(common);
      forwardedBody.writeBytes(requestBody);
      forwardUpstream();
      return;
    }
    // STREAMED: header_mutation is ignored, the body mutation applies to the dequeued chunk only
    Chunk chunk = decoding.chunkQueue.poll();
    byte[] data = chunk.data();
    if (common.hasBodyMutation()) {
      data = ExtProcMessages.applyBodyMutation(common.getBodyMutation(), data);
    }
    forwardedBody.writeBytes(data);
    decoding.finishCall(
        decoding.chunkQueue.isEmpty() ? CallbackState.IDLE : CallbackState.STREAMED_BODY);
    router.clearRouteCache(common); // counted as in Envoy; the router holds its route already
    if (chunk.endOfStream()) {
      forwardUpstream();
    }
  }

  /**
   * The router's {@code Filter::decodeHeaders}, once, when ext_proc releases the request headers
   * ({@link RouterFilter#decodeHeaders}): no route ⇒ 404 local reply {@code route_not_found}, empty
   * body. False if it answered.
   */
  private boolean routerDecodeHeaders() {
    if (router.decoded()) {
      return router.route() != null;
    }
    if (!router.decodeHeaders()) {
      x.localReply(404, RouterFilter.ROUTE_NOT_FOUND_DETAILS, null, new byte[0]);
      return false;
    }
    return true;
  }

  /**
   * Envoy's {@code Filter::onResponseTimeout} → {@code onUpstreamTimeoutAbort} → {@code
   * onUpstreamAbort} ({@code source/common/router/router.cc}): the upstream request is reset and
   * {@code sendLocalReply(504, "upstream request timeout")} with details {@code
   * upstream_response_timeout}. The filter manager sends that through the filter chain if no
   * response headers exist yet, straight to the codec if an encoder filter (ext_proc) still holds
   * them, and resets the stream if they went downstream ({@code FilterManager::sendLocalReply}):
   * {@link Exchange#localReply} does the same (local replies never reach the ext_proc server,
   * 1.34+).
   */
  private void onResponseTimeout() {
    responseTimer = null;
    if (x.finished || x.clientGone) {
      return;
    }
    if (upstreamFuture != null) {
      upstreamFuture.cancel(false);
    }
    byte[] body =
        router.timeoutResponseStatus() == 504
            ? "upstream request timeout".getBytes(StandardCharsets.UTF_8)
            : new byte[0];
    x.localReply(router.timeoutResponseStatus(), RouterFilter.RESPONSE_TIMEOUT_DETAILS, null, body);
  }

  /** {@code Filter::onUpstreamComplete} → {@code cleanup}: the global timeout is over. */
  void stopResponseTimer() {
    if (responseTimer != null) {
      responseTimer.cancel();
      responseTimer = null;
    }
  }

  /**
   * ext_proc is gone while the request waited for it ({@code clearAsyncState}): the request goes on
   * unprocessed, with what was answered so far plus what never was.
   */
  void continueUnprocessed() {
    if (!forwarded) {
      if (forwardedBody.size() == 0 && decoding.chunkQueue.isEmpty()) {
        forwardedBody.writeBytes(requestBody);
      }
      forwardUpstream();
    }
  }

  void forwardUpstream() {
    if (forwarded || x.finished) {
      return;
    }
    forwarded = true;
    // drain what ext_proc never answered (fail-open / clean close while chunks were in flight)
    while (!decoding.chunkQueue.isEmpty()) {
      forwardedBody.writeBytes(decoding.chunkQueue.poll().data());
    }
    if (requestHeadersHeld && decoding.stripsContentLength()) {
      requestHeaders.remove("content-length");
    }
    if (!routerDecodeHeaders()) {
      return;
    }
    upstreamRequest = new UpstreamRequest(requestHeaders, forwardedBody.toByteArray());
    x.cancelIfAt(Phase.UPSTREAM_REQUEST_SENT);
    if (router.timeoutMillis() > 0) {
      // Filter::onRequestComplete: the whole request goes upstream now; the global timeout runs
      // until the upstream response is complete (armed before the upstream is called, so it is in
      // place once the upstream has seen the request)
      responseTimer =
          x.sync.schedule(
              this::onResponseTimeout, router.timeoutMillis(), TimeUnit.MILLISECONDS, x.scheduler);
    }
    CompletableFuture<UpstreamResponse> future;
    try {
      future = Objects.requireNonNull(router.route(), "route").upstream().send(upstreamRequest);
    } catch (RuntimeException e) {
      future = CompletableFuture.failedFuture(e);
    }
    upstreamFuture = future;
    future.whenComplete(
        (response, error) ->
            x.sync.execute(
                () -> {
                  if (error != null) {
                    x.localReply(
                        503,
                        "upstream_reset_before_response_started{" + error + "}",
                        null,
                        new byte[0]);
                  } else {
                    x.responsePath.onUpstreamResponse(response);
                  }
                }));
  }
}
