package io.sluice.core.intake;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.admission.Reason;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.Subject;
import io.sluice.core.time.Ticker;
import java.time.Clock;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * One snapshot's intake: its policy, the job store, where its keys live, and how it predicts a
 * start window (the pools' completion rates). Shared by the snapshot's checks.
 *
 * @param keyPrefix the store's key prefix ({@code quotas.keyPrefix})
 * @param dispatchIntervalMillis how often a replica looks for room to start a job (the start
 *     window's slack)
 */
public record Intake(
    IntakePolicy policy,
    JobStore store,
    String keyPrefix,
    Clock clock,
    Ticker ticker,
    long dispatchIntervalMillis) {

  JobStore.Caps caps() {
    return new JobStore.Caps(
        policy.maxJobsPerTenant(), policy.maxWorkPerTenant(), policy.retention().toMillis());
  }

  /**
   * The job {@code s}'s request becomes: a new operation id, its body (a copy of {@code b}),
   * tenant, pool, class, route, model and work units, created now, expiring {@code
   * intake.freshness} later.
   */
  JobStore.NewJob newJob(Subject s, long workUnits, @Nullable String model, AdmissionCheck.Body b) {
    long now = clock.millis();
    return new JobStore.NewJob(
        OperationIds.next(),
        s.tenant().id(),
        s.pool().name(),
        s.requestClass().name(),
        s.route(),
        model,
        workUnits,
        now,
        now + policy.freshness().toMillis(),
        Arrays.copyOfRange(b.bytes(), b.offset(), b.offset() + b.length()));
  }

  /**
   * The answer to a job the store acknowledged ({@code e} accepted): the queued object with its
   * position and predicted start window; {@code insteadOf}: the refusal it was accepted instead of
   * (null: it asked for background mode).
   */
  AdmissionCheck.Answered accepted(
      AdmissionController controller,
      JobStore.NewJob job,
      JobStore.Enqueued e,
      @Nullable Reason insteadOf) {
    JobStore.JobView view =
        new JobStore.JobView(
            job.id(),
            job.pool(),
            JobStatus.QUEUED,
            job.model(),
            job.workUnits(),
            job.createdMillis(),
            job.expiresMillis(),
            e.position(),
            e.aheadWork(),
            null,
            null);
    StartWindow window = window(controller, job.pool(), view);
    return JobAnswers.answer(
        Reason.ACCEPTED, view, window, IntakeNote.of(IntakeNote.QUEUED, view, window, insteadOf));
  }

  /**
   * The predicted start window of {@code job}, now, in its pool of {@code controller} ({@link
   * StartWindow#predict}): what the pool can run (its capacity over its learned mean hold, or its
   * declared {@code defaultServiceTime} before any completion, whichever is shorter; its slots)
   * bounds the earliest start (the jobs ahead only); the latest assumes the background class gets
   * what its queue was measured to drain lately, with a margin ({@link StartWindow#drainShare}: the
   * store's {@link JobStore#drainedWorkPerSecond}), or without that evidence yet what the pool can
   * give it now (none while a request waits in Sluice's queue, else the part the other classes
   * leave idle by work and by request slots); never less than {@link StartWindow#MIN_IDLE} of what
   * the pool can run; the work waiting in Sluice's queues goes ahead of it (this replica's, over
   * its share: the whole pool's).
   */
  StartWindow window(AdmissionController controller, String pool, JobStore.JobView job) {
    long now = clock.millis();
    PoolState p = controller.pool(pool);
    if (p == null) {
      return StartWindow.predict(
          now, job.expiresMillis(), job.aheadWork(), 0, 0, job.workUnits(), 0, 0, 0);
    }
    var configured = p.configuredPolicy();
    PoolState.Snapshot s = p.snapshot(ticker.nanos());
    double declared = configured.defaultServiceTime().toNanos();
    double serviceNanos = s.meanHoldNanos() > 0 ? s.meanHoldNanos() : declared;
    double canRun =
        StartWindow.canRun(
            configured.capacityWorkUnits(),
            configured.maxRequests(),
            job.workUnits(),
            serviceNanos);
    // the earliest start at the configured capacity too: a hold learned under load (or from
    // longer requests of other classes) is no bound on how fast the jobs may run
    double canRunFast =
        StartWindow.canRun(
            configured.capacityWorkUnits(),
            configured.maxRequests(),
            job.workUnits(),
            Math.min(serviceNanos, declared));
    // what the classes hold and wait for on this replica (not PoolState#demand: reading it hands
    // the refusals counted since to the share coordinator)
    String[] names = s.classNames();
    long othersInFlight = 0;
    int othersRequests = 0;
    long othersQueued = 0;
    long queued = 0;
    boolean waiting = false;
    for (int i = 0; i < names.length; i++) {
      long q = p.queuedWork(names[i]);
      queued += q;
      waiting |= p.queueDepth(names[i]) > 0;
      if (!policy.dispatches(names[i])) {
        othersInFlight += s.classWork()[i];
        othersRequests += s.classRequests()[i];
        othersQueued += q;
      }
    }
    double share = p.replicaShare();
    // the room now: none while a request waits (no job is dispatched then); else the part the
    // other classes leave idle, by work and, when the pool caps them, by request slots
    double roomNow =
        waiting
            ? 0
            : Math.min(
                StartWindow.idleShare(othersInFlight, (long) (s.capacityWorkUnits() * share)),
                p.policy().maxRequests() > 0
                    ? StartWindow.idleShare(
                        othersRequests, (long) (p.policy().maxRequests() * share))
                    : 1.0);
    double measured = store.drainedWorkPerSecond(keyPrefix, pool, now);
    // with a measured drain, the floor at the configured capacity at most: a hold learned from
    // requests cut short (a saturated front end) is no promise either
    double canRunLate =
        Double.isNaN(measured)
            ? canRun
            : StartWindow.canRun(
                configured.capacityWorkUnits(),
                configured.maxRequests(),
                job.workUnits(),
                Math.max(serviceNanos, declared));
    long othersAhead = (long) StartWindow.poolRate(othersQueued, share);
    StartWindow w =
        StartWindow.predict(
            now,
            job.expiresMillis(),
            job.aheadWork(),
            othersAhead,
            (long) StartWindow.poolRate(queued, share),
            job.workUnits(),
            canRunLate,
            StartWindow.drainShare(measured, canRunLate, roomNow),
            dispatchIntervalMillis);
    // the earliest: the jobs ahead only (the other classes' waiting requests may time out first)
    long earliest =
        StartWindow.predict(now, job.expiresMillis(), job.aheadWork(), 0, 0, 0, canRunFast, 1, 0)
            .earliestMillis();
    return new StartWindow(Math.min(earliest, w.earliestMillis()), w.latestMillis());
  }
}
