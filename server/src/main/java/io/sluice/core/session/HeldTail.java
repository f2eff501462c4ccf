package io.sluice.core.session;

import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import java.util.concurrent.Executor;
import org.jspecify.annotations.Nullable;

/**
 * A session's response whose end the front end will not see ({@link RunningRequest#endUnseen}): its
 * permit held for the predicted rest of the answer, until that has passed and the front end is done
 * with the stream, then released once (by the timer, the stream's close or shutdown: {@link
 * TailHolds}). One per session, touched in its serial context (the timer and shutdown hand their
 * calls to it).
 */
final class HeldTail {
  private final Sessions env;
  private final Executor serial;
  // its release (completed, true if it did) and its tenant slot, given back once
  private final RunningRequest run;
  private @Nullable String cause; // why the response's end is not seen; null when it is seen
  private @Nullable Permit permit; // the permit held
  private boolean due; // the predicted end (or the deadline) passed
  private boolean frontDone; // the front end is done with the stream
  private boolean releasing; // the tail's own release is under way
  private HoldTimer.@Nullable Handle timer;

  HeldTail(Sessions env, Executor serial, RunningRequest run) {
    this.env = env;
    this.serial = serial;
    this.run = run;
  }

  /** Why the response's end is not seen, or null when it is seen. */
  @Nullable String cause() {
    return cause;
  }

  /**
   * The front end will not see the response's end ({@code cause}, e.g. {@code body_mode_none}:
   * Envoy sends no response body and may close the stream right after the response headers, at the
   * answer's first token; {@code eventStream}: the answer streams, so its headers came with its
   * first token). The permit is held for the predicted rest of the answer: until {@code admittedAt
   * + }{@link io.sluice.core.admission.PoolState#tailNanos} (from the headers time now, its
   * reserved output and the pool's learned time per output token; at most the request's deadline),
   * and, if the front end's stream is still open then, until it closes (Envoy before 1.37 keeps it
   * to the request's end); at once when both have passed. Its release is completed and teaches the
   * pool no service time ({@link Permit#markEndUnseen}); the token reservation stays charged (no
   * usage is seen). Emits {@link SessionEvent.ResponseEndUnseen}. A shadow pass (no permit) ends at
   * once.
   */
  void unseen(String cause, @Nullable Permit p, Subject subject, boolean eventStream) {
    if (this.cause != null) {
      return;
    }
    this.cause = cause;
    this.permit = p;
    boolean guessed = p != null && p.pool().serviceTimeGuessed();
    env.listener().on(new SessionEvent.ResponseEndUnseen(subject, cause, guessed));
    if (p == null || !p.markEndUnseen()) {
      var unused =
          run.release(Outcome.COMPLETED); // nothing held (a shadow pass), or released already
      return;
    }
    if (!env.tails().add(this)) { // the server shuts down
      due = true;
      frontDone = true;
      releaseTail();
      return;
    }
    long now = env.ticker().nanos();
    // called at the response headers: of a streamed answer (SSE), they came with its first token;
    // of a whole one, with its end (the headers time is then no first token: not used)
    long headers = eventStream ? now - p.admittedAtNanos() : -1;
    long rest =
        Math.min(
            p.pool().tailNanos(p, headers),
            Math.max(0, subject.deadlineNanos() - p.admittedAtNanos()));
    long delay = p.admittedAtNanos() + rest - now;
    if (delay <= 0) {
      due = true;
    } else {
      timer = env.timer().schedule(delay, () -> serial.execute(this::onDue));
    }
  }

  /**
   * The response's end was seen after all (response trailers after body mode NONE): the hold is
   * called off, so the release that follows is an ordinary, measured one.
   */
  void seen() {
    Permit p = permit;
    if (cause == null || p == null || p.isReleased()) {
      return;
    }
    cause = null;
    env.tails().remove(this);
    cancelTimer();
    p.markEndSeen();
  }

  /** Held for a predicted tail and not released yet. */
  boolean holds() {
    Permit p = permit;
    return cause != null && !releasing && p != null && p.endUnseen() && !p.isReleased();
  }

  /** The front end is done with the stream: released if the predicted end passed (true if so). */
  boolean frontDone() {
    frontDone = true;
    return due && releaseTail();
  }

  private void onDue() {
    timer = null;
    due = true;
    if (holds() && frontDone) {
      releaseTail();
    }
  }

  /** Shutdown ({@link TailHolds#releaseAll}): the tail ends now, in the serial context. */
  void endNow() {
    serial.execute(
        () -> {
          due = true;
          frontDone = true;
          if (holds()) {
            releaseTail();
          }
        });
  }

  private boolean releaseTail() {
    releasing = true;
    env.tails().remove(this);
    cancelTimer();
    boolean released = run.release(Outcome.COMPLETED);
    run.releaseHolds(); // a no-op after the release above
    return released;
  }

  private void cancelTimer() {
    if (timer != null) {
      timer.cancel();
      timer = null;
    }
  }
}
