package io.sluice.core.session;

import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Reason;
import io.sluice.core.session.AdmissionCheck.Held;
import io.sluice.core.session.AdmissionCheck.Refusal;
import io.sluice.core.session.AdmissionCheck.Release;
import io.sluice.core.session.AdmissionCheck.Stage;
import io.sluice.core.session.SessionSteps.Step;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.jspecify.annotations.Nullable;

/**
 * One request's way through its snapshot's {@link CheckChain}: runs the checks of a stage in order
 * (each store's answer handed to the request's serial context), keeps what each one holds, and
 * gives every hold back exactly once, in reverse order of acquisition, on every end path: a refusal
 * (by a later check or the pool, {@link #release}), the front end's end (also while a store
 * answers: the late hold goes back as it comes), the request's own end after it ran, and in shadow
 * mode what a pass does not keep ({@link #pass}). Not thread-safe: the serial context only.
 *
 * <p>The session answers what the chain cannot: a refusal ({@link #refused}) and a store's answer
 * that failed outright ({@link #storeFailed}); it takes its next step when a stage's checks let the
 * request on ({@link #passed}, {@link OfSession}: nothing allocated per stage).
 */
abstract class CheckRun implements AdmissionCheck.Request {
  private final CheckChain chain;
  final AdmissionCheck.Request request;
  private final Executor serial;
  private final SessionSteps steps;
  // what the checks hold, in order of acquisition: the first (most requests hold one), the rest
  private @Nullable Held first;
  private Held @Nullable [] more; // null while one or none
  private int count;
  private @Nullable CheckNotes notes; // as last made for the facts; null again with a new hold
  private int next; // the chain's next check
  private boolean closed; // released (refused or ended): a late answer goes back at once
  // the buffered body, until the checks are done (its view made only when a check asks)
  private byte @Nullable [] body;
  private int bodyOffset;
  private int bodyLength;
  private AdmissionCheck.@Nullable Answered answer; // a check's own answer to the request
  private boolean waited; // a check waits on purpose: the front end holds the message (once)

  CheckRun(CheckChain chain, AdmissionCheck.Request request, Executor serial, SessionSteps steps) {
    this.chain = chain;
    this.request = request;
    this.serial = serial;
    this.steps = steps;
  }

  // --- what the checks see of the request: the request's own, and its body while they run

  @Override
  public Subject subject() {
    return request.subject();
  }

  @Override
  public io.sluice.core.estimate.@Nullable TokenEstimate estimate() {
    return request.estimate();
  }

  @Override
  public long workUnits() {
    return request.workUnits();
  }

  @Override
  public AdmissionCheck.@Nullable Body body() {
    byte[] b = body;
    return b == null ? null : new AdmissionCheck.Body(b, bodyOffset, bodyLength);
  }

  /**
   * The buffered body, read in place by the checks with the estimate; let go when they are done.
   */
  final void body(byte[] bytes, int offset, int length) {
    body = bytes; // by reference: nothing allocated unless a check asks
    bodyOffset = offset;
    bodyLength = length;
  }

  @Override
  public final void waiting() {
    serial.execute(
        () -> {
          if (!closed && !waited) {
            waited = true;
            checkWaits();
          }
        });
  }

  /** A check's ask waits on purpose ({@link AdmissionCheck.Request#waiting}): hold the message. */
  void checkWaits() {}

  /** A check refused the request (its holds are still held: the refusal gives them back). */
  abstract void refused(Refusal r, long receivedNanos);

  /**
   * A check answered the request itself (its holds, and the earlier ones, are still held): it ends
   * as a refusal does, with the answer's reason and status, and the front end sends the answer
   * ({@link #answer}) instead of a refusal's.
   */
  private void answered(AdmissionCheck.Answered a, long receivedNanos) {
    answer = a;
    refused(new Refusal(a.reason(), a.status(), 0, a.reason().code()), receivedNanos);
  }

  /** The answer a check gave the request itself, or null (it was not answered so). */
  final AdmissionCheck.@Nullable Answered answer() {
    return answer;
  }

  /**
   * The pool refused the request ({@code r}): refused now ({@link #refused}), unless {@code
   * planner} answers it another way ({@link Planner#instead}, never in shadow mode), later, in the
   * serial context: its answer ends the request as a check's own answer does, else the refusal
   * stands (a failed stage too). The front end gone meanwhile ({@link #release}): the planner is
   * told ({@link Planner#unanswered}), nothing else happens (what was held went back at the end).
   */
  final void refuse(Planner planner, Decision.Reject r, long receivedNanos) {
    CompletionStage<Planner.Instead> later =
        closed || subject().shadow() ? null : planner.instead(r, this);
    if (later == null) {
      refused(
          new Refusal(r.reason(), r.status(), r.retryAfterSeconds(), r.message()), receivedNanos);
      return;
    }
    var unused = // the callback handles every outcome, errors included
        later.whenComplete(
            (v, e) ->
                serial.execute(
                    () -> {
                      Planner.Instead i = e != null || v == null ? Planner.Instead.REFUSAL : v;
                      if (closed) {
                        Object undone = planner.unanswered(i);
                        if (undone != null) { // counted and recorded as the pool's refusal
                          keep(new Noted(undone));
                          abandoned(r);
                        }
                        return;
                      }
                      Object note = i.note();
                      if (note != null) { // the facts carry it as a hold's note
                        keep(new Noted(note));
                      }
                      AdmissionCheck.Answered a = i.answer();
                      if (a != null) {
                        answered(a, receivedNanos);
                      } else {
                        refused(
                            new Refusal(r.reason(), r.status(), r.retryAfterSeconds(), r.message()),
                            receivedNanos);
                      }
                    }));
  }

  /**
   * A planner's answer came after the front end went away and was undone ({@link
   * Planner#unanswered}, its note kept): the request is told to the listeners as refused by {@code
   * r}, nobody is answered, nothing is given back again (it went back at the front end's end).
   */
  void abandoned(Decision.Reject r) {}

  /**
   * A check's own answer {@code a} came after the front end went away and was undone ({@link
   * AdmissionCheck#unanswered}, its note kept): the request is told to the listeners as answered,
   * nobody is answered.
   */
  void unanswered(AdmissionCheck.Answered a) {}

  /** A store's answer failed outright (not a store failure it answers for itself). */
  abstract void storeFailed(Throwable cause);

  /** The checks of {@code stage} let the request on: its next step ({@link #run(Stage, long)}). */
  void passed(Stage stage, long receivedNanos) {}

  /** Runs the checks of {@code stage} that apply, in order; then {@link #passed}. */
  final void run(Stage stage, long receivedNanos) {
    run(stage, receivedNanos, null);
  }

  /**
   * Runs the checks of {@code stage} that apply, in order; then {@code then} (null: {@link
   * #passed}), in the serial context. Not that when one refuses, or the run was released while a
   * store answered.
   */
  final void run(Stage stage, long receivedNanos, @Nullable Runnable then) {
    while (next < chain.size() && chain.stage(next) == stage) { // no call into the check
      AdmissionCheck<?> c = chain.get(next);
      if (chain.applies(next++, this) && !ask(c, stage, receivedNanos, then)) { // no itable stub
        return; // refused, released, or its answer resumes the run
      }
    }
    if (stage == Stage.ESTIMATE) {
      body = null; // the checks are done with it
    }
    if (closed) {
      return;
    }
    if (then != null) {
      then.run();
    } else {
      passed(stage, receivedNanos);
    }
  }

  /** True to go on at once; false when refused, released, or answering later. */
  private <A> boolean ask(
      AdmissionCheck<A> c, Stage stage, long receivedNanos, @Nullable Runnable then) {
    CompletableFuture<A> f =
        (c.store() ? steps.quota(c.ask(this)) : c.ask(this)).toCompletableFuture();
    if (f.isDone() && !f.isCompletedExceptionally()) {
      if (c.store()) {
        steps.at(Step.QUOTA);
      }
      return answered(c, f.join(), receivedNanos);
    }
    var unused = // the callback handles every outcome, errors included
        f.whenComplete(
            (v, e) ->
                serial.execute(
                    () -> {
                      if (c.store()) {
                        steps.at(Step.QUOTA);
                      }
                      if (e != null || v == null) {
                        storeFailed(e != null ? e : new IllegalStateException("no answer"));
                      } else if (answered(c, v, receivedNanos)) {
                        run(stage, receivedNanos, then);
                      }
                    }));
    return false;
  }

  private <A> boolean answered(AdmissionCheck<A> c, A answer, long receivedNanos) {
    AdmissionCheck.Verdict v = c.answered(answer, this);
    Refusal r = null;
    if (v instanceof Held h) {
      keep(h); // from here every path gives it back
      r = h.refusal();
    } else if (v instanceof Refusal refusal) {
      r = refusal;
    }
    if (closed) { // the front end went away while the store answered
      Object undone = v instanceof AdmissionCheck.Answered a ? c.unanswered(a, this) : null;
      if (undone != null) { // its answer undone: counted and recorded as given, nobody answered
        keep(new Noted(undone));
        unanswered((AdmissionCheck.Answered) v);
      }
      release(Release.CANCELLED);
      return false;
    }
    if (v instanceof AdmissionCheck.Answered a) {
      Object note = a.note();
      if (note != null) { // the facts carry it as a hold's note; nothing to give back
        keep(new Noted(note));
      }
      answered(a, receivedNanos);
      return false;
    }
    if (r != null) {
      refused(r, receivedNanos);
      return false;
    }
    return true;
  }

  /** An answer's note, kept as a hold that holds nothing ({@link #notes}). */
  private static final class Noted extends Held {
    private final Object note;

    Noted(Object note) {
      this.note = note;
    }

    @Override
    public Object note() {
      return note;
    }

    @Override
    protected void release(Release how) {}
  }

  private void keep(Held h) {
    notes = null; // its note joins the others at the next read
    if (count == 0) {
      first = h;
    } else {
      Held[] a = more;
      if (a == null || count > a.length) { // a planner's note may follow every check's hold
        a = java.util.Arrays.copyOf(a == null ? new Held[0] : a, Math.max(count, chain.size()));
        more = a;
      }
      a[count - 1] = h;
    }
    count++;
  }

  /** The hold taken {@code i}th ({@code i < count}). */
  private Held held(int i) {
    return Objects.requireNonNull(i == 0 ? first : Objects.requireNonNull(more)[i - 1], "held");
  }

  /**
   * Gives back, in reverse order, every hold not given back yet ({@code how}); checks still to come
   * do not run, and an answer still to come is given back as it comes.
   */
  final void release(Release how) {
    closed = true;
    body = null;
    for (int i = count - 1; i >= 0; i--) {
      held(i).releaseOnce(how);
    }
  }

  /**
   * Shadow mode let the request through without a permit ({@code wouldReject}: enforcement would
   * have refused it): gives back, in reverse order, what a pass does not keep; the rest goes back
   * at its end ({@link #release}).
   */
  final void pass(boolean wouldReject) {
    for (int i = count - 1; i >= 0; i--) {
      Held h = held(i);
      if (!h.keptByPass(wouldReject)) {
        h.releaseOnce(Release.PASSED);
      }
    }
  }

  /** The request was refused, enforced: each check of the chain remembers what it needs. */
  final void remember(Reason why, long retryAfterSeconds) {
    if (answer != null) {
      return; // answered, not refused: nothing to remember
    }
    for (int i = 0; i < chain.size(); i++) {
      chain.get(i).refused(request, why, retryAfterSeconds);
    }
  }

  /**
   * The request runs as {@code cheaper} (its planner's cheaper version): each hold still held is
   * cut to it ({@link Held#runsAs}), in order of acquisition.
   */
  final void runsAs(io.sluice.core.estimate.TokenEstimate cheaper) {
    for (int i = 0; i < count; i++) {
      Held h = held(i);
      if (!h.released()) {
        h.runsAs(cheaper);
      }
    }
  }

  /** The hold of {@code type} taken (given back or not), or null. */
  final <T extends Held> @Nullable T held(Class<T> type) {
    for (int i = 0; i < count; i++) {
      Held h = held(i);
      if (type.isInstance(h)) {
        return type.cast(h);
      }
    }
    return null;
  }

  /** What the holds taken noted of the request ({@link Held#note()}), in order of acquisition. */
  final CheckNotes notes() {
    if (notes == null) { // a hold's note never changes: one scan per new hold
      notes = scanNotes();
    }
    return Objects.requireNonNull(notes);
  }

  private CheckNotes scanNotes() {
    int noted = 0;
    int firstNoted = -1;
    for (int i = 0; i < count; i++) {
      if (held(i).note() != null) {
        noted++;
        firstNoted = firstNoted < 0 ? i : firstNoted;
      }
    }
    if (noted == 0) {
      return CheckNotes.NONE;
    }
    if (noted == 1) { // made once per request: the hold keeps it
      return held(firstNoted).alone(Objects.requireNonNull(held(firstNoted).note()));
    }
    Object[] n = new Object[noted];
    for (int i = 0, k = 0; i < count; i++) {
      Object o = held(i).note();
      if (o != null) {
        n[k++] = o;
      }
    }
    return CheckNotes.many(n);
  }

  /**
   * The headers the holds still held disclose to the client ({@link Held#disclose}), or null when
   * none does (nothing allocated).
   */
  final java.util.@Nullable Map<String, String> disclosed() {
    java.util.Map<String, String> out = null;
    for (int i = 0; i < count; i++) {
      Held h = held(i);
      java.util.Map<String, String> d = h.released() ? null : h.disclose();
      if (d != null && !d.isEmpty()) {
        if (out == null) {
          out = d;
        } else {
          out = new java.util.LinkedHashMap<>(out);
          out.putAll(d);
        }
      }
    }
    return out;
  }

  /** Whether a hold of {@code type} is held now. */
  final boolean holds(Class<? extends Held> type) {
    Held h = held(type);
    return h != null && !h.released();
  }

  /**
   * A session's run: the session takes each next step and answers what the chain cannot. It is the
   * session's ask of its pool and what its planner reads of the notes too (no object per request).
   */
  static final class OfSession extends CheckRun
      implements Planner.Pool, java.util.function.Supplier<CheckNotes> {
    private final SessionFront front;
    private final SessionListener listener;

    OfSession(
        Sessions env,
        AdmissionSession session,
        SessionFront front,
        Executor serial,
        SessionSteps steps) {
      super(env.checks(), session, serial, steps);
      this.front = front;
      this.listener = env.listener();
    }

    @Override
    void abandoned(Decision.Reject r) {
      listener.on(
          new SessionEvent.Refused(
              session().facts(),
              r.reason(),
              r.status(),
              r.retryAfterSeconds(),
              "the client went away before its answer: " + r.message()));
    }

    @Override
    void unanswered(AdmissionCheck.Answered a) {
      listener.on(new SessionEvent.Answered(session().facts(), a.reason(), a.status()));
    }

    @Override
    void checkWaits() { // the longest hold Envoy accepts: the queue's own hold may follow
      front.held(Math.max(1, subject().maxHoldNanos() / 1_000_000L));
    }

    private AdmissionSession session() {
      return (AdmissionSession) request; // as constructed: no field of its own
    }

    @Override
    public Decision decide(io.sluice.core.admission.AdmissionRequest r, long degradeAboveNanos) {
      return session().decideInPool(r, degradeAboveNanos);
    }

    @Override
    public CheckNotes get() {
      return notes();
    }

    @Override
    void passed(Stage stage, long receivedNanos) {
      session().checked(stage, receivedNanos);
    }

    @Override
    void refused(Refusal r, long receivedNanos) {
      session().checkRefused(r, receivedNanos);
    }

    @Override
    void storeFailed(Throwable cause) {
      session().storeFailed(cause);
    }
  }
}
