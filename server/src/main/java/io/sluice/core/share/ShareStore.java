package io.sluice.core.share;

import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * The store that leases pool shares to replicas (Redis, one atomic script per exchange). The store
 * keeps, per pool, each live replica's held share, use and demand with a lease expiry on the
 * store's own clock; an expired replica no longer counts and its share returns to the others.
 *
 * <p>The invariant the store enforces in every exchange: the grant is at most the pool less what
 * the other live replicas hold, and a replica holds {@code max(grant, in use)}, so the shares held
 * never add up to more than the pool (a replica whose grant shrinks below its in-flight work keeps
 * holding that work until it drains; it admits nothing new meanwhile). "In use" is what the replica
 * may have in flight until the answer applies ({@link Exchange#inUseWork}), so what the store
 * counts a replica as holding is never less than what it can have in flight, also while the
 * exchange is on the wire.
 */
public interface ShareStore {
  /** Renews this replica's lease and asks for its target; answers the grant and the peers. */
  CompletionStage<Grant> exchange(Exchange exchange);

  /** Gives up this replica's lease at once (shutdown, after its work drained). */
  CompletionStage<Void> leave(String namespace, String pool, String replica);

  /**
   * Drops the leases of {@code pool} held under ids that start with {@code prefix}, except {@code
   * replica}'s own: the earlier incarnations of this replica (a container restarted in place keeps
   * its pod name), dead with the streams they held, whose shares would otherwise stay counted until
   * their lease expired. Answers how many were dropped. The default drops none (a store whose
   * leases cannot outlive their process).
   */
  default CompletionStage<Integer> supersede(
      String namespace, String pool, String replica, String prefix) {
    return java.util.concurrent.CompletableFuture.completedFuture(0);
  }

  /**
   * One replica's renewal for one pool.
   *
   * @param namespace keeps deployments that share one store apart ({@code quotas.keyPrefix})
   * @param leaseTtlMillis how long the store counts this replica without a renewal
   * @param capacityWork the pool's work units (the policy's own number)
   * @param capacityRequests the pool's request slots (0 = the pool caps none: not shared)
   * @param targetWork the share this replica asks for (the allocation rule's target)
   * @param inUseWork the most work units this replica may have in flight until this exchange's
   *     answer applies: its work in flight, or the limit it admits on meanwhile if that is larger
   *     (the coordinator lowers a shrinking share to its target before it sends)
   * @param demandWork work units in flight, waiting and refused for want of capacity
   * @param classes the same by class, with each class's work in flight (the peers' class rules
   *     count it)
   */
  record Exchange(
      String namespace,
      String pool,
      String replica,
      long leaseTtlMillis,
      long capacityWork,
      int capacityRequests,
      long targetWork,
      int targetRequests,
      long inUseWork,
      int inUseRequests,
      long demandWork,
      int demandRequests,
      List<ClassDemand> classes) {
    public Exchange {
      classes = List.copyOf(classes);
    }
  }

  /**
   * The store's answer.
   *
   * @param work work units this replica may hold now
   * @param requests request slots this replica may hold now
   * @param peers the other live replicas of the pool, as they last reported
   */
  record Grant(long work, int requests, List<Peer> peers) {
    public Grant {
      peers = List.copyOf(peers);
    }
  }

  /** Another live replica: what it holds and what it wants, in total and by class. */
  record Peer(
      String replica,
      long heldWork,
      int heldRequests,
      long demandWork,
      int demandRequests,
      List<ClassDemand> classes) {
    public Peer {
      classes = List.copyOf(classes);
    }
  }
}
