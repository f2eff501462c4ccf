package io.sluice.core.quota;

import io.sluice.core.store.PoolKeys;
import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * The store port of leased places under a cap, shared by the replicas: per owner (a tenant, a
 * workflow, an agent run's tool in a turn), the places each replica holds and their work units,
 * each place with an expiry on the store's own clock, so the places of a replica that stops
 * renewing come back. Every call is one atomic step in the store. The tenant slots ({@link
 * TenantSlots}) and the workflow places ({@link WorkflowPlaces}) are this port under a kind of
 * their own ({@code tenant}, {@code workflow}).
 *
 * <p>A shared store may see a call's write after the call failed (a hung store runs it when it
 * resumes): it must then take that write back, or let it expire within the lease, since the caller
 * holds nothing to give back (a failed {@link #acquire} is no place).
 *
 * <p>The layout (Redis: {@code <namespace>{<pool>}:<kind>:<owner>}, a sorted set of one holder per
 * place, its work in its name, scored by its expiry; {@code leased_places.lua}) is the store's; the
 * core sees only this port.
 */
public interface LeasedPlaces {
  /**
   * Takes one place of {@code work} units of {@code owner} for {@code replica} when the owner's
   * live places stay under the caps: refused when {@code maxPlaces > 0} and the places held are
   * already {@code maxPlaces}, or when {@code maxWork > 0}, a place is held and the work held plus
   * {@code work} is over {@code maxWork} (a first place is never refused for its work alone).
   * Expired places are dropped first.
   */
  CompletionStage<Answer> acquire(
      Scope scope,
      String owner,
      String replica,
      long work,
      int maxPlaces,
      long maxWork,
      long leaseTtlMillis);

  /** Gives one of {@code replica}'s places of {@code work} units back (none held: a no-op). */
  CompletionStage<Void> release(
      Scope scope, String owner, String replica, long work, long leaseTtlMillis);

  /**
   * Renews {@code replica}'s places of each owner of {@code held} (owner → places this replica
   * holds) with a fresh expiry; a place that is gone (it expired during a store outage) is written
   * back.
   */
  CompletionStage<Void> renew(
      Scope scope, String replica, Map<String, Integer> held, long leaseTtlMillis);

  /**
   * Whose places: a deployment's key namespace ({@code quotas.keyPrefix}), a pool, and the kind of
   * owner ({@code tenant}, {@code workflow}, ...), so two kinds never share a key.
   */
  record Scope(String namespace, String pool, String kind) {
    /** {@code <namespace>{<pool>}:<kind>:<owner>}, hash-tagged on the pool ({@link PoolKeys}). */
    public String key(String owner) {
      return PoolKeys.key(namespace, pool, kind + ":" + owner);
    }
  }

  /**
   * The store's answer to {@link #acquire}.
   *
   * @param granted whether {@code replica} now holds one more place
   * @param places the owner's live places, every replica, before the call
   * @param work the work units of those places
   */
  record Answer(boolean granted, long places, long work) {}

  /**
   * A typed port of one kind of leased places ({@link TenantSlots}, {@link WorkflowPlaces}): its
   * own acquire and release, and what every kind shares, renewing a replica's places and the port
   * as leased places (which the core's {@link LeasedHolds} keep).
   */
  interface Typed {
    /**
     * Renews {@code replica}'s places of each owner of {@code held} (owner → places this replica
     * holds) with a fresh expiry; a place that is gone (it expired during a store outage) is
     * written back.
     */
    CompletionStage<Void> renew(
        String namespace,
        String pool,
        String replica,
        Map<String, Integer> held,
        long leaseTtlMillis);

    /** This port as leased places of its kind. */
    LeasedPlaces places();
  }

  /**
   * A typed port's calls as leased places (a test's fake adapted call by call): acquire and release
   * are the kind's own, renew is the same for every kind.
   */
  abstract class Adapter implements LeasedPlaces {
    private final Typed typed;

    protected Adapter(Typed typed) {
      this.typed = typed;
    }

    @Override
    public final CompletionStage<Void> renew(
        Scope scope, String replica, Map<String, Integer> held, long leaseTtlMillis) {
      return typed.renew(scope.namespace(), scope.pool(), replica, held, leaseTtlMillis);
    }
  }

  /**
   * A typed port over a leased-places store, under one kind: the stores' classes are these (the
   * kind's acquire and release its own; renew and the store shared).
   */
  abstract class View implements Typed {
    private final LeasedPlaces places;
    private final String kind;

    protected View(LeasedPlaces places, String kind) {
      this.places = places;
      this.kind = kind;
    }

    /** The places of {@code pool} of this kind. */
    protected final Scope scope(String namespace, String pool) {
      return new Scope(namespace, pool, kind);
    }

    @Override
    public final CompletionStage<Void> renew(
        String namespace,
        String pool,
        String replica,
        Map<String, Integer> held,
        long leaseTtlMillis) {
      return places.renew(scope(namespace, pool), replica, held, leaseTtlMillis);
    }

    @Override
    public final LeasedPlaces places() {
      return places;
    }
  }
}
