package io.sluice.core.quota;

import java.util.concurrent.CompletionStage;

/**
 * The store that counts a workflow's places in a pool's budget ({@code pools.<name>.workflow})
 * across replicas: per workflow and pool, the requests held and their work units, each place with
 * an expiry on the store's own clock, so the places of a replica that stops renewing come back
 * (docs/estimation.md, "Fan-out", across replicas). Every call is one atomic step in the store.
 *
 * <p>A shared store may see a call's write after the call failed (a hung store runs it when it
 * resumes): it must then take that write back, or let it expire within the lease, since the caller
 * holds nothing to give back (a failed {@link #acquire} is no place).
 *
 * <p>It is the {@link LeasedPlaces} port under the kind {@value #KIND} (the budget's {@code
 * maxRequests} its {@code maxPlaces}): the stores implement it with {@link Over}, the core keeps
 * its holds through {@link #places()}. The layout (Redis: {@code
 * <namespace>{<pool>}:workflow:<id>}, a sorted set of one holder per place, its work in its name,
 * scored by its expiry) is the store's; the core sees only this port.
 */
public interface WorkflowPlaces extends LeasedPlaces.Typed {
  /** The kind of owner of a workflow's places in {@link LeasedPlaces} (its key's part). */
  String KIND = "workflow";

  /** The leased places of {@code pool}'s workflows. */
  static LeasedPlaces.Scope scope(String namespace, String pool) {
    return new LeasedPlaces.Scope(namespace, pool, KIND);
  }

  /**
   * Takes one place of {@code work} units for {@code replica} when the workflow's live places stay
   * within the budget: refused when {@code maxRequests > 0} and the places held are already {@code
   * maxRequests}, or when {@code maxWork > 0}, a place is held and the work held plus {@code work}
   * is over {@code maxWork} (a first place is never refused for its work alone, as in {@link
   * WorkflowBudget}). Expired places are dropped first.
   */
  CompletionStage<PlaceAnswer> acquire(
      String namespace,
      String pool,
      String workflow,
      String replica,
      long work,
      int maxRequests,
      long maxWork,
      long leaseTtlMillis);

  /** Gives one of {@code replica}'s places of {@code work} units back (none held: a no-op). */
  CompletionStage<Void> release(
      String namespace,
      String pool,
      String workflow,
      String replica,
      long work,
      long leaseTtlMillis);

  /**
   * The store's answer to {@link #acquire}.
   *
   * @param granted whether {@code replica} now holds one more place
   * @param requests the workflow's live places, every replica, before the call
   * @param work the work units of those places
   */
  record PlaceAnswer(boolean granted, long requests, long work) {}

  /** This port as leased places of {@link #KIND} (a test's fake is adapted call by call). */
  @Override
  default LeasedPlaces places() {
    WorkflowPlaces wp = this;
    return new LeasedPlaces.Adapter(this) {
      @Override
      public CompletionStage<Answer> acquire(
          Scope scope,
          String owner,
          String replica,
          long work,
          int maxPlaces,
          long maxWork,
          long leaseTtlMillis) {
        return wp.acquire(
                scope.namespace(),
                scope.pool(),
                owner,
                replica,
                work,
                maxPlaces,
                maxWork,
                leaseTtlMillis)
            .thenApply(a -> new Answer(a.granted(), a.requests(), a.work()));
      }

      @Override
      public CompletionStage<Void> release(
          Scope scope, String owner, String replica, long work, long leaseTtlMillis) {
        return wp.release(scope.namespace(), scope.pool(), owner, replica, work, leaseTtlMillis);
      }
    };
  }

  /** The workflow places of a {@link LeasedPlaces} store, under {@link #KIND}. */
  class Over extends LeasedPlaces.View implements WorkflowPlaces {
    protected Over(LeasedPlaces places) {
      super(places, KIND);
    }

    @Override
    public final CompletionStage<PlaceAnswer> acquire(
        String namespace,
        String pool,
        String workflow,
        String replica,
        long work,
        int maxRequests,
        long maxWork,
        long leaseTtlMillis) {
      return places()
          .acquire(
              scope(namespace, pool), workflow, replica, work, maxRequests, maxWork, leaseTtlMillis)
          .thenApply(a -> new PlaceAnswer(a.granted(), a.places(), a.work()));
    }

    @Override
    public final CompletionStage<Void> release(
        String namespace,
        String pool,
        String workflow,
        String replica,
        long work,
        long leaseTtlMillis) {
      return places().release(scope(namespace, pool), workflow, replica, work, leaseTtlMillis);
    }
  }
}
