package io.sluice.extproc;

import io.sluice.config.SluiceConfig;

/**
 * Where an ext_proc stream is in Envoy's exchange, and what that means for the silence bounds and
 * the undecided-stream metric. The phase is the protocol's, not the admission's: the session knows
 * whether the request is queued or holds a permit.
 */
enum StreamPhase {
  /** Nothing decided yet: before request headers, or waiting for the tenant's request token. */
  START,
  /** Request headers answered CONTINUE; the buffered body decides. */
  AWAIT_BODY,
  /** The deciding message is held (override_message_timeout); the answer follows. */
  QUEUED,
  /** Admitted: response messages flow until the permit is released. */
  ADMITTED,
  /** Refused, released, or ended. */
  DONE;

  /** The {@code phase} tag of {@code sluice_extproc_streams_undecided_total}. */
  String undecidedTag(boolean headersSeen) {
    return switch (this) {
      case START -> headersSeen ? "request_headers" : "first_message";
      case AWAIT_BODY -> "request_body";
      case QUEUED -> "queued";
      default -> "decided"; // not reached: decided streams are not counted
    };
  }

  /**
   * The silence bound in this phase (0: none). Before the first message {@code
   * firstMessageTimeout}; waiting for the client before a decision (the body) or after a refusal
   * {@code idleTimeout}; after admission {@code admittedIdleTimeout} (Envoy is waiting for the
   * upstream: an LLM's response headers can take minutes). Nothing is bounded while Sluice itself
   * holds the message (queued, or waiting for the quota store): those have their own deadlines.
   *
   * @param headersSeen request headers arrived (in START: the quota store has the request)
   * @param outstanding a message is not answered yet
   * @param permit a permit was granted
   */
  long idleBoundNanos(
      boolean headersSeen, boolean outstanding, boolean permit, SluiceConfig.Streams l) {
    if (this == START) {
      return headersSeen ? 0 : l.firstMessageTimeout().toNanos();
    }
    if (this == QUEUED || outstanding) {
      return 0;
    }
    if (this == AWAIT_BODY || (this == DONE && !permit)) {
      return l.idleTimeout().toNanos();
    }
    return l.admittedIdleTimeout().toNanos();
  }

  /** The {@code cause} tag and the config key of a silence bound that ran out in this phase. */
  String[] idleCause(boolean permit) {
    if (this == START) {
      return new String[] {"first_message_timeout", "server.grpc.firstMessageTimeout"};
    }
    if (this == AWAIT_BODY || !permit) {
      return new String[] {"idle_timeout", "server.grpc.idleTimeout"};
    }
    return new String[] {"admitted_idle_timeout", "server.grpc.admittedIdleTimeout"};
  }
}
