package io.sluice.core.session;

import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Reason;
import org.jspecify.annotations.Nullable;

/**
 * Shadow mode ({@link Subject#shadow}) over a request's verdicts: a refusal (any reason but {@code
 * unknown_route} and {@code shutting_down}, {@link #lets}) or a place in the queue is recorded as
 * what enforcement would have done ({@link SessionEvent.Shadowed}) and the request is let through
 * at once without a permit (a pass: {@link #letThrough}, ended once: {@link #end}). A refusal after
 * the decision ({@link #wouldRefuseLater}) is recorded once and the request runs on. One per shadow
 * request; an enforced one has none.
 */
final class ShadowVerdicts {
  private final Subject subject;
  private final SessionListener listener;
  private @Nullable String would; // reject or queue; null when enforcement would admit it too
  private Reason wouldReason = Reason.ADMITTED;
  private String wouldMessage = "";
  private int wouldStatus;
  private long passedAtNanos;
  private boolean passEnded;
  // let through without a permit; read by the front end's idle sweep on another thread
  private volatile boolean passed;

  private ShadowVerdicts(Subject subject, SessionListener listener) {
    this.subject = subject;
    this.listener = listener;
  }

  /** The shadow verdicts of a request in shadow mode, else null (enforced). */
  static @Nullable ShadowVerdicts of(Subject subject, SessionListener listener) {
    return subject.shadow() ? new ShadowVerdicts(subject, listener) : null;
  }

  /**
   * Whether a refusal for {@code why} is let through: all but a request that cannot be accounted to
   * a pool ({@code unknown_route}) and the server's own going away ({@code shutting_down}).
   */
  static boolean lets(Reason why) {
    return why != Reason.UNKNOWN_ROUTE && why != Reason.SHUTTING_DOWN;
  }

  /** What a request that would wait in {@code w}'s queue reads (its class, place and wait). */
  static String queueMessage(Subject subject, Decision.WouldQueue w) {
    return "would wait in the queue of class "
        + subject.requestClass().name()
        + " (position "
        + (w.position() + 1)
        + ", predicted wait "
        + w.predictedWaitNanos() / 1_000_000L
        + " ms)";
  }

  /** Enforcement would refuse or queue it ({@code what}): recorded, before it is let through. */
  void would(String what, Reason why, int status, String message) {
    would = what;
    wouldReason = why;
    wouldStatus = status;
    wouldMessage = message;
  }

  /** Let through now, without a permit: from here every path ends it ({@link #end}). */
  void letThrough(long nowNanos, long retryAfterSeconds) {
    passedAtNanos = nowNanos;
    passed = true;
    listener.on(
        new SessionEvent.Shadowed(
            subject,
            String.valueOf(would),
            wouldReason,
            wouldStatus,
            retryAfterSeconds,
            wouldMessage));
  }

  /**
   * A check after the decision would refuse the running request: recorded ({@link
   * SessionEvent.Shadowed}, once); true when let through (false: enforced, the front end refuses).
   */
  boolean wouldRefuseLater(Reason why, int status, String message) {
    if (!lets(why)) {
      return false;
    }
    if (would == null) {
      would(SessionEvent.Shadowed.REJECT, why, status, message);
      listener.on(
          new SessionEvent.Shadowed(
              subject, SessionEvent.Shadowed.REJECT, why, status, 0, message));
    }
    return true;
  }

  /** The pass ends: true for the call that ended it (once). */
  boolean end() {
    if (!passed || passEnded) {
      return false;
    }
    passEnded = true;
    return true;
  }

  /** Let through without a permit (ended or not); safe to read from any thread. */
  boolean passed() {
    return passed;
  }

  long passedAtNanos() {
    return passedAtNanos;
  }

  @Nullable String would() {
    return would;
  }

  Reason wouldReason() {
    return wouldReason;
  }

  /** For the decision record: what enforcement would have done, or null. */
  RequestFacts.@Nullable Would facts() {
    String w = would;
    return w == null ? null : new RequestFacts.Would(w, wouldReason, wouldStatus, wouldMessage);
  }
}
