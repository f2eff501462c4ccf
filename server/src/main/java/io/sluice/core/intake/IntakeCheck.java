package io.sluice.core.intake;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Reason;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.CheckChain;
import io.sluice.core.session.Subject;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Accepts a background request for later: a request of a class or route {@code intake} covers whose
 * body asks for background mode ({@link BackgroundRequest}) is written to the durable queue ({@link
 * JobStore#enqueue}) and answered at once, from the store's acknowledgement only, with the
 * Responses-style {@code queued} object ({@link JobAnswers}). The tenant's caps full: {@code
 * intake_backlog_full} (429); the store failed or timed out: {@code intake_unavailable} (503),
 * never an id for a job the store did not acknowledge. With the estimate, before the token
 * reservation (a job accepted for later reserves nothing now: it is admitted, and reserves, when it
 * runs).
 */
public final class IntakeCheck implements AdmissionCheck<IntakeCheck.Written> {
  /** Its place: with the estimate, before the tenant's token reservation. */
  public static final int ORDER = CheckChain.TOKEN_RESERVATION - 10;

  private final Intake intake;
  private final AdmissionController controller;

  IntakeCheck(Intake intake, AdmissionController controller) {
    this.intake = intake;
    this.controller = controller;
  }

  /** In the chain while {@code intake.enabled}. */
  public static AdmissionCheck.Factory factory(Intake intake) {
    return s -> intake.policy().enabled() ? new IntakeCheck(intake, s.controller()) : null;
  }

  /** The store's answer to one request (or why it was not asked). */
  public record Written(
      JobStore.@Nullable NewJob job,
      JobStore.@Nullable Enqueued enqueued,
      @Nullable Throwable failure,
      boolean tooLarge) {
    static final Written NOT_BACKGROUND = new Written(null, null, null, false);
    static final Written TOO_LARGE = new Written(null, null, null, true);
  }

  @Override
  public Stage stage() {
    return Stage.ESTIMATE;
  }

  @Override
  public boolean applies(Request r) {
    Subject s = r.subject();
    if (s.shadow() // observe only: the upstream answers background mode itself
        || DispatchCheck.marked(r) // a dispatched job runs: never taken in again
        || !intake.policy().covers(s.requestClass().name(), s.route())) {
      return false; // nothing asked of the body, nothing allocated
    }
    Body b = r.body();
    return b != null && BackgroundRequest.mentions(b.bytes(), b.offset(), b.length());
  }

  @Override
  public CompletionStage<Written> ask(Request r) {
    Body b = java.util.Objects.requireNonNull(r.body(), "applies: a body");
    BackgroundRequest.Asked asked = BackgroundRequest.read(b.bytes(), b.offset(), b.length());
    if (asked == null) {
      return CompletableFuture.completedFuture(Written.NOT_BACKGROUND);
    }
    IntakePolicy p = intake.policy();
    if (b.length() > p.maxRequestBytes()) {
      return CompletableFuture.completedFuture(Written.TOO_LARGE);
    }
    JobStore.NewJob job = intake.newJob(r.subject(), r.workUnits(), asked.model(), b);
    return intake
        .store()
        .enqueue(intake.keyPrefix(), job, intake.caps())
        .handle((e, failure) -> new Written(job, e, failure, false));
  }

  @Override
  public Verdict answered(Written w, Request r) {
    JobStore.NewJob job = w.job();
    if (w.tooLarge()) {
      return IntakeNote.refused(
          IntakeNote.of(IntakeNote.TOO_LARGE),
          new Refusal(
              Reason.BODY_TOO_LARGE,
              413,
              0,
              "a background request's body is larger than intake.maxRequestBytes ("
                  + intake.policy().maxRequestBytes()
                  + " bytes)"));
    }
    if (job == null) {
      return Continue.INSTANCE; // a body that names background without asking for it
    }
    JobStore.Enqueued e = w.enqueued();
    if (e == null || "store".equals(e.full())) {
      return IntakeNote.refused(
          IntakeNote.of(IntakeNote.STORE_FAILED),
          new Refusal(
              Reason.INTAKE_UNAVAILABLE,
              503,
              1,
              "the durable queue did not acknowledge the job: it was not accepted"));
    }
    if (!e.accepted()) {
      IntakePolicy p = intake.policy();
      return IntakeNote.refused(
          IntakeNote.of(IntakeNote.BACKLOG_FULL),
          new Refusal(
              Reason.INTAKE_BACKLOG_FULL,
              429,
              1,
              "count".equals(e.full())
                  ? "the tenant's background backlog holds intake.maxJobsPerTenant ("
                      + p.maxJobsPerTenant()
                      + ") jobs"
                  : "the tenant's background backlog holds intake.maxWorkPerTenant ("
                      + p.maxWorkPerTenant()
                      + ") work units"));
    }
    return intake.accepted(controller, job, e, null);
  }

  /**
   * The job was accepted but the front end went away before its id was answered: nobody holds the
   * id, so the job is cancelled while it still waits (its place in the tenant's backlog goes back
   * with it, once: a cancel frees a waiting job's place only the first time; best effort: a store
   * failure leaves it to run once and be kept for {@code intake.retention}). Notes it {@code
   * abandoned}, with the cancelled job's id.
   */
  @Override
  public @Nullable Object unanswered(Answered a, Request r) {
    String id = a.note() instanceof IntakeNote n ? n.jobId() : null;
    if (id == null) {
      return null;
    }
    var unused =
        intake
            .store()
            .cancel(
                intake.keyPrefix(),
                r.subject().tenant().id(),
                id,
                intake.clock().millis(),
                intake.policy().retention().toMillis());
    return new IntakeNote(IntakeNote.ABANDONED, id, JobStatus.CANCELLED.code(), 0, null, null);
  }
}
