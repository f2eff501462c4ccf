package io.sluice.core.session;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.quota.WorkflowBudget;
import io.sluice.core.retry.RetryControl;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;

/**
 * The pre-decision checks of one runtime snapshot, in their order: built once ({@link #of}), shared
 * by every request of the snapshot. What the snapshot turns off is left out here (retry control
 * off, no store shared with other replicas); what depends on the request (its tenant's tier, its
 * workflow) is skipped per request by {@link AdmissionCheck#applies}, without allocating.
 *
 * <p>The order, and when each runs:
 *
 * <ol>
 *   <li>headers: the tenant's request rate ({@link TenantRateCheck}), then the retry attempt
 *       ({@link RetryAttemptCheck});
 *   <li>with the estimate: the tenant's token reservation ({@link TokenReservationCheck}), its slot
 *       across replicas ({@link TenantSlotCheck}), the workflow's place ({@link
 *       WorkflowPlaceCheck}); then the pool decides.
 * </ol>
 */
public final class CheckChain {
  private final AdmissionCheck<?>[] checks;

  /** {@code checks} in order, every {@link AdmissionCheck.Stage#HEADERS} one first. */
  CheckChain(List<? extends AdmissionCheck<?>> checks) {
    AdmissionCheck.Stage last = AdmissionCheck.Stage.HEADERS;
    for (AdmissionCheck<?> c : checks) {
      if (c.stage().compareTo(last) < 0) {
        throw new IllegalArgumentException("a headers check after an estimate check: " + c);
      }
      last = c.stage();
    }
    this.checks = checks.toArray(new AdmissionCheck<?>[0]);
  }

  /** The checks of a snapshot ({@link Sessions}), in order. */
  static CheckChain of(
      TenantQuotas quotas,
      Clock clock,
      SessionListener listener,
      AdmissionController controller,
      TenantCaps caps,
      WorkflowBudget workflows,
      RetryControl retries) {
    List<AdmissionCheck<?>> c = new ArrayList<>();
    c.add(new TenantRateCheck(quotas, clock, listener));
    if (retries.enabled()) {
      c.add(new RetryAttemptCheck(retries, controller, listener));
    }
    c.add(new TokenReservationCheck(quotas, clock, listener));
    if (caps != TenantCaps.none()) { // no store shared with other replicas: never applies
      c.add(new TenantSlotCheck(caps, quotas, controller, listener));
    }
    c.add(new WorkflowPlaceCheck(workflows, controller));
    return new CheckChain(c);
  }

  int size() {
    return checks.length;
  }

  AdmissionCheck<?> get(int i) {
    return checks[i];
  }

  /** The checks, in order (for tests and the admin view). */
  public List<AdmissionCheck<?>> checks() {
    return List.of(checks);
  }
}
