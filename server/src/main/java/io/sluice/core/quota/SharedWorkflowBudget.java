package io.sluice.core.quota;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 * maxWorkflows} (a workflow past it runs untracked, as in {@link WorkflowBudget}).
 *
 * <p>When the store does not answer, {@code quotas.failureMode} decides: open, the place is taken
 * in this replica's share of the budget ({@link WorkflowBudget}, the per-replica rule); closed, the
 * request is refused. {@link #local} (no store shared with other replicas): every place is the
 * local budget's. Thread-safe (one monitor over the held set; the store is never called under it).
 */
public final class SharedWorkflowBudget {
  /** Workflows renewed per store call. */
  static final int RENEW_BATCH = 256;

  private final WorkflowBudget local;
  private final @Nullable WorkflowPlaces store;
  private final String namespace;
  private final String replica;
  private final LongSupplier leaseTtlMillis;
  // guarded by this
  private final Map<Key, Counts> held = new HashMap<>();
  private long heldTotal;
  private long storeFailures;

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
    this.store = store;
    this.namespace = namespace;
    this.replica = replica;
    this.leaseTtlMillis = leaseTtlMillis;
  }

  private SharedWorkflowBudget(WorkflowBudget local) {
    this.local = local;
    this.store = null;
    this.namespace = "";
    this.replica = "";
    this.leaseTtlMillis = () -> 0;
  }

  /** No store shared with other replicas: every place is {@code budget}'s, answered at once. */
  public static SharedWorkflowBudget local(WorkflowBudget budget) {
    return new SharedWorkflowBudget(budget);
  }

  /** Whether places are counted in a shared store (a round trip per request). */
  public boolean shared() {
    return store != null;
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
    WorkflowPlaces s = store;
    if (s == null) {
      return CompletableFuture.completedFuture(
          new Place(
              local.acquire(pool, workflow, work, maxRequests, maxWork, share),
              Where.LOCAL,
              false));
    }
    String id = WorkflowBudget.normalize(workflow);
    Key k = new Key(pool, id);
    long w = Math.max(0, work);
    synchronized (this) {
      Counts c = held.get(k);
      if (c == null) {
        if (held.size() >= local.maxWorkflows()) {
          return CompletableFuture.completedFuture(
              new Place(WorkflowBudget.Check.UNTRACKED, Where.NONE, false));
        }
        c = new Counts();
        held.put(k, c);
      }
      c.pending++;
    }
    CompletionStage<WorkflowPlaces.PlaceAnswer> answer;
    try {
      answer = s.acquire(namespace, pool, id, replica, w, maxRequests, maxWork, leaseTtl());
    } catch (RuntimeException e) {
      answer = CompletableFuture.failedFuture(e);
    }
    return answer.handle(
        (a, e) -> {
          boolean granted = e == null && a != null && a.granted();
          synchronized (this) {
            Counts c = held.computeIfAbsent(k, x -> new Counts());
            c.pending--;
            if (granted) {
              c.held++;
              heldTotal++;
            }
            if (c.idle()) {
              held.remove(k);
            }
            if (e != null || a == null) {
              storeFailures++;
            }
          }
          if (e != null || a == null) {
            if (mode == TenantQuotas.FailureMode.OPEN) {
              return new Place(
                  local.acquire(pool, id, w, maxRequests, maxWork, share), Where.LOCAL, true);
            }
            return new Place(
                new WorkflowBudget.Check(false, false, 0, 0, maxRequests, maxWork),
                Where.NONE,
                true);
          }
          long requests = a.requests() + (granted ? 1 : 0);
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
    WorkflowPlaces s = store;
    if (s == null || place.where() != Where.SHARED) {
      return;
    }
    String id = WorkflowBudget.normalize(workflow);
    Key k = new Key(pool, id);
    synchronized (this) {
      Counts c = held.get(k);
      if (c == null || c.held <= 0) {
        return;
      }
      c.held--;
      heldTotal--;
      if (c.idle()) {
        held.remove(k);
      }
    }
    try {
      var unused = s.release(namespace, pool, id, replica, Math.max(0, work), leaseTtl());
    } catch (RuntimeException e) {
      // the place expires within the lease
    }
  }

  /**
   * Renews this replica's places of every workflow it holds some of: one store call per pool (per
   * {@value #RENEW_BATCH} workflows). Completes when every call was answered or failed.
   */
  public CompletionStage<Void> renew() {
    WorkflowPlaces s = store;
    if (s == null) {
      return CompletableFuture.completedFuture(null);
    }
    Map<String, Map<String, Integer>> byPool = new LinkedHashMap<>();
    synchronized (this) {
      for (Map.Entry<Key, Counts> e : held.entrySet()) {
        if (e.getValue().held > 0) {
          byPool
              .computeIfAbsent(e.getKey().pool(), p -> new LinkedHashMap<>())
              .put(e.getKey().workflow(), e.getValue().held);
        }
      }
    }
    long ttl = leaseTtl();
    List<CompletableFuture<Void>> sent = new ArrayList<>();
    for (Map.Entry<String, Map<String, Integer>> e : byPool.entrySet()) {
      Map<String, Integer> batch = new LinkedHashMap<>();
      for (Map.Entry<String, Integer> t : e.getValue().entrySet()) {
        batch.put(t.getKey(), t.getValue());
        if (batch.size() == RENEW_BATCH) {
          sent.add(renew(s, e.getKey(), batch, ttl));
          batch = new LinkedHashMap<>();
        }
      }
      if (!batch.isEmpty()) {
        sent.add(renew(s, e.getKey(), batch, ttl));
      }
    }
    return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
  }

  private CompletableFuture<Void> renew(
      WorkflowPlaces s, String pool, Map<String, Integer> batch, long ttl) {
    try {
      return s.renew(namespace, pool, replica, batch, ttl)
          .toCompletableFuture()
          .exceptionally(e -> null);
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(null);
    }
  }

  /** Places this replica holds in the shared store now, all workflows and pools (a gauge). */
  public synchronized long held() {
    return heldTotal;
  }

  /** Places this replica holds of {@code workflow} in {@code pool} in the shared store. */
  public synchronized int held(String pool, String workflow) {
    Counts c = held.get(new Key(pool, WorkflowBudget.normalize(workflow)));
    return c == null ? 0 : c.held;
  }

  /** Calls the store did not answer (a counter). */
  public synchronized long storeFailures() {
    return storeFailures;
  }

  private long leaseTtl() {
    return Math.max(1, leaseTtlMillis.getAsLong());
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

  private record Key(String pool, String workflow) {}

  private static final class Counts {
    int held;
    int pending;

    boolean idle() {
      return held <= 0 && pending <= 0;
    }
  }
}
