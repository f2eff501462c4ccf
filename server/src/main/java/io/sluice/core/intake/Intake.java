package io.sluice.core.intake;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.time.Ticker;
import java.time.Clock;

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

  /** The predicted start window of {@code job}, now, in its pool of {@code controller}. */
  StartWindow window(AdmissionController controller, String pool, JobStore.JobView job) {
    PoolState p = controller.pool(pool);
    double rate = 0;
    if (p != null) {
      var configured = p.configuredPolicy();
      rate =
          StartWindow.rate(
              p.startedWorkPerSecond(ticker.nanos()),
              p.replicaShare(),
              StartWindow.prior(
                  configured.capacityWorkUnits(), configured.defaultServiceTime().toNanos()));
    }
    return StartWindow.of(
        clock.millis(),
        job.expiresMillis(),
        job.aheadWork(),
        job.workUnits(),
        rate,
        dispatchIntervalMillis);
  }
}
