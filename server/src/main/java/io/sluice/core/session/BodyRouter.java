package io.sluice.core.session;

import io.sluice.core.admission.Reason;

/**
 * Chooses the pool of a request from its body, for the routes it claims (MCP's {@code tools/call}:
 * each tool its own pool). The front end opens the session of such a request at its body, with the
 * {@link Subject} the router answers, so that everything the pool does (its cap, queue, replica
 * share, tenant caps, meters) is the chosen pool's. One per snapshot, shared by its requests.
 */
public interface BodyRouter {
  /** Routes nothing: every session opens at the request headers. */
  BodyRouter NONE =
      new BodyRouter() {
        @Override
        public boolean routes(String route) {
          return false;
        }

        @Override
        public Route route(Subject atHeaders, byte[] body, int offset, int length) {
          return Route.AS_RESOLVED;
        }
      };

  /** Whether the requests of this route (its name) are routed by their body. */
  boolean routes(String route);

  /**
   * Where the body (read in place, never kept) sends the request resolved at its headers as {@code
   * atHeaders}.
   */
  Route route(Subject atHeaders, byte[] body, int offset, int length);

  /** A router's answer. */
  sealed interface Route permits Route.AsResolved, Route.InPool, Route.Answer {
    /** Decided as resolved at the headers, refused with the front end's own body. */
    AsResolved AS_RESOLVED = new AsResolved();

    /** Decided as resolved at the headers. */
    final class AsResolved implements Route {
      private AsResolved() {}
    }

    /**
     * Decided as {@code subject} (its pool, class, deadline); a refusal is answered with the body
     * {@code refusals} writes.
     */
    record InPool(Subject subject, Refusals refusals) implements Route {}

    /** Answered at once (a body the router refuses), nothing decided. */
    record Answer(AdmissionCheck.Answered answer) implements Route {}
  }

  /** Writes the answer to a refused request in the protocol its client speaks. */
  @FunctionalInterface
  interface Refusals {
    AdmissionCheck.Answered refusal(
        Reason reason, int status, long retryAfterSeconds, String message);
  }
}
