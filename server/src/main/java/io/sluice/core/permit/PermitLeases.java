package io.sluice.core.permit;

import io.sluice.core.quota.LeasedPlaces;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * The store port of permit leases, shared by the replicas (docs/permits.md): one record per permit
 * granted, named by its id, with an expiry on the store's clock, so that a permit granted at one
 * replica can be renewed or released at any other, exactly once, and a permit nobody renews ends
 * with its lease. The replica that granted a permit holds its pool's place and gives it back when
 * the record is no longer live ({@link #states}, polled by {@link PermitDesk#expireDue}).
 *
 * <p>Every call is one atomic step in the store. Per pool the live records are bounded ({@link
 * #grant}'s {@code maxLeases}); an expired record stays readable as {@link State#EXPIRED} for one
 * lease more (so the granting replica can tell an expiry from a release, and from a release that
 * came after the expiry: {@link State#RELEASED_AFTER_EXPIRY}), then leaves. The layout (Redis: the
 * sorted set {@code <namespace>{<pool>}:permit:leases} of {@code leased_places.lua}, the same
 * script as {@link LeasedPlaces}, its {@code grant}, {@code extend}, {@code end} and {@code states}
 * ops) is the store's.
 */
public interface PermitLeases {
  /**
   * Records a lease of {@code permitId} that ends {@code leaseTtlMillis} from now: false (nothing
   * written) when the pool already has {@code maxLeases} live leases.
   */
  CompletionStage<Boolean> grant(Scope scope, String permitId, int maxLeases, long leaseTtlMillis);

  /** Extends a live lease to {@code leaseTtlMillis} from now: false when released or expired. */
  CompletionStage<Boolean> renew(Scope scope, String permitId, long leaseTtlMillis);

  /** Ends a live lease: true for exactly one call; false when released or expired already. */
  default CompletionStage<Boolean> release(Scope scope, String permitId) {
    return end(scope, permitId).thenApply(e -> e == Ended.RELEASED);
  }

  /**
   * Ends the lease record of {@code permitId}, whatever its state, in one atomic step: {@link
   * Ended#RELEASED} for a live one (exactly one call), {@link Ended#AFTER_EXPIRY} for one whose
   * lease ran out and that nobody released yet (exactly one call; {@link #states} then reads it
   * {@link State#RELEASED_AFTER_EXPIRY} until it leaves), {@link Ended#GONE} otherwise.
   */
  CompletionStage<Ended> end(Scope scope, String permitId);

  /** What {@link #end} found. */
  enum Ended {
    RELEASED,
    /** Its lease had run out; this is the first release since. */
    AFTER_EXPIRY,
    /** Released already, never granted, or expired long ago. */
    GONE
  }

  /** Where each of {@code permitIds} stands now (every id asked is answered). */
  CompletionStage<Map<String, State>> states(Scope scope, Collection<String> permitIds);

  /** A lease record's state. */
  enum State {
    LIVE,
    /** Its lease ran out (no renew in time). */
    EXPIRED,
    /** Its lease ran out, then a release came ({@link Ended#AFTER_EXPIRY}) at some replica. */
    RELEASED_AFTER_EXPIRY,
    /** Released (here or at another replica), or never granted, or expired long ago. */
    GONE
  }

  /** The leases of one pool of a deployment's key namespace ({@code quotas.keyPrefix}). */
  record Scope(String namespace, String pool) {
    /** {@code <namespace>{<pool>}:permit:leases}, hash-tagged on the pool. */
    public String key() {
      return new LeasedPlaces.Scope(namespace, pool, "permit").key("leases");
    }
  }
}
