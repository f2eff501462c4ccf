package io.sluice.emulator;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpTrailers;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.sluice.emulator.FilterConfig.BodyMode;
import io.sluice.emulator.FilterConfig.HeaderMode;
import io.sluice.emulator.HttpRequest.Phase;
import io.sluice.emulator.HttpResult.Outcome;
import io.sluice.emulator.ProcessorState.CallbackState;
import io.sluice.emulator.ProcessorState.Chunk;
import io.sluice.upstream.ResponseBody;
import io.sluice.upstream.UpstreamResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The response direction of one exchange: the upstream's headers and body through ext_proc (held,
 * buffered, streamed or passed through) on their way downstream. Runs in the exchange's
 * synchronization context.
 */
final class ResponsePath {

  /** Where the response is on its way downstream. */
  enum Stage {
    NOT_STARTED,
    AWAIT_HEADERS_RESPONSE,
    PASSTHROUGH,
    BUFFERING,
    AWAIT_BUFFERED_BODY_RESPONSE,
    STREAMING,
    AWAIT_TRAILERS_RESPONSE,
    DONE
  }

  private final Exchange x;
  private final FilterConfig config;
  private final ProcessorState encoding;
  private final Downstream downstream;

  private @Nullable UpstreamResponse upstreamResponse;
  private io.sluice.upstream.HttpHeaders responseHeaders = new io.sluice.upstream.HttpHeaders();
  // the upstream's trailers after its body (a gRPC status), null when none follow
  private io.sluice.upstream.@Nullable HttpHeaders trailers;
  private Runnable cancelUpstreamBody = () -> {};
  Stage stage = Stage.NOT_STARTED;
  private final List<byte[]> heldChunks = new ArrayList<>();
  boolean upstreamEnded;
  // the response as Envoy's AI protocol manager reads it (FilterConfig.aiFilters)
  private final java.io.ByteArrayOutputStream aiSeen = new java.io.ByteArrayOutputStream();

  ResponsePath(Exchange x, FilterConfig config, Downstream downstream) {
    this.x = x;
    this.config = config;
    this.encoding = x.encoding;
    this.downstream = downstream;
  }

  /** The upstream body is not wanted any more: its subscription is cancelled. */
  void cancelUpstreamBody() {
    cancelUpstreamBody.run();
  }

  /** A local reply's headers take the place of the upstream's. */
  void replaceHeaders(io.sluice.upstream.HttpHeaders headers) {
    responseHeaders = headers;
  }

  void onUpstreamResponse(UpstreamResponse response) {
    if (x.finished) {
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
    trailers = response.body().trailers().orElse(null);
    if (upstreamEnded) {
      x.requestPath.stopResponseTimer();
    } else {
      ResponseBody body = response.body();
      cancelUpstreamBody =
          body.subscribe((data, eos) -> x.sync.execute(() -> onUpstreamData(data, eos)));
    }
    headersPhase();
  }

  /** The upstream's response (set when it answered, before any phase reads it). */
  private UpstreamResponse response() {
    return Objects.requireNonNull(upstreamResponse, "upstreamResponse");
  }

  private void headersPhase() {
    if (x.wants(config.processingMode().responseHeaderMode() == HeaderMode.SEND)) {
      stage = Stage.AWAIT_HEADERS_RESPONSE;
      ProcessingRequest.Builder msg = ProcessingRequest.newBuilder();
      msg.setResponseHeaders(
          HttpHeaders.newBuilder()
              .setHeaders(ExtProcMessages.toHeaderMap(responseHeaders))
              .setEndOfStream(response().body().isEmpty()));
      x.send(encoding, msg, CallbackState.HEADERS);
      x.cancelIfAt(Phase.RESPONSE_HEADERS_SENT);
      return;
    }
    bodyStart();
  }

  void onHeadersResponse(CommonResponse common) {
    Optional<String> error = encoding.mutateHeaders(common, responseHeaders);
    if (error.isPresent()) {
      x.handleErrorResponse(error.get());
      return;
    }
    encoding.finishCall(CallbackState.IDLE);
    if (common.getStatus() == CommonResponse.ResponseStatus.CONTINUE_AND_REPLACE) {
      byte[] body = new byte[0];
      if (common.hasBodyMutation()) {
        responseHeaders.remove("content-length");
        body =
            ExtProcMessages.applyBodyMutation(
                common.getBodyMutation(), ExtProcMessages.concat(heldChunks));
      }
      heldChunks.clear();
      cancelUpstreamBody.run();
      sendDownstreamHeaders();
      downstream.emit(body);
      x.finish(Outcome.UPSTREAM_RESPONSE);
      return;
    }
    bodyStart();
  }

  /** The response headers are released (or about to be buffered with the body). */
  void bodyStart() {
    BodyMode mode = config.processingMode().responseBodyMode();
    boolean process = !response().body().isEmpty() && x.wants(mode != BodyMode.NONE);
    if (!process) {
      sendDownstreamHeaders();
      stage = Stage.PASSTHROUGH;
      flushHeldDownstream();
      return;
    }
    if (mode == BodyMode.BUFFERED) {
      stage = Stage.BUFFERING;
      if (upstreamEnded) {
        sendBufferedBody();
      }
      return;
    }
    // STREAMED: headers go downstream now, content-length removed
    if (encoding.stripsContentLength()) {
      responseHeaders.remove("content-length");
    }
    sendDownstreamHeaders();
    stage = Stage.STREAMING;
    if (!heldChunks.isEmpty()) {
      byte[] coalesced = ExtProcMessages.concat(heldChunks);
      heldChunks.clear();
      sendChunk(coalesced, upstreamEnded);
    }
  }

  private void onUpstreamData(byte[] data, boolean endOfStream) {
    if (x.finished) {
      return;
    }
    upstreamEnded |= endOfStream;
    if (endOfStream) {
      x.requestPath.stopResponseTimer();
    }
    if (config.aiFilters()) {
      aiSeen.write(data, 0, data.length);
    }
    switch (stage) {
      case NOT_STARTED, AWAIT_HEADERS_RESPONSE -> heldChunks.add(data);
      case PASSTHROUGH -> {
        downstream.emit(data);
        if (endOfStream) {
          bodyDone();
        }
      }
      case BUFFERING -> {
        heldChunks.add(data);
        if (endOfStream) {
          if (x.active()) {
            sendBufferedBody();
          } else {
            x.bypassed = true;
            sendDownstreamHeaders();
            flushHeldDownstream();
          }
        }
      }
      case STREAMING -> {
        if (x.processingComplete) {
          downstream.emit(data);
          if (endOfStream) {
            bodyDone();
          }
        } else {
          sendChunk(data, endOfStream);
        }
      }
      default -> {}
    }
  }

  /**
   * The AI protocol manager, upstream of this filter on the encode path, publishes the token usage
   * of a 2xx response at its clean end, before the last body message is built.
   */
  private void publishTokenUsage() {
    if (config.aiFilters() && response().status() / 100 == 2) {
      AiFilters.tokenUsage(aiSeen.toByteArray()).ifPresent(x::publish);
    }
  }

  private void sendBufferedBody() {
    publishTokenUsage();
    stage = Stage.AWAIT_BUFFERED_BODY_RESPONSE;
    byte[] body = ExtProcMessages.concat(heldChunks);
    heldChunks.clear();
    heldChunks.add(body);
    ProcessingRequest.Builder msg = ProcessingRequest.newBuilder();
    msg.setResponseBody( // trailers that follow end the stream instead
        HttpBody.newBuilder().setBody(ByteString.copyFrom(body)).setEndOfStream(trailers == null));
    x.send(encoding, msg, CallbackState.BUFFERED_BODY);
  }

  private void sendChunk(byte[] data, boolean endOfStream) {
    if (endOfStream) {
      publishTokenUsage();
    }
    encoding.chunkQueue.add(new Chunk(data, endOfStream));
    ProcessingRequest.Builder msg = ProcessingRequest.newBuilder();
    msg.setResponseBody(
        HttpBody.newBuilder()
            .setBody(ByteString.copyFrom(data))
            .setEndOfStream(endOfStream && trailers == null));
    x.send(encoding, msg, CallbackState.STREAMED_BODY);
  }

  void onBodyResponse(CommonResponse common) {
    if (encoding.state == CallbackState.BUFFERED_BODY) {
      if (common.hasHeaderMutation()) {
        Optional<String> error = encoding.mutateHeaders(common, responseHeaders);
        if (error.isPresent()) {
          x.handleErrorResponse(error.get());
          return;
        }
      }
      byte[] body = ExtProcMessages.concat(heldChunks);
      if (common.hasBodyMutation()) {
        byte[] mutated = ExtProcMessages.applyBodyMutation(common.getBodyMutation(), body);
        Optional<String> error = encoding.validateContentLength(responseHeaders, mutated);
        if (error.isPresent()) {
          x.handleErrorResponse(error.get());
          return;
        }
        body = mutated;
      }
      heldChunks.clear();
      encoding.finishCall(CallbackState.IDLE);
      sendDownstreamHeaders();
      downstream.emit(body);
      bodyDone();
      return;
    }
    Chunk chunk = encoding.chunkQueue.poll();
    byte[] data = chunk.data();
    if (common.hasBodyMutation()) {
      data = ExtProcMessages.applyBodyMutation(common.getBodyMutation(), data);
    }
    encoding.finishCall(
        encoding.chunkQueue.isEmpty() ? CallbackState.IDLE : CallbackState.STREAMED_BODY);
    downstream.emit(data);
    if (chunk.endOfStream()) {
      bodyDone();
    }
  }

  /**
   * The whole body went downstream: its trailers, if any, go to the processor ({@code
   * response_trailer_mode: SEND}, held until it answers) or straight downstream; then the end.
   */
  private void bodyDone() {
    if (trailers == null) {
      x.finish(Outcome.UPSTREAM_RESPONSE);
      return;
    }
    if (x.wants(config.processingMode().responseTrailerMode() == HeaderMode.SEND)) {
      stage = Stage.AWAIT_TRAILERS_RESPONSE;
      ProcessingRequest.Builder msg = ProcessingRequest.newBuilder();
      msg.setResponseTrailers(
          HttpTrailers.newBuilder().setTrailers(ExtProcMessages.toHeaderMap(trailers)));
      x.send(encoding, msg, CallbackState.TRAILERS);
      return;
    }
    sendTrailersDownstream();
  }

  /** Whether trailers are still to go to the processor (the stream must stay open for them). */
  boolean trailersOwed() {
    return trailers != null
        && stage != Stage.DONE
        && config.processingMode().responseTrailerMode() == HeaderMode.SEND
        && !x.processingComplete;
  }

  /** The processor's {@code TrailersResponse}: its mutation applied, the trailers go downstream. */
  void onTrailersResponse(io.envoyproxy.envoy.service.ext_proc.v3.TrailersResponse response) {
    if (response.hasHeaderMutation()) {
      Optional<String> error =
          encoding.mutateTrailers(
              response.getHeaderMutation(), Objects.requireNonNull(trailers, "trailers"));
      if (error.isPresent()) {
        x.handleErrorResponse(error.get());
        return;
      }
    }
    encoding.finishCall(CallbackState.IDLE);
    sendTrailersDownstream();
  }

  private void sendTrailersDownstream() {
    downstream.trailers(Objects.requireNonNull(trailers, "trailers"));
    x.finish(Outcome.UPSTREAM_RESPONSE);
  }

  /**
   * ext_proc is gone while the response waited for it ({@code clearAsyncState}): the response goes
   * on unprocessed, with what it has.
   */
  void continueUnprocessed() {
    switch (stage) {
      case AWAIT_HEADERS_RESPONSE -> bodyStart();
      case AWAIT_BUFFERED_BODY_RESPONSE -> {
        sendDownstreamHeaders();
        flushHeldDownstream();
      }
      case STREAMING -> {
        boolean ended = false;
        while (!encoding.chunkQueue.isEmpty()) {
          Chunk c = encoding.chunkQueue.poll();
          downstream.emit(c.data());
          ended |= c.endOfStream();
        }
        if (ended) {
          bodyDone();
        }
      }
      case AWAIT_TRAILERS_RESPONSE -> sendTrailersDownstream();
      default -> {}
    }
  }

  private void flushHeldDownstream() {
    for (byte[] c : heldChunks) {
      downstream.emit(c);
    }
    heldChunks.clear();
    if (upstreamEnded) {
      bodyDone();
    }
  }

  void sendDownstreamHeaders() {
    if (downstream.sendHeaders(responseHeaders)) {
      x.cancelIfAt(Phase.RESPONSE_HEADERS_DOWNSTREAM);
    }
  }
}
