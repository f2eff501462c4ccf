package io.sluice.core.intake;

import io.sluice.core.admission.Reason;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.RequestFacts;
import org.jspecify.annotations.Nullable;

/**
 * What intake did with one request, for its listener and the decision record ({@link
 * RequestFacts#note}): counted in {@code sluice_intake_requests_total{pool,class,event}}
 * (docs/metrics.md) and written as the record's {@code intake}.
 *
 * @param event one of the constants below (a bounded label)
 * @param jobId the job's operation id, or null (refused before one was written, or malformed)
 * @param status the job's status answered, or null
 * @param position jobs ahead of it while it waits (else 0)
 * @param window its predicted start window while it waits, or null
 * @param insteadOf the pool's refusal a request of a class with {@code intake.whenLate: accept} was
 *     taken in instead of ({@code deadline_unreachable}, {@code queue_full}, {@code queue_timeout},
 *     {@code pool_saturated}, {@code class_share}), whatever intake then did; null for a background
 *     request or an operation
 */
public record IntakeNote(
    String event,
    @Nullable String jobId,
    @Nullable String status,
    long position,
    @Nullable StartWindow window,
    @Nullable Reason insteadOf) {
  /** A job was written to the durable queue and its id answered. */
  public static final String QUEUED = "queued";

  /** Refused: the tenant's backlog holds its cap of jobs or work. */
  public static final String BACKLOG_FULL = "backlog_full";

  /** Refused: the store did not acknowledge the job (or the read), or holds its bound of jobs. */
  public static final String STORE_FAILED = "store_failed";

  /** Refused: the body is larger than {@code intake.maxRequestBytes}. */
  public static final String TOO_LARGE = "too_large";

  /**
   * A late request's body is no JSON object, or the request came without a body: the refusal stands
   * ({@code intake.whenLate}).
   */
  public static final String NOT_JSON = "not_json";

  /** A late request was accepted, but its front end went away before the answer: cancelled. */
  public static final String ABANDONED = "abandoned";

  /** A job's status was read. */
  public static final String READ = "read";

  /** A job was cancelled (or a cancel found it done). */
  public static final String CANCEL = "cancel";

  /** An operation route named an id that is unknown or another tenant's. */
  public static final String UNKNOWN = "unknown";

  /** An operation route named a malformed id. */
  public static final String MALFORMED = "malformed";

  /** Refused: a dispatch marker that is forged, expired or malformed. */
  public static final String MARKER_INVALID = "marker_invalid";

  static IntakeNote of(String event) {
    return of(event, null);
  }

  static IntakeNote of(String event, @Nullable Reason insteadOf) {
    return new IntakeNote(event, null, null, 0, null, insteadOf);
  }

  static IntakeNote of(String event, JobStore.JobView job, StartWindow window) {
    return of(event, job, window, null);
  }

  static IntakeNote of(
      String event, JobStore.JobView job, StartWindow window, @Nullable Reason insteadOf) {
    boolean waits = job.status() == JobStatus.QUEUED;
    return new IntakeNote(
        event,
        job.id(),
        job.status().code(),
        waits ? job.position() : 0,
        waits ? window : null,
        insteadOf);
  }

  /** The note of {@code facts}, or null when intake did nothing with the request. */
  public static @Nullable IntakeNote of(RequestFacts facts) {
    return facts.note(IntakeNote.class);
  }

  /** A refusal that carries its note to the listeners and the record: nothing held. */
  static AdmissionCheck.Held refused(IntakeNote note, AdmissionCheck.Refusal refusal) {
    return new AdmissionCheck.Held() {
      @Override
      public AdmissionCheck.Refusal refusal() {
        return refusal;
      }

      @Override
      public Object note() {
        return note;
      }

      @Override
      protected void release(AdmissionCheck.Release how) {}
    };
  }
}
