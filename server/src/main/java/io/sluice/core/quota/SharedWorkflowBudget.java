package io.sluice.core.quota;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * A workflow's budget in its pool ({@code pools.<name>.workflow}) counted in the store the replicas
 * share ({@link WorkflowPlaces}), so {@code maxRequests} and {@code maxWork} are the workflow's
 * whatever the replica count: one store round trip per request with a workflow id, the place given
 * back exactly once however the request ends (the session guards that).
 *
 * <p>This replica's places carry a lease expiry on the store's clock; {@link #renew} (every {@code
 * replicas.renewInterval}, beside the pool shares and the tenant slots) refreshes them, so the
 * places of a replica that died come back within the lease. The set renewed is bounded by this
 * replica's in-flight and queued requests with a workflow id, and by the local budget's {@code
 * maxWorkflows} (a workflow past it runs untracked, as in {@link WorkflowBudget}). The holds are
 * {@link LeasedHolds} of kind {@link WorkflowPlaces#KIND}, as the tenant slots' are of theirs.
 *
 * <p>When the store does not answer, {@code quotas.failureMode} decides: open, the place is taken
 * in this replica's share of the budget ({@link WorkflowBudget}, the per-replica rule); closed, the
 * request is refused. {@link #local} (no store shared with other replicas): every place is the
 * local budget's. Thread-safe (one monitor over the held set; the store is never called under it).
 */
public final class SharedWorkflowBudget {
  private final WorkflowBudget local;
  private final @Nullable LeasedHolds holds;

  /**
   * @param local the per-replica budget: the fallback while the store is down (failure mode open)
   * @param namespace the store's key namespace of this deployment ({@code quotas.keyPrefix})
   * @param replica this replica's id (the same as its pool shares')
   * @param leaseTtlMillis the current {@code replicas.leaseTtl} (reloadable)
   */
  public SharedWorkflowBudget(
      WorkflowBudget local,
      WorkflowPlaces store,
      String namespace,
      String replica,
      LongSupplier leaseTtlMillis) {
    this.local = local;
    this.holds =
        new LeasedHolds(store.places(), namespace, WorkflowPlaces.KIND, replica, leaseTtlMillis);
  }

  private SharedWorkflowBudget(WorkflowBudget local) {
    this.local = local;
    this.holds = null;
  }

  /** No store shared with other replicas: every place is {@code budget}'s, answered at once. */
  public static SharedWorkflowBudget local(WorkflowBudget budget) {
    return new SharedWorkflowBudget(budget);
  }

  /** Whether places are counted in a shared store (a round trip per request). */
  public boolean shared() {
    return holds != null;
  }

  /** The per-replica budget (the whole budget without a shared store; the fallback with one). */
  public WorkflowBudget localBudget() {
    return local;
  }

  /**
   * Takes a place for one request of {@code work} units. The stage never fails: a store failure is
   * answered by {@code mode}. When {@link Place#check()} is granted, the caller owns the place and
   * gives it back once with {@link #release}.
   *
   * @param share this replica's fraction of the pool (the local rule's part of the budget)
   */
  public CompletionStage<Place> acquire(
      String pool,
      String workflow,
      long work,
      int maxRequests,
      long maxWork,
      double share,
      TenantQuotas.FailureMode mode) {
    LeasedHolds h = holds;
    if (h == null) {
      return CompletableFuture.completedFuture(
          new Place(
              local.acquire(pool, workflow, work, maxRequests, maxWork, share),
              Where.LOCAL,
              false));
    }
    String id = WorkflowBudget.normalize(workflow);
    long w = Math.max(0, work);
    CompletionStage<LeasedPlaces.@Nullable Answer> answer =
        h.acquire(pool, id, w, maxRequests, maxWork, local.maxWorkflows());
    if (answer == null) {
      return CompletableFuture.completedFuture(
          new Place(WorkflowBudget.Check.UNTRACKED, Where.NONE, false));
    }
    return answer.thenApply(
        a -> {
          if (a == null) {
            if (mode == TenantQuotas.FailureMode.OPEN) {
              return new Place(
                  local.acquire(pool, id, w, maxRequests, maxWork, share), Where.LOCAL, true);
            }
            return new Place(
                new WorkflowBudget.Check(false, false, 0, 0, maxRequests, maxWork),
                Where.NONE,
                true);
          }
          boolean granted = a.granted();
          long requests = a.places() + (granted ? 1 : 0);
          long units = a.work() + (granted ? w : 0);
          return new Place(
              new WorkflowBudget.Check(
                  granted,
                  granted,
                  (int) Math.min(Integer.MAX_VALUE, requests),
                  units,
                  Math.max(0, maxRequests),
                  Math.max(0, maxWork)),
              granted ? Where.SHARED : Where.NONE,
              false);
        });
  }

  /** Gives back the place {@code place} holds (a no-op when it holds none). */
  public void release(String pool, String workflow, long work, Place place) {
    if (!place.check().granted()) {
      return;
    }
    if (place.where() == Where.LOCAL) {
      local.release(pool, workflow, work);
      return;
    }
    LeasedHolds h = holds;
    if (h != null && place.where() == Where.SHARED) {
      h.release(pool, WorkflowBudget.normalize(workflow), work);
    }
  }

  /**
   * Renews this replica's places of every workflow it holds some of: one store call per pool (per
   * {@value LeasedHolds#RENEW_BATCH} workflows). Completes when every call was answered or failed.
   */
  public CompletionStage<Void> renew() {
    LeasedHolds h = holds;
    return h == null ? CompletableFuture.completedFuture(null) : h.renew();
  }

  /** Places this replica holds in the shared store now, all workflows and pools (a gauge). */
  public long held() {
    LeasedHolds h = holds;
    return h == null ? 0 : h.held();
  }

  /** Places this replica holds of {@code workflow} in {@code pool} in the shared store. */
  public int held(String pool, String workflow) {
    LeasedHolds h = holds;
    return h == null ? 0 : h.held(pool, WorkflowBudget.normalize(workflow));
  }

  /** Calls the store did not answer (a counter). */
  public long storeFailures() {
    LeasedHolds h = holds;
    return h == null ? 0 : h.storeFailures();
  }

  /** Where a place is held. */
  public enum Where {
    /** Nowhere (refused, or untracked). */
    NONE,
    /** In this replica's share ({@link WorkflowBudget}). */
    LOCAL,
    /** In the shared store. */
    SHARED
  }

  /**
   * What {@link #acquire} answers.
   *
   * @param check the budget's answer (requests and work: across replicas when {@code SHARED})
   * @param where where the place is held
   * @param storeFailed the store did not answer; the failure mode decided
   */
  public record Place(WorkflowBudget.Check check, Where where, boolean storeFailed) {}
}
