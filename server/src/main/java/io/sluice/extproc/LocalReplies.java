package io.sluice.extproc;

import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest.RequestCase;
import io.sluice.observability.AdmissionMetrics;
import org.jspecify.annotations.Nullable;

/**
 * A local reply's stream: a filter before ext_proc answered (jwt_authn's 401, the rate-limit
 * filter's 429), and Envoy opens the stream at its response. There is no request to decide, and an
 * error here would turn its answer into a 500: each response message is continued.
 */
final class LocalReplies {
  private LocalReplies() {}

  /** The answer to the reply's headers (its status class counted). */
  static Answer headers(AdmissionMetrics metrics, Inbound h) {
    int status = (int) EnvoyRequest.parseLong(h.header(":status"), 0);
    metrics.localReplyPassed(status >= 200 && status < 600 ? (status / 100) + "xx" : "other");
    return Responses.CONTINUE_RESPONSE_HEADERS;
  }

  /** The answer to a later message of the reply, or null: out of phase. */
  static @Nullable Answer next(RequestCase c) {
    return switch (c) {
      case RESPONSE_BODY -> Responses.CONTINUE_RESPONSE_BODY;
      case RESPONSE_TRAILERS -> Responses.CONTINUE_RESPONSE_TRAILERS;
      default -> null;
    };
  }
}
