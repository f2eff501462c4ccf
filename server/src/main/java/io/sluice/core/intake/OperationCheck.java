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
 * Answers the operation routes of background jobs from the store, at the request headers: {@code
 * GET <statusPath><id>} (the job's status; while it waits its position and start window; done, its
 * result) and {@code POST <statusPath><id>/cancel}. Only the tenant that created a job sees it:
 * another tenant's id answers 404 {@code unknown_operation} as an unknown one does, so ids do not
 * leak; a malformed id answers 400 {@code invalid_request} without asking the store; a store that
 * fails, 503 {@code intake_unavailable}. The path and method come from the trusted signals {@code
 * intakePath} and {@code intakeMethod} (by default the {@code :path} and {@code :method} headers).
 */
public final class OperationCheck implements AdmissionCheck<OperationCheck.Looked> {
  /** Its place: at the headers, after the tenant's request rate (a poll counts as a request). */
  public static final int ORDER = CheckChain.TENANT_RATE + 20;

  /** The signal keys it reads: the request's path and method. */
  public static final String PATH = "intakePath";

  public static final String METHOD = "intakeMethod";

  private static final String CANCEL = "/cancel";

  private final Intake intake;
  private final AdmissionController controller;

  OperationCheck(Intake intake, AdmissionController controller) {
    this.intake = intake;
    this.controller = controller;
  }

  /** In the chain while {@code intake.enabled}. */
  public static AdmissionCheck.Factory factory(Intake intake) {
    return s -> intake.policy().enabled() ? new OperationCheck(intake, s.controller()) : null;
  }

  /** The store's answer (or null: unknown), the failure, or a malformed id (neither asked). */
  public record Looked(
      JobStore.@Nullable JobView job,
      @Nullable Throwable failure,
      boolean malformed,
      boolean cancel) {
    static final Looked MALFORMED = new Looked(null, null, true, false);
  }

  /** An operation route's ask: the id and whether it cancels; null for any other request. */
  record Route(String id, boolean cancel) {}

  @Override
  public Stage stage() {
    return Stage.HEADERS;
  }

  @Override
  public boolean applies(Request r) {
    return !r.subject().shadow() && route(r.subject()) != null;
  }

  /** The operation route {@code s} asks for, or null when it is not one. */
  @Nullable Route route(Subject s) {
    String path = s.signals().get(PATH);
    String prefix = intake.policy().statusPath();
    if (path == null || !path.startsWith(prefix)) {
      return null;
    }
    String method = s.signals().get(METHOD);
    int q = path.indexOf('?');
    String rest = path.substring(prefix.length(), q < 0 ? path.length() : q);
    if ("GET".equals(method) && !rest.isEmpty() && rest.indexOf('/') < 0) {
      return new Route(rest, false);
    }
    if ("POST".equals(method) && rest.endsWith(CANCEL) && rest.length() > CANCEL.length()) {
      String id = rest.substring(0, rest.length() - CANCEL.length());
      return id.indexOf('/') < 0 ? new Route(id, true) : null;
    }
    return null;
  }

  @Override
  public CompletionStage<Looked> ask(Request r) {
    Route route = java.util.Objects.requireNonNull(route(r.subject()), "applies: a route");
    if (!OperationIds.valid(route.id())) {
      return CompletableFuture.completedFuture(Looked.MALFORMED);
    }
    String tenant = r.subject().tenant().id();
    long now = intake.clock().millis();
    long retention = intake.policy().retention().toMillis();
    CompletionStage<JobStore.@Nullable JobView> asked =
        route.cancel()
            ? intake.store().cancel(intake.keyPrefix(), tenant, route.id(), now, retention)
            : intake.store().read(intake.keyPrefix(), tenant, route.id(), now, retention);
    return asked.handle((v, e) -> new Looked(v, e, false, route.cancel()));
  }

  @Override
  public Verdict answered(Looked l, Request r) {
    if (l.malformed()) {
      return IntakeNote.refused(
          IntakeNote.of(IntakeNote.MALFORMED),
          new Refusal(Reason.INVALID_REQUEST, 400, 0, "the operation id is malformed"));
    }
    if (l.failure() != null) {
      return IntakeNote.refused(
          IntakeNote.of(IntakeNote.STORE_FAILED),
          new Refusal(
              Reason.INTAKE_UNAVAILABLE, 503, 1, "the durable queue did not answer; try again"));
    }
    JobStore.JobView job = l.job();
    if (job == null) {
      return IntakeNote.refused(
          IntakeNote.of(IntakeNote.UNKNOWN),
          new Refusal(Reason.UNKNOWN_OPERATION, 404, 0, "no such operation"));
    }
    StartWindow window = intake.window(controller, job.pool(), job);
    String event = l.cancel() ? IntakeNote.CANCEL : IntakeNote.READ;
    return JobAnswers.answer(
        Reason.OPERATION_STATUS, job, window, IntakeNote.of(event, job, window));
  }
}
