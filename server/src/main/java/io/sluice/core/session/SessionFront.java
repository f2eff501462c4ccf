package io.sluice.core.session;

import io.sluice.core.admission.Reason;

/**
 * What an {@link AdmissionSession} tells its front end to answer on the front end's protocol (an
 * ext_proc answer, a permit API's reply). Called in the front end's serial context.
 */
public interface SessionFront {
  /** The request runs: answer the deciding message (request headers, or the body). */
  void admitted(boolean atBody);

  /**
   * The checks at the headers passed and the request is decided with its body: answer the request
   * headers (continue), then hand the body to {@link AdmissionSession#decideWithBody}.
   */
  void bodyWanted();

  /** The request waits: answer with a hold of {@code holdMillis}; the answer follows. */
  void held(long holdMillis);

  /** The request is refused: answer with this status, reason and Retry-After. */
  void refused(Reason reason, int status, long retryAfterSeconds, String message);

  /**
   * A check answered the request itself ({@link AdmissionCheck.Answered}): send its status, headers
   * and body. A front end that cannot send a body answers its status and reason.
   */
  default void answered(AdmissionCheck.Answered a) {
    refused(a.reason(), a.status(), 0, a.reason().code());
  }

  /**
   * A quota store's answer failed outright: end the exchange non-OK (then {@link
   * AdmissionSession#end}).
   */
  void storeFailed(Throwable cause);
}
