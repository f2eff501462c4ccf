package io.sluice.core.session;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.admission.Reason;
import io.sluice.core.policy.WorkflowPolicy;
import io.sluice.core.quota.WorkflowBudget;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * A place in the workflow's budget in its pool ({@code pools.<name>.workflow}), last before the
 * pool decides: in this process, answered at once; refused {@code fanout_budget} over the budget. A
 * place granted is given back exactly once; a shadow pass holds none. Applies to a request with a
 * workflow id in a pool whose budget is on.
 */
final class WorkflowPlaceCheck implements AdmissionCheck<WorkflowBudget.Check> {
  private final WorkflowBudget workflows;
  private final AdmissionController controller;

  WorkflowPlaceCheck(WorkflowBudget workflows, AdmissionController controller) {
    this.workflows = workflows;
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
    return false;
  }

  @Override
  public CompletionStage<WorkflowBudget.Check> ask(Request r) {
    Subject s = r.subject();
    String pool = s.pool().name();
    WorkflowPolicy budget = s.pool().workflow();
    PoolState state = controller.pool(pool);
    return CompletableFuture.completedFuture(
        workflows.acquire(
            pool,
            Objects.requireNonNull(s.workflow()),
            r.workUnits(),
            budget.maxRequests(),
            budget.maxWork(),
            state == null ? 1.0 : state.replicaShare()));
  }

  @Override
  public Verdict answered(WorkflowBudget.Check c, Request r) {
    Subject s = r.subject();
    String pool = s.pool().name();
    Refusal refusal =
        c.allowed()
            ? null
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
                    + "; its budget here: maxRequests "
                    + c.requestLimit()
                    + ", maxWork "
                    + c.workLimit()
                    + " (0 = no cap)");
    if (c.granted()) {
      return new Place(
          workflows, pool, Objects.requireNonNull(s.workflow()), r.workUnits(), refusal);
    }
    return refusal != null ? refusal : Continue.INSTANCE;
  }

  /** The workflow's place in the pool's budget, and the work units it holds. */
  static final class Place extends Held {
    private final WorkflowBudget workflows;
    private final String pool;
    private final String workflow;
    private final long work;
    private final @Nullable Refusal refusal;

    Place(
        WorkflowBudget workflows,
        String pool,
        String workflow,
        long work,
        @Nullable Refusal refusal) {
      this.workflows = workflows;
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
      workflows.release(pool, workflow, work);
    }
  }
}
