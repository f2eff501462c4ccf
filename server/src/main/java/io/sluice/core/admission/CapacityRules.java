package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import org.jspecify.annotations.Nullable;

/**
 * Whether a request may start, on what the pool's {@link CapacityLedger} holds. Admission rule for
 * class {@code k} asking for {@code w} work units, with capacity {@code C}, in-flight work {@code U
 * = Σ U_j}, reserved {@code R_j}, guaranteed {@code G_j = R_j - lendable_j}:
 *
 * <ol>
 *   <li>{@code U_k + w <= R_k}, or the class may borrow ({@code borrow: true}); else {@code
 *       class_share};
 *   <li>{@code U_k + w + Σ_{j≠k} max(U_j, G_j) <= C}: never occupy another class's idle guaranteed
 *       share; else {@code pool_saturated}.
 * </ol>
 *
 * Invariant (holds after every admission when {@code Σ G_j <= C}): {@code Σ_j max(U_j, G_j) <= C},
 * so a class below its guaranteed share is always admitted at once.
 *
 * <p><b>Request slots.</b> When the pool caps concurrent requests ({@code maxRequests = M > 0}),
 * the same two rules hold on that dimension, checked first: with {@code N_j} requests in flight,
 * reserved slots {@code RN_j = max(1, floor(reservedShare_j × M))} (0 for a zero share) and
 * guaranteed slots {@code GN_j = floor(guaranteedShare_j × M)}: the pool is below {@code M}; {@code
 * N_k + 1 <= RN_k} or the class may borrow (else {@code class_share}); {@code N_k + 1 + Σ_{j≠k}
 * max(N_j, GN_j) <= M} (else {@code pool_saturated}). So a class's guaranteed share protects its
 * request slots as well as its work units: when the request cap binds (a model server's batch
 * slots), interactive's 70 % is 70 % of the slots.
 *
 * <p><b>Replica share.</b> When several replicas share the pool through a store, this replica may
 * hold only its granted share of the pool's work units and request slots ({@link
 * CapacityLedger#applyShare}): {@code U + w <= S} (and {@code N + 1 <= SN}), else {@code
 * pool_saturated} with the share in the message. The class rules above then stay the pool's own:
 * {@code C}, {@code M}, the reserves and the guarantees are the policy's numbers, and {@code U_j},
 * {@code N_j} count this replica's work plus the other replicas' as of their last renewal ({@link
 * ClassSlot#peerWork()}). So a class's guarantee holds for the pool as a whole and is not cut into
 * one piece per replica (each piece would strand the remainder smaller than the next request). A
 * share given without the peers' class loads (the store is down: a fallback share) scales the class
 * rules to the share instead, as a pool of the share's size. Without a share the ledger is the
 * whole pool.
 *
 * <p>Not thread-safe: guarded by the pool lock, as the ledger it reads. No clock.
 */
final class CapacityRules {
  private final CapacityLedger ledger;

  CapacityRules(CapacityLedger ledger) {
    this.ledger = ledger;
  }

  // what sumOthers found for the class asked about (scratch: the pool lock guards it, no
  // allocation)
  private long othersWork;
  private int othersRequests;
  private long othersKeptWork;
  private int othersKeptRequests;

  /**
   * The other classes' protected load, {@code Σ_{j≠k} max(U_j, G_j)} and {@code Σ_{j≠k} max(N_j,
   * GN_j)} (with the peers' load when the class rules count the pool as a whole), and on this
   * replica's share the other classes' idle guarantees placed here: one pass over the slots, the
   * same terms for {@link #checkCapacity} and {@link #classHeadroom}.
   */
  private void sumOthers(ClassSlot k) {
    long protectedWork = ledger.otherPeerWork();
    int protectedRequests = ledger.otherPeerRequests();
    long keptWork = 0;
    int keptRequests = 0;
    java.util.List<ClassSlot> slots = ledger.slots();
    for (int i = 0; i < slots.size(); i++) { // indexed: no iterator per decision
      ClassSlot j = slots.get(i);
      if (j != k) {
        protectedWork += Math.max(ledger.classWork(j), j.guaranteed());
        protectedRequests += Math.max(j.requests() + j.peerRequests(), j.guaranteedRequests());
        keptWork += Math.max(0, j.idleWork() - j.work());
        keptRequests += Math.max(0, j.idleRequests() - j.requests());
      }
    }
    othersWork = protectedWork;
    othersRequests = protectedRequests;
    othersKeptWork = keptWork;
    othersKeptRequests = keptRequests;
  }

  /**
   * Why a request cannot start now: the reason, what must drain first (work units, or request slots
   * when {@code drainRequests > 0}) and a message.
   */
  record Shortfall(Reason reason, long drainWork, int drainRequests, String message) {}

  /** Said of a class refusal counted with the other replicas' load. */
  private static final String ACROSS = " (across the replicas)";

  /** " (this replica's share: 3 of 8)" when a share binds below the pool's own, else "". */
  private String shareNote(long limit, long pool) {
    return ledger.shared() && limit < pool
        ? " (this replica's share: " + limit + " of " + pool + ")"
        : "";
  }

  /** Why {@code tenant}'s in-flight cap stops a start now, or null. */
  @Nullable Shortfall checkTenant(Tenant tenant) {
    int maxInFlight = tenant.tier().maxInFlight();
    if (maxInFlight <= 0) {
      return null;
    }
    int n = ledger.tenantInFlight(tenant.id());
    if (n >= maxInFlight) {
      return new Shortfall(
          Reason.TENANT_CONCURRENCY,
          0,
          0,
          tenant.capRefusal("tenant has " + n + " requests in flight (cap " + maxInFlight + ")"));
    }
    return null;
  }

  /**
   * The capacity class {@code k} could take now, as a fraction of what the class rules count
   * against (the pool, or this replica's share): the smaller of its work and, with a request cap,
   * its request slots. The same terms as {@link #checkCapacity}: the other classes' guaranteed and
   * in-flight parts are not free, nor, without {@code borrow}, anything past its reserved share.
   */
  double classHeadroom(ClassSlot k) {
    sumOthers(k);
    long protectedWork = othersWork;
    int protectedRequests = othersRequests;
    long keptWork = othersKeptWork;
    int keptRequests = othersKeptRequests;
    long classWork = ledger.classWork(k);
    long room =
        Math.min(
            ledger.classCapWork() - classWork - protectedWork,
            ledger.workLimit() - ledger.totalWork() - keptWork);
    if (!k.policy().borrow()) {
      room = Math.min(room, k.reserved() - classWork);
    }
    double work =
        ledger.classCapWork() <= 0 ? 0 : Math.max(0, room) / (double) ledger.classCapWork();
    if (ledger.policy().maxRequests() <= 0 || ledger.classCapRequests() <= 0) {
      return work;
    }
    int classRequests = k.requests() + k.peerRequests();
    long slots =
        Math.min(
            (long) ledger.classCapRequests() - classRequests - protectedRequests,
            (long) ledger.requestLimit() - ledger.totalRequests() - keptRequests);
    if (!k.policy().borrow()) {
      slots = Math.min(slots, (long) k.reservedRequests() - classRequests);
    }
    return Math.min(work, Math.max(0, slots) / (double) ledger.classCapRequests());
  }

  /** Pool request cap, class share and pool capacity (not the tenant cap); null if it fits. */
  @Nullable Shortfall checkCapacity(ClassSlot k, long work) {
    PoolPolicy p = ledger.policy();
    long w = ledger.accountedWork(k, work); // on this replica's limit
    long wc = ledger.classRuleWork(k, work); // in the class rules (the pool's, when pooled)
    ClassPolicy cls = k.policy();
    long classWork = ledger.classWork(k);
    int classRequests = k.requests() + k.peerRequests();
    sumOthers(k);
    long protectedWork = othersWork;
    int protectedRequests = othersRequests;
    long keptWork = othersKeptWork;
    int keptRequests = othersKeptRequests;
    if (p.maxRequests() > 0) {
      if (ledger.totalRequests() + keptRequests >= ledger.requestLimit()) {
        return new Shortfall(
            Reason.POOL_SATURATED,
            w,
            ledger.totalRequests() + keptRequests - ledger.requestLimit() + 1,
            "pool "
                + p.name()
                + " is at its request cap"
                + shareNote(ledger.requestLimit(), p.maxRequests()));
      }
      if (classRequests + 1 > k.reservedRequests() && !cls.borrow()) {
        return new Shortfall(
            Reason.CLASS_SHARE,
            w,
            classRequests + 1 - k.reservedRequests(),
            "class "
                + cls.name()
                + " holds its share of the request slots of pool "
                + p.name()
                + (ledger.pooled() ? ACROSS : ""));
      }
      int needSlots = classRequests + 1 + protectedRequests;
      if (needSlots > ledger.classCapRequests()) {
        return new Shortfall(
            Reason.POOL_SATURATED,
            w,
            needSlots - ledger.classCapRequests(),
            "the free request slots of pool "
                + p.name()
                + " are guaranteed to other classes"
                + (ledger.pooled()
                    ? ACROSS
                    : shareNote(ledger.classCapRequests(), p.maxRequests())));
      }
    }
    if (classWork + wc > k.reserved() && !cls.borrow()) {
      return new Shortfall(
          Reason.CLASS_SHARE,
          classWork + wc - k.reserved(),
          0,
          "class "
              + cls.name()
              + " has used its share of pool "
              + p.name()
              + (ledger.pooled() ? ACROSS : ""));
    }
    long need = classWork + wc + protectedWork;
    if (need > ledger.classCapWork()) {
      return new Shortfall(
          Reason.POOL_SATURATED,
          need - ledger.classCapWork(),
          0,
          "pool "
              + p.name()
              + " has no capacity for class "
              + cls.name()
              + (ledger.pooled()
                  ? ACROSS
                  : shareNote(ledger.classCapWork(), p.capacityWorkUnits())));
    }
    if (ledger.totalWork() + w + keptWork > ledger.workLimit()) {
      return new Shortfall(
          Reason.POOL_SATURATED,
          ledger.totalWork() + w + keptWork - ledger.workLimit(),
          0,
          "pool "
              + p.name()
              + " has no capacity for class "
              + cls.name()
              + shareNote(ledger.workLimit(), p.capacityWorkUnits()));
    }
    return null;
  }
}
