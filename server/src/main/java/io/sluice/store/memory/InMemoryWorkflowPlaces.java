package io.sluice.store.memory;

import io.sluice.core.quota.WorkflowPlaces;
import io.sluice.core.store.PoolKeys;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link WorkflowPlaces} in this process, for replicas that share one JVM (tests, simulations): the
 * port's contract counted per replica (places and work). Contributions expire on the injected
 * {@link Clock}; a workflow's record is dropped once it holds none, so the map is bounded by the
 * places held. Thread-safe (one lock).
 */
public final class InMemoryWorkflowPlaces implements WorkflowPlaces {
  /** One replica's places of one workflow. */
  private record Contribution(long expiresAtMillis, long count, long work) {}

  private final Clock clock;
  private final Map<String, Map<String, Contribution>> workflows = new HashMap<>();

  public InMemoryWorkflowPlaces(Clock clock) {
    this.clock = clock;
  }

  @Override
  public synchronized CompletionStage<PlaceAnswer> acquire(
      String namespace,
      String pool,
      String workflow,
      String replica,
      long work,
      int maxRequests,
      long maxWork,
      long leaseTtlMillis) {
    long now = clock.millis();
    long w = Math.max(0, work);
    String key = key(namespace, pool, workflow);
    Map<String, Contribution> held = workflows.computeIfAbsent(key, k -> new HashMap<>());
    held.entrySet()
        .removeIf(e -> !e.getKey().equals(replica) && e.getValue().expiresAtMillis() <= now);
    long requests = 0;
    long units = 0;
    for (Contribution c : held.values()) {
      requests += c.count();
      units += c.work();
    }
    boolean over =
        (maxRequests > 0 && requests >= maxRequests)
            || (maxWork > 0 && requests > 0 && units + w > maxWork);
    if (!over) {
      Contribution mine = held.get(replica);
      held.put(
          replica,
          new Contribution(
              now + Math.max(1, leaseTtlMillis),
              (mine == null ? 0 : mine.count()) + 1,
              (mine == null ? 0 : mine.work()) + w));
    } else if (held.isEmpty()) {
      workflows.remove(key);
    }
    return CompletableFuture.completedFuture(new PlaceAnswer(!over, requests, units));
  }

  @Override
  public synchronized CompletionStage<Void> release(
      String namespace,
      String pool,
      String workflow,
      String replica,
      long work,
      long leaseTtlMillis) {
    String key = key(namespace, pool, workflow);
    Map<String, Contribution> held = workflows.get(key);
    Contribution mine = held == null ? null : held.get(replica);
    if (held != null && mine != null) {
      if (mine.count() <= 1) {
        held.remove(replica);
      } else {
        held.put(
            replica,
            new Contribution(
                mine.expiresAtMillis(),
                mine.count() - 1,
                Math.max(0, mine.work() - Math.max(0, work))));
      }
      if (held.isEmpty()) {
        workflows.remove(key);
      }
    }
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public synchronized CompletionStage<Void> renew(
      String namespace,
      String pool,
      String replica,
      Map<String, Integer> held,
      long leaseTtlMillis) {
    long expiry = clock.millis() + Math.max(1, leaseTtlMillis);
    for (Map.Entry<String, Integer> e : held.entrySet()) {
      String key = key(namespace, pool, e.getKey());
      Map<String, Contribution> record = workflows.get(key);
      Contribution mine = record == null ? null : record.get(replica);
      if (record != null && mine != null) {
        record.put(replica, new Contribution(expiry, mine.count(), mine.work()));
      } else if (e.getValue() > 0) {
        workflows
            .computeIfAbsent(key, k -> new HashMap<>())
            .put(replica, new Contribution(expiry, e.getValue(), 0));
      }
    }
    return CompletableFuture.completedFuture(null);
  }

  /** Each replica's places of {@code workflow} as held now (expired ones until pruned). */
  public synchronized Map<String, Long> contributions(
      String namespace, String pool, String workflow) {
    Map<String, Long> out = new HashMap<>();
    Map<String, Contribution> record = workflows.get(key(namespace, pool, workflow));
    if (record != null) {
      record.forEach((replica, c) -> out.put(replica, c.count()));
    }
    return out;
  }

  private static String key(String namespace, String pool, String workflow) {
    return PoolKeys.key(namespace, pool, "workflow:" + workflow);
  }
}
