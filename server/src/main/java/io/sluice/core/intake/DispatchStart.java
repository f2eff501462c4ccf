package io.sluice.core.intake;

import io.sluice.core.session.Planner;
import io.sluice.core.session.UpstreamPlan;

/**
 * A dispatched job's request (it carries the dispatch marker, valid: an invalid one was refused at
 * the headers): when its pool admits it, its job starts in the store ({@link JobStore#start}), so
 * that it reads {@code in_progress} only from then on; while it waits in Sluice's queue, or is
 * turned away and given back, it reads {@code queued}. A {@link Planner} for its {@link #admitted}
 * hook only: it decides nothing and answers no refusal. Best effort: a failed write leaves the job
 * reading {@code queued} until it ends.
 */
public final class DispatchStart implements Planner {
  private final Intake intake;
  private final String jobId;
  private boolean started; // once per request

  private DispatchStart(Intake intake, String jobId) {
    this.intake = intake;
    this.jobId = jobId;
  }

  /** Plans for the requests that carry a dispatch marker (while {@code intake.enabled}). */
  public static Planner.Factory factory(Intake intake) {
    return snapshot ->
        !intake.policy().enabled()
            ? null
            : s -> {
              String marker = s.signals().get(DispatchCheck.SIGNAL);
              String id = marker == null || s.shadow() ? null : DispatchMarker.jobId(marker);
              return id == null ? null : new DispatchStart(intake, id);
            };
  }

  @Override
  public UpstreamPlan admitted(UpstreamPlan plan, boolean atBody) {
    if (!started) {
      started = true;
      var unused = intake.store().start(intake.keyPrefix(), jobId);
    }
    return plan;
  }
}
