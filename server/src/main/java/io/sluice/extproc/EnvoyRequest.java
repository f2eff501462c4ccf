package io.sluice.extproc;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.Outcome;
import org.jspecify.annotations.Nullable;

/**
 * What the stream knows of the HTTP request as Envoy presents it: the body send modes from {@code
 * protocol_config}, whether the caller is a proxyless gRPC client or a gRPC request through Envoy,
 * and which response messages arrived. It answers the protocol questions the stream asks: decide at
 * headers or at the body, does the exchange end at response headers, did a reset end a complete
 * response. Its stream's phase ({@link PhaseTracker}) is its superclass: one object per stream.
 */
final class EnvoyRequest extends PhaseTracker {
  private @Nullable BodySendMode requestBodyMode; // null: no protocol_config (Envoy < 1.34)
  private @Nullable BodySendMode responseBodyMode;
  // A client-side gRPC filter (grpc-java's xDS ext_proc, gRFC A93) sends no pseudo-headers: the
  // call ends at response trailers or the stream's close, not at response headers.
  private boolean proxyless;
  private boolean grpc; // refusals carry grpc_status
  private boolean responseHeadersSeen;
  private boolean responseBodySeen;
  private long streamedBytes; // request body bytes seen in STREAMED chunks
  private boolean streamedRefused;

  EnvoyRequest(long openedNanos) { // limits.maxBodyBytes is the config's: read where it is used
    super(openedNanos);
  }

  /** Reads the request headers message: its body modes and the kind of caller. */
  void onRequestHeaders(Inbound req, EnvoySignals signals) {
    if (req.hasProtocolConfig()) {
      requestBodyMode = req.requestBodyMode();
      responseBodyMode = req.responseBodyMode();
    }
    proxyless = signals.method() == null && signals.header(":path") == null;
    String contentType = signals.contentType();
    grpc = proxyless || (contentType != null && grpcContentType(contentType));
  }

  /**
   * Whether a content type begins with {@code application/grpc} in any case, as {@code
   * regionMatches(true, 0, "application/grpc", 0, 16)} answers. Most are {@code application/json}:
   * an ASCII character at 12 other than {@code g} or {@code G} answers no at once (no case of it is
   * {@code g}); the rest are compared as before (a non-ASCII character may fold to an ASCII one).
   */
  static boolean grpcContentType(String contentType) {
    if (contentType.length() < 16) {
      return false;
    }
    char c = contentType.charAt(12);
    if (c < 0x80 && (c | 0x20) != 'g') {
      return false;
    }
    return contentType.regionMatches(true, 0, "application/grpc", 0, 16);
  }

  /**
   * A body mode Sluice cannot serve (e.g. grpc-java's GRPC: the client forwards a message only once
   * the server sends it back as a body mutation, which Sluice does not do).
   */
  boolean unsupportedBodyMode() {
    return requestBodyMode == BodySendMode.UNRECOGNIZED
        || responseBodyMode == BodySendMode.UNRECOGNIZED;
  }

  /**
   * Decide at request headers: no body, a headers-estimated route, or a body Envoy won't buffer.
   */
  boolean decidesAtHeaders(boolean noBody, SluiceConfig.EstimateFrom estimateFrom) {
    return noBody
        || estimateFrom == SluiceConfig.EstimateFrom.HEADERS
        || (requestBodyMode != null
            && requestBodyMode != BodySendMode.BUFFERED
            && requestBodyMode != BodySendMode.BUFFERED_PARTIAL);
  }

  boolean streamedBody() {
    return requestBodyMode == BodySendMode.STREAMED;
  }

  /**
   * The 413 message when a body of {@code bytes} ({@code what}) exceeds {@code limits.maxBodyBytes}
   * (the config's, not kept per stream), else null.
   */
  static @Nullable String overLimit(long bytes, SluiceConfig.Limits limits, String what) {
    long max = limits.maxBodyBytes();
    return bytes <= max ? null : what + " of " + bytes + " bytes exceeds the limit of " + max;
  }

  /** Adds a streamed chunk: the 413 message once the chunks' sum exceeds the limit, else null. */
  @Nullable String streamedOverLimit(int bytes, SluiceConfig.Limits limits) {
    streamedBytes += bytes;
    String m = overLimit(streamedBytes, limits, "streamed request body");
    streamedRefused = m != null;
    return m;
  }

  /** The streamed body was refused: chunks Envoy pipelined before the 413 need no answer. */
  boolean wasStreamedRefused() {
    return streamedRefused;
  }

  boolean grpc() {
    return grpc;
  }

  boolean proxyless() {
    return proxyless;
  }

  /** Response headers arrived; true when they end the exchange (end of stream: no body). */
  boolean onResponseHeaders(boolean endOfStream) {
    responseHeadersSeen = true;
    return endOfStream;
  }

  /** The {@code cause} of {@code sluice_response_end_unseen_total}: protocol_config said NONE. */
  static final String BODY_MODE_NONE = "body_mode_none";

  /**
   * After response headers that do not end the response: why its end will not be seen, or null.
   * With {@code response_body_mode: NONE} (from {@code protocol_config}) Envoy sends no body
   * message; Envoy 1.37+ closes the stream right after the response headers are answered (at a
   * streamed answer's first token), earlier ones at the request's end, and response trailers come
   * only with {@code response_trailer_mode: SEND} and a response that has them: Sluice cannot tell
   * these apart, so the end counts as unseen ({@link #BODY_MODE_NONE}) and the permit is held for
   * its predicted tail (trailers, if they come, end it). Without {@code protocol_config} (Envoy
   * before 1.34) the stream lives to the request's end: its reset is the end ({@link #onEnd}). A
   * proxyless client's call ends at response trailers or at the client's close, both seen.
   */
  @Nullable String unseenEnd() {
    return responseBodyMode == BodySendMode.NONE && !proxyless ? BODY_MODE_NONE : null;
  }

  void onResponseBody() {
    responseBodySeen = true;
  }

  boolean responseHeadersSeen() {
    return responseHeadersSeen;
  }

  /**
   * How a reset ends the permit. Without protocol_config (Envoy < 1.34) the response body mode is
   * unknown: a reset after response headers with no body message means body mode NONE (the response
   * went through; such an Envoy keeps the stream to the request's end, so the reset is the end,
   * seen); a reset after some body chunks means the client left mid-stream.
   */
  Outcome onEnd(Outcome outcome) {
    boolean completed =
        outcome == Outcome.CANCELLED
            && responseHeadersSeen
            && responseBodyMode == null
            && !responseBodySeen;
    return completed ? Outcome.COMPLETED : outcome;
  }

  /** A header's number ({@code content-length}, {@code :status}), or {@code def}. */
  static long parseLong(@Nullable String s, long def) {
    if (s == null) {
      return def;
    }
    try {
      return Long.parseLong(s.trim().toLowerCase(java.util.Locale.ROOT));
    } catch (NumberFormatException e) {
      return def;
    }
  }
}
