package io.sluice.core.permit;

import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Reason;
import io.sluice.core.session.AdmissionCheck;
import org.jspecify.annotations.Nullable;

/** The permit API's input rules and the refusals it answers besides the pool's own. */
final class PermitInput {
  /** The pool decided nothing that admits, queues or rejects. */
  static final Decision.Reject UNDECIDED =
      new Decision.Reject(
          Reason.POOL_SATURATED, 503, 1, "not admitted", Decision.Reject.UNPREDICTED);

  /** The caller went away while the checks' stores answered. */
  static final Decision.Reject CANCELLED =
      new Decision.Reject(Reason.POOL_SATURATED, 503, 1, "cancelled", Decision.Reject.UNPREDICTED);

  private PermitInput() {}

  /** A check's refusal as the pool's (null: a check's store failed outright). */
  static Decision.Reject reject(AdmissionCheck.@Nullable Refusal r) {
    if (r == null) {
      return new Decision.Reject(
          Reason.POOL_SATURATED,
          503,
          1,
          "a check's store did not answer",
          Decision.Reject.UNPREDICTED);
    }
    return new Decision.Reject(
        r.reason(), r.status(), r.retryAfterSeconds(), r.message(), Decision.Reject.UNPREDICTED);
  }

  /** The pool a permit id names ({@code <pool>/<replica>-<n>}), or null when it names none. */
  static @Nullable String poolOf(String permitId) {
    if (permitId.length() > PermitDesk.MAX_PERMIT_ID_CHARS) {
      return null;
    }
    int slash = permitId.lastIndexOf('/');
    return slash <= 0 ? null : permitId.substring(0, slash);
  }

  /**
   * How a release ended a lease, given what the store found ({@code ended}; null: it did not
   * answer) and whether this replica held the permit: null when it ended nothing (released or
   * expired long ago elsewhere, or the store down and the permit held elsewhere).
   */
  static PermitEvents.@Nullable End howEnded(PermitLeases.@Nullable Ended ended, boolean heldHere) {
    if (ended == null) {
      return heldHere ? PermitEvents.End.RELEASED : null; // store down: given back here
    }
    return switch (ended) {
      case RELEASED -> PermitEvents.End.RELEASED;
      case AFTER_EXPIRY -> PermitEvents.End.RELEASED_AFTER_EXPIRY;
      // held here, its record gone from the store: it expired (and was pruned) before this
      // replica's sweep saw it
      case GONE -> heldHere ? PermitEvents.End.RELEASED_AFTER_EXPIRY : null;
    };
  }

  static @Nullable String invalid(PermitDesk.Request a) {
    int max = PermitDesk.MAX_ID_CHARS;
    if (a.pool().isEmpty() || a.pool().length() > max) {
      return "pool: " + len(a.pool()) + " (expected: 1.." + max + " characters)";
    }
    if (a.className().isEmpty() || a.className().length() > max) {
      return "class_name: " + len(a.className()) + " (expected: 1.." + max + ")";
    }
    if (a.tenant().length() > max || a.opId().length() > max) {
      return "tenant/operation_id: longer than " + max + " characters";
    }
    if (a.work() <= 0 || a.work() > (1L << 40)) {
      return "work: " + a.work() + " (expected: 1..1099511627776)";
    }
    if (a.maxWaitNanos() < 0) {
      return "max_wait_ms: negative (expected: >= 0)";
    }
    return null;
  }

  private static String len(String s) {
    return s.isEmpty() ? "empty" : s.length() + " characters";
  }
}
