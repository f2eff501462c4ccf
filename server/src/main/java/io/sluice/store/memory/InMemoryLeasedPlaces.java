package io.sluice.store.memory;

import io.sluice.core.quota.LeasedPlaces;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link LeasedPlaces} in this process, for replicas that share one JVM (tests, simulations): the
 * port's contract counted per replica (places and work; {@code leased_places.lua} keeps a holder
 * per place instead, which only a store a call can time out on needs). Contributions expire on the
 * injected {@link Clock}; an owner's record is dropped once it holds none, so the map is bounded by
 * the places held. Thread-safe (one lock).
 */
public final class InMemoryLeasedPlaces implements LeasedPlaces {
  /** One replica's places of one owner. */
  private record Contribution(long expiresAtMillis, long count, long work) {}

  private final Clock clock;
  private final Map<String, Map<String, Contribution>> owners = new HashMap<>();

  public InMemoryLeasedPlaces(Clock clock) {
    this.clock = clock;
  }

  @Override
  public synchronized CompletionStage<Answer> acquire(
      Scope scope,
      String owner,
      String replica,
      long work,
      int maxPlaces,
      long maxWork,
      long leaseTtlMillis) {
    long now = clock.millis();
    long w = Math.max(0, work);
    String key = scope.key(owner);
    Map<String, Contribution> held = owners.computeIfAbsent(key, k -> new HashMap<>());
    // this replica's own contribution counts even past its expiry: the call shows it is alive
    held.entrySet()
        .removeIf(e -> !e.getKey().equals(replica) && e.getValue().expiresAtMillis() <= now);
    long places = 0;
    long units = 0;
    for (Contribution c : held.values()) {
      places += c.count();
      units += c.work();
    }
    boolean over =
        (maxPlaces > 0 && places >= maxPlaces)
            || (maxWork > 0 && places > 0 && units + w > maxWork);
    if (!over) {
      Contribution mine = held.get(replica);
      held.put(
          replica,
          new Contribution(
              now + Math.max(1, leaseTtlMillis),
              (mine == null ? 0 : mine.count()) + 1,
              (mine == null ? 0 : mine.work()) + w));
    } else if (held.isEmpty()) {
      owners.remove(key);
    }
    return CompletableFuture.completedFuture(new Answer(!over, places, units));
  }

  @Override
  public synchronized CompletionStage<Void> release(
      Scope scope, String owner, String replica, long work, long leaseTtlMillis) {
    String key = scope.key(owner);
    Map<String, Contribution> held = owners.get(key);
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
        owners.remove(key);
      }
    }
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public synchronized CompletionStage<Void> renew(
      Scope scope, String replica, Map<String, Integer> held, long leaseTtlMillis) {
    long expiry = clock.millis() + Math.max(1, leaseTtlMillis);
    for (Map.Entry<String, Integer> e : held.entrySet()) {
      String key = scope.key(e.getKey());
      Map<String, Contribution> record = owners.get(key);
      Contribution mine = record == null ? null : record.get(replica);
      if (record != null && mine != null) {
        record.put(replica, new Contribution(expiry, mine.count(), mine.work()));
      } else if (e.getValue() > 0) {
        owners
            .computeIfAbsent(key, k -> new HashMap<>())
            .put(replica, new Contribution(expiry, e.getValue(), 0));
      }
    }
    return CompletableFuture.completedFuture(null);
  }

  /** Each replica's places of {@code owner} as held now (expired ones until pruned). */
  public synchronized Map<String, Long> contributions(Scope scope, String owner) {
    Map<String, Long> out = new HashMap<>();
    Map<String, Contribution> record = owners.get(scope.key(owner));
    if (record != null) {
      record.forEach((replica, c) -> out.put(replica, c.count()));
    }
    return out;
  }
}
