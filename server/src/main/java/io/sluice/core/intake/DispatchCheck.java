package io.sluice.core.intake;

import io.sluice.core.admission.Reason;
import io.sluice.core.session.AdmissionCheck;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Tells a dispatched job from a client's request, at the headers, before intake's own checks: a
 * request that carries the dispatch marker ({@link DispatchMarker}, the trusted signal {@code
 * intakeDispatch}, by default the {@code x-sluice-dispatch} header) goes on when the marker is
 * valid for its tenant (admitted against its class as any request; {@link IntakeCheck} never takes
 * it in again), and is refused 403 {@code dispatch_marker_invalid} when it is forged, expired or
 * malformed (or no secret is configured). A request without one goes on as before. Nothing asked of
 * a store.
 */
public final class DispatchCheck implements AdmissionCheck<String> {
  /** Its place: at the headers, before the operation routes and intake. */
  public static final int ORDER = OperationCheck.ORDER - 1;

  /** The signal key it reads: the marker. */
  public static final String SIGNAL = "intakeDispatch";

  private static final String VALID = "";

  private final @Nullable DispatchMarker marker;
  private final java.time.Clock clock;

  DispatchCheck(@Nullable DispatchMarker marker, java.time.Clock clock) {
    this.marker = marker;
    this.clock = clock;
  }

  /**
   * In the chain while {@code intake.enabled}; {@code marker} null (no secret): every marker is
   * refused.
   */
  public static AdmissionCheck.Factory factory(Intake intake, @Nullable DispatchMarker marker) {
    return s -> intake.policy().enabled() ? new DispatchCheck(marker, intake.clock()) : null;
  }

  /**
   * Whether {@code r} carries a marker (valid or not: an invalid one was refused at the headers).
   */
  static boolean marked(Request r) {
    return r.subject().signals().get(SIGNAL) != null;
  }

  @Override
  public Stage stage() {
    return Stage.HEADERS;
  }

  @Override
  public boolean applies(Request r) {
    return marked(r);
  }

  @Override
  public boolean store() {
    return false;
  }

  @Override
  public CompletionStage<String> ask(Request r) {
    String given = java.util.Objects.requireNonNull(r.subject().signals().get(SIGNAL));
    DispatchMarker m = marker;
    String why =
        m == null ? "no secret" : m.invalid(given, r.subject().tenant().id(), clock.millis());
    return CompletableFuture.completedFuture(why == null ? VALID : why);
  }

  @Override
  public Verdict answered(String why, Request r) {
    if (why.isEmpty()) {
      return Continue.INSTANCE;
    }
    return IntakeNote.refused(
        IntakeNote.of(IntakeNote.MARKER_INVALID),
        new Refusal(
            Reason.DISPATCH_MARKER_INVALID,
            403,
            0,
            "the dispatch marker (" + DispatchMarker.HEADER + ") is not valid: " + why));
  }
}
