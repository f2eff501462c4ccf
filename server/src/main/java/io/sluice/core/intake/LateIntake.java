package io.sluice.core.intake;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.Planner;
import io.sluice.core.session.Subject;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Accept instead of refuse (a {@link Planner}, docs/intake.md, "Late requests"): a request of a
 * class with {@code intake.whenLate: accept} that its pool refuses {@code deadline_unreachable}
 * (its predicted wait past its deadline or its class's {@code maxQueueWait}), {@code queue_full},
 * or {@code queue_timeout} (it waited in the queue and its wait ran out), or, when it cannot be
 * held, {@code pool_saturated} or {@code class_share} ({@link #late}) is written to the durable
 * queue ({@link JobStore#enqueue}) and answered, once the store acknowledged it, with the same
 * queued object a background request gets. Any other refusal (a tenant's cap, a budget, the pool
 * shutting down) stands. When the store fails, the tenant's backlog is full, or the body cannot be
 * a job (too large, not a JSON object), the pool's refusal stands, typed as it was; the note says
 * why ({@code sluice_intake_late_total}).
 *
 * <p>It keeps the body by reference from its offer to its decision (as the degrade ladder does) and
 * copies it only into a job. A dispatched job (its marker) and shadow mode are never taken in.
 */
public final class LateIntake implements Planner {
  private final Intake intake;
  private final AdmissionController controller;
  private final Subject subject;
  private byte @Nullable [] body; // the request body, by reference, until it is decided
  private int offset;
  private int length;
  private boolean undone; // its accepted job cancelled because nobody received the id (once)

  private LateIntake(Intake intake, AdmissionController controller, Subject subject) {
    this.intake = intake;
    this.controller = controller;
    this.subject = subject;
  }

  /**
   * Plans for the requests of the classes {@code intake.whenLate} accepts (while {@code
   * intake.enabled}); for any other request nothing is made.
   */
  public static Planner.Factory factory(Intake intake) {
    return snapshot ->
        intake.policy().whenLate().isEmpty() || !intake.policy().enabled()
            ? null
            : s ->
                plans(intake.policy(), s) ? new LateIntake(intake, snapshot.controller(), s) : null;
  }

  private static boolean plans(IntakePolicy p, Subject s) {
    return p.acceptsLate(s.requestClass().name())
        // only a Responses client reads the queued object and polls its id (the config check,
        // IntakeSection: a class served on no Responses route is an error)
        && s.format() == RequestFormat.OPENAI_RESPONSES
        && !s.shadow() // observe only
        && s.signals().get(DispatchCheck.SIGNAL) == null; // a dispatched job: never taken in again
  }

  /**
   * Whether the pool's refusal {@code why} is one a late request is accepted instead of: the pool
   * cannot start it in time. Held by the front end, that is {@code deadline_unreachable}, {@code
   * queue_full} or {@code queue_timeout}; not held (the front end cannot hold it: no {@code
   * maxMessageTimeout}, as behind Envoy Gateway, or its class's {@code maxQueueWait} is 0), the
   * pool refuses it at once for want of room: {@code pool_saturated} (the pool, or its free room is
   * another class's reserve, or requests of higher rank wait) or {@code class_share} (its class
   * holds its own share and may not borrow). Both mean "not now", exactly what late means.
   */
  static boolean late(Reason why) {
    return why == Reason.DEADLINE_UNREACHABLE
        || why == Reason.QUEUE_FULL
        || why == Reason.QUEUE_TIMEOUT
        || why == Reason.POOL_SATURATED
        || why == Reason.CLASS_SHARE;
  }

  @Override
  public void offer(byte[] body, int offset, int length) {
    this.body = body;
    this.offset = offset;
    this.length = length;
  }

  @Override
  public io.sluice.core.session.UpstreamPlan admitted(
      io.sluice.core.session.UpstreamPlan plan, boolean atBody) {
    body = null;
    return plan;
  }

  @Override
  public void refused() {
    body = null;
  }

  @Override
  public @Nullable CompletionStage<Instead> instead(
      Decision.Reject refusal, AdmissionCheck.Request request) {
    Reason why = refusal.reason();
    if (!late(why)) {
      return null; // a tenant's cap, a budget, shutting down: the refusal stands, nothing noted
    }
    byte[] b = body;
    if (b == null) { // decided at its headers: nothing to run later
      return done(IntakeNote.NOT_JSON, why);
    }
    if (length > intake.policy().maxRequestBytes()) {
      return done(IntakeNote.TOO_LARGE, why);
    }
    BackgroundRequest.Asked asked = BackgroundRequest.late(b, offset, length);
    if (asked == null) {
      return done(IntakeNote.NOT_JSON, why);
    }
    JobStore.NewJob job =
        intake.newJob(
            subject,
            request.workUnits(),
            asked.model(),
            new AdmissionCheck.Body(b, offset, length));
    return intake
        .store()
        .enqueue(intake.keyPrefix(), job, intake.caps())
        .handle((e, failure) -> answer(job, e, why));
  }

  private Instead answer(JobStore.NewJob job, JobStore.@Nullable Enqueued e, Reason why) {
    if (e == null || "store".equals(e.full())) { // failed, timed out, or the memory store is full
      return new Instead(null, IntakeNote.of(IntakeNote.STORE_FAILED, why));
    }
    if (!e.accepted()) {
      return new Instead(null, IntakeNote.of(IntakeNote.BACKLOG_FULL, why));
    }
    AdmissionCheck.Answered a = intake.accepted(controller, job, e, why);
    return new Instead(a, a.note());
  }

  private static CompletionStage<Instead> done(String event, Reason why) {
    return CompletableFuture.completedFuture(new Instead(null, IntakeNote.of(event, why)));
  }

  /**
   * The job was accepted but the front end went away before its id was answered: nobody holds the
   * id, so the job is cancelled while it still waits, once (its place in the tenant's backlog goes
   * back with it; best effort: a store failure leaves it to run once and be kept for {@code
   * intake.retention}). Answers the note the session counts and records with the pool's refusal:
   * {@code abandoned}, the job's id, the refusal it was accepted instead of.
   */
  @Override
  public @Nullable Object unanswered(Instead answer) {
    IntakeNote n = answer.note() instanceof IntakeNote note ? note : null;
    String id = n == null ? null : n.jobId();
    if (n == null || answer.answer() == null || id == null || undone) {
      return null;
    }
    undone = true;
    var unused =
        intake
            .store()
            .cancel(
                intake.keyPrefix(),
                subject.tenant().id(),
                id,
                intake.clock().millis(),
                intake.policy().retention().toMillis());
    return new IntakeNote(
        IntakeNote.ABANDONED, id, JobStatus.CANCELLED.code(), 0, null, n.insteadOf());
  }
}
