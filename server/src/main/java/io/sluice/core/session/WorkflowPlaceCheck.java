package io.sluice.core.session;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.admission.Reason;
import io.sluice.core.policy.WorkflowPolicy;
import io.sluice.core.quota.SharedWorkflowBudget;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.quota.WorkflowBudget;
import java.util.Objects;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * A place in the workflow's budget in its pool ({@code pools.<name>.workflow}), last before the
 * pool decides: with a store shared by the replicas, one round trip there (the budget is the
 * workflow's across replicas; a store failure follows {@code quotas.failureMode}: open takes the
 * place in this replica's share, closed refuses); else in this process, answered at once. Refused
 * {@code fanout_budget} over the budget. A place granted is given back exactly once; a shadow pass
 * holds none. Applies to a request with a workflow id in a pool whose budget is on.
 */
final class WorkflowPlaceCheck implements AdmissionCheck<SharedWorkflowBudget.Place> {
  private final SharedWorkflowBudget workflows;
  private final TenantQuotas quotas;
  private final AdmissionController controller;

  WorkflowPlaceCheck(
      SharedWorkflowBudget workflows, TenantQuotas quotas, AdmissionController controller) {
    this.workflows = workflows;
    this.quotas = quotas;
    this.controller = controller;
  }

  @Override
  public Stage stage() {
    return Stage.ESTIMATE;
  }

  @Override
  public boolean applies(Request r) {
    return r.subject().workflow() != null && r.subject().pool().workflow().enabled();
  }

  @Override
  public boolean store() {
    return workflows.shared();
  }

  @Override
  public CompletionStage<SharedWorkflowBudget.Place> ask(Request r) {
    Subject s = r.subject();
    String pool = s.pool().name();
    WorkflowPolicy budget = s.pool().workflow();
    PoolState state = controller.pool(pool);
    return workflows.acquire(
        pool,
        Objects.requireNonNull(s.workflow()),
        r.workUnits(),
        budget.maxRequests(),
        budget.maxWork(),
        state == null ? 1.0 : state.replicaShare(),
        quotas.failureMode());
  }

  @Override
  public Verdict answered(SharedWorkflowBudget.Place p, Request r) {
    Subject s = r.subject();
    String pool = s.pool().name();
    WorkflowBudget.Check c = p.check();
    Refusal refusal =
        c.allowed()
            ? null
            : p.storeFailed()
                ? new Refusal(
                    Reason.FANOUT_BUDGET,
                    429,
                    1,
                    "workflow budget across replicas: the store did not answer"
                        + " (quotas.failureMode closed)")
                : new Refusal(
                    Reason.FANOUT_BUDGET,
                    429,
                    controller.tenantRetryAfterSeconds(pool),
                    "workflow has "
                        + c.requests()
                        + " requests ("
                        + c.work()
                        + " work units) in flight or waiting in pool "
                        + pool
                        + (p.where() == SharedWorkflowBudget.Where.LOCAL || !workflows.shared()
                            ? "; its budget on this replica: maxRequests "
                            : " across replicas; its budget: maxRequests ")
                        + c.requestLimit()
                        + ", maxWork "
                        + c.workLimit()
                        + " (0 = no cap)");
    if (c.granted()) {
      return new Place(
          workflows, p, pool, Objects.requireNonNull(s.workflow()), r.workUnits(), refusal);
    }
    return refusal != null ? refusal : Continue.INSTANCE;
  }

  /** The workflow's place in the pool's budget, and the work units it holds. */
  static final class Place extends Held {
    private final SharedWorkflowBudget workflows;
    private final SharedWorkflowBudget.Place place;
    private final String pool;
    private final String workflow;
    private final long work;
    private final @Nullable Refusal refusal;

    Place(
        SharedWorkflowBudget workflows,
        SharedWorkflowBudget.Place place,
        String pool,
        String workflow,
        long work,
        @Nullable Refusal refusal) {
      this.workflows = workflows;
      this.place = place;
      this.pool = pool;
      this.workflow = workflow;
      this.work = work;
      this.refusal = refusal;
    }

    @Override
    public @Nullable Refusal refusal() {
      return refusal;
    }

    @Override
    protected void release(Release how) {
      workflows.release(pool, workflow, work, place);
    }
  }
}
