package io.sluice.bootstrap.replay;

import io.sluice.api.v1.Decision;

/**
 * A decision as the agreement compares it: {@code admit} (at once), {@code queue} (admitted after
 * waiting in the queue), {@code degrade:<rung>}, {@code refuse:<reason>}. Two decisions agree when
 * their names are equal.
 */
final class Verdict {
  static final String ADMIT = "admit";
  static final String QUEUE = "queue";
  static final String DEGRADE = "degrade:";
  static final String REFUSE = "refuse:";

  /** A retry the client would not have sent: the replay admitted an earlier attempt. */
  static final String NOT_SENT = "not_sent";

  private Verdict() {}

  /** The recorded decision of a record with these fields. */
  static String of(Decision d, String rung, String reason, long queuePosition, long queueWaitMs) {
    if (d == Decision.DECISION_DEGRADE) {
      return DEGRADE + rung;
    }
    if (d == Decision.DECISION_REJECT || d == Decision.DECISION_ANSWER) {
      return REFUSE + reason;
    }
    return queuePosition > 0 || queueWaitMs > 0 ? QUEUE : ADMIT;
  }

  static boolean refused(String verdict) {
    return verdict.startsWith(REFUSE);
  }
}
