package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.share.ClassLimits;
import io.sluice.core.share.ClassShares;
import io.sluice.core.share.Load;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What one pool holds in flight — per class, per tenant, in total — and this replica's limits on
 * it; {@link CapacityRules} reads it to say whether a request may start.
 *
 * <p>{@link #reconfigure} keeps every in-flight permit: class slots are matched by name, a removed
 * class keeps its slot (with no reserve) until its work drains, and a smaller capacity simply
 * admits nothing new until in-flight work falls below it. A request larger than its class can ever
 * hold is accounted as that reach ({@link #accountedWork}) so it can run alone rather than never.
 *
 * <p><b>Replica share.</b> When several replicas share the pool through a store, this replica may
 * hold only its granted share of the pool's work units and request slots ({@link #applyShare}). The
 * class rules then stay the pool's own: the capacity, the request cap, the reserves and the
 * guarantees are the policy's numbers, and each class's load counts this replica's work plus the
 * other replicas' as of their last renewal ({@link ClassSlot#peerWork()}). A share given without
 * the peers' class loads (the store is down: a fallback share) scales the class rules to the share
 * instead, as a pool of the share's size. Without a share the ledger is the whole pool.
 *
 * <p>Not thread-safe: guarded by the pool lock, except {@link #slots()} and {@link #policy()},
 * which are safely published (copy-on-write) for lock-free reads. No clock.
 */
final class CapacityLedger {
  private volatile PoolPolicy policy; // written under the pool lock
  private volatile List<ClassSlot> slots = List.of(); // copy-on-write; includes retired slots
  private long totalWork;
  private int totalRequests;
  // this replica's limits: the pool's own, or its granted share (written under the pool lock)
  private long workLimit;
  private int requestLimit;
  private long shareWork = -1; // -1: no share applied (the whole pool)
  private int shareRequests = -1;
  // what the class rules count against: the pool's own numbers, or the share when it is scaled
  private long classCapWork;
  private int classCapRequests;
  private boolean pooled; // the peers' class loads are known: class rules on the pool's numbers
  // the peers' work and requests in flight in classes not configured here (a rollout), and in all
  private long otherPeerWork;
  private int otherPeerRequests;
  private long peerTotalWork;
  private int peerTotalRequests;
  private final TenantCounts tenants = new TenantCounts();

  /** A ledger of {@code policy} with no class slots yet ({@link #reconfigure} adds them). */
  CapacityLedger(PoolPolicy policy) {
    this.policy = policy;
  }

  /**
   * Applies a new policy to the class slots; returns every slot (active in the given order, then
   * retired ones still holding permits).
   */
  List<ClassSlot> reconfigure(PoolPolicy newPolicy, List<ClassPolicy> classes) {
    Map<String, ClassSlot> old = new HashMap<>();
    for (ClassSlot s : slots) {
      old.put(s.name(), s);
    }
    List<ClassSlot> next = new ArrayList<>();
    for (ClassPolicy c : classes) {
      ClassSlot s = old.remove(c.name());
      if (s == null) {
        s = new ClassSlot(c, newPolicy);
      }
      s.activate(c);
      next.add(s);
    }
    for (ClassSlot s : old.values()) {
      if (s.work() > 0 || s.requests() > 0) {
        s.retire();
        next.add(s);
      }
    }
    this.policy = newPolicy;
    this.slots = List.copyOf(next);
    applyLimits();
    return this.slots;
  }

  /**
   * Limits this replica to {@code work} units and {@code requests} request slots of the pool (each
   * clamped to the pool's own; {@code requests} is ignored when the pool caps no requests). With
   * {@code classes} (the other replicas' in-flight load by class name, and the idle class
   * guarantees placed here), the class rules count the pool as a whole; without, they are scaled to
   * the share. Returns whether waiting requests should be tried again.
   */
  boolean applyShare(long work, int requests, @Nullable ClassShares classes) {
    shareWork = Math.max(0, work);
    shareRequests = Math.max(0, requests);
    pooled = classes != null;
    otherPeerWork = 0;
    otherPeerRequests = 0;
    peerTotalWork = 0;
    peerTotalRequests = 0;
    for (ClassSlot s : slots) {
      s.setPeers(0, 0);
      s.setIdle(0, 0);
    }
    if (classes != null) {
      for (Map.Entry<String, Load> e : classes.peers().entrySet()) {
        ClassSlot s = slot(e.getKey());
        long w = Math.max(0, e.getValue().work());
        int r = Math.max(0, e.getValue().requests());
        if (s == null) {
          otherPeerWork += w;
          otherPeerRequests += r;
        } else {
          s.setPeers(w, r);
        }
        peerTotalWork += w;
        peerTotalRequests += r;
      }
      for (Map.Entry<String, Load> e : classes.idle().entrySet()) {
        ClassSlot s = slot(e.getKey());
        if (s != null) {
          s.setIdle(Math.max(0, e.getValue().work()), Math.max(0, e.getValue().requests()));
        }
      }
    }
    applyLimits();
    return true;
  }

  /** Whether this replica counts against a granted share rather than the whole pool. */
  boolean shared() {
    return shareWork >= 0;
  }

  /**
   * How much of its limit this replica holds: the larger of work ÷ work limit and requests ÷
   * request limit (when the pool caps requests); 1 when a limit is 0 and something is held.
   */
  double use() {
    double u = workLimit > 0 ? (double) totalWork / workLimit : (totalWork > 0 ? 1 : 0);
    if (policy.maxRequests() > 0) {
      double r =
          requestLimit > 0 ? (double) totalRequests / requestLimit : (totalRequests > 0 ? 1 : 0);
      u = Math.max(u, r);
    }
    return u;
  }

  /** Work units this replica may hold: the pool's capacity, or its share of it. */
  long workLimit() {
    return workLimit;
  }

  /** Request slots this replica may hold (meaningful when the pool caps requests). */
  int requestLimit() {
    return requestLimit;
  }

  /** The limits and the class reserves and guarantees on them (scaled to a share). */
  private void applyLimits() {
    PoolPolicy p = policy;
    long capacity = p.capacityWorkUnits();
    int maxRequests = p.maxRequests();
    workLimit = shareWork < 0 ? capacity : Math.min(capacity, shareWork);
    requestLimit =
        maxRequests <= 0
            ? 0
            : shareRequests < 0 ? maxRequests : Math.min(maxRequests, shareRequests);
    classCapWork = pooled ? capacity : workLimit;
    classCapRequests = maxRequests <= 0 ? 0 : pooled ? maxRequests : requestLimit;
    for (ClassSlot s : slots) {
      if (s.retired()) {
        continue;
      }
      ClassPolicy c = s.policy();
      s.setShares(
          (long) Math.floor(c.reservedShare() * classCapWork),
          (long) Math.floor(c.guaranteedShare() * classCapWork),
          maxRequests <= 0 || classCapRequests <= 0
              ? 0
              : reservedSlots(c.reservedShare(), classCapRequests),
          maxRequests <= 0 ? 0 : guaranteedSlots(c.guaranteedShare(), classCapRequests));
    }
    // each slot's reach (accountedWork): the class's reach in the pool (the pool less the others'
    // guarantees, within its reserve when it may not borrow), and at most this replica's limit;
    // retired slots guarantee nothing, so dropping one changes no reach
    long guaranteedTotal = 0;
    long poolGuaranteedTotal = 0;
    for (ClassSlot s : slots) {
      guaranteedTotal += s.guaranteed();
      poolGuaranteedTotal +=
          s.retired() ? 0 : (long) Math.floor(s.policy().guaranteedShare() * capacity);
    }
    long idleTotal = 0;
    for (ClassSlot s : slots) {
      idleTotal += s.idleWork();
    }
    for (ClassSlot s : slots) {
      long reach =
          Math.min(
              classCapWork - (guaranteedTotal - s.guaranteed()),
              workLimit - (idleTotal - s.idleWork()));
      long poolGuaranteed =
          s.retired() ? 0 : (long) Math.floor(s.policy().guaranteedShare() * capacity);
      long poolReach = capacity - (poolGuaranteedTotal - poolGuaranteed);
      if (!s.policy().borrow()) {
        reach = Math.min(reach, s.reserved());
        poolReach = Math.min(poolReach, (long) Math.floor(s.policy().reservedShare() * capacity));
      }
      s.setReach(Math.max(1, Math.min(reach, workLimit)), Math.max(1, poolReach));
    }
  }

  /** {@code max(1, floor(share × M))} slots for a positive share, 0 otherwise or with no cap. */
  static int reservedSlots(double share, int maxRequests) {
    if (maxRequests <= 0 || share <= 0) {
      return 0;
    }
    return Math.max(1, guaranteedSlots(share, maxRequests));
  }

  /** {@code floor(share × M)} (with a rounding allowance: 0.29 × 100 is 29), 0 with no cap. */
  static int guaranteedSlots(double share, int maxRequests) {
    if (maxRequests <= 0 || share <= 0) {
      return 0;
    }
    return (int) Math.min(maxRequests, Math.floor(share * maxRequests + 1e-9));
  }

  PoolPolicy policy() {
    return policy;
  }

  /** Every slot, retired ones included. */
  List<ClassSlot> slots() {
    return slots;
  }

  /** The active slot of {@code className}, or null. */
  @Nullable ClassSlot slot(String className) {
    List<ClassSlot> all = slots; // indexed: no iterator per decision
    for (int i = 0; i < all.size(); i++) {
      ClassSlot s = all.get(i);
      if (!s.retired() && s.name().equals(className)) {
        return s;
      }
    }
    return null;
  }

  private long overrunWork;

  long totalWork() {
    return totalWork;
  }

  int totalRequests() {
    return totalRequests;
  }

  int tenantsInFlight() {
    return tenants.holding();
  }

  /** Requests of {@code tenantId} in flight. */
  int tenantInFlight(String tenantId) {
    return tenants.of(tenantId);
  }

  /**
   * Request slots class {@code k} could take now: the cap less its own and what other classes hold
   * or are guaranteed, and within its reserve when it may not borrow; {@code Long.MAX_VALUE} when
   * the pool caps no requests.
   */
  long freeRequestSlotsFor(ClassSlot k) {
    if (policy.maxRequests() <= 0) {
      return Long.MAX_VALUE;
    }
    int classRequests = k.requests() + k.peerRequests();
    long free =
        Math.min(
            requestLimit - totalRequests,
            classCapRequests - classRequests - protectedRequestsFor(k));
    if (!k.policy().borrow()) {
      free = Math.min(free, k.reservedRequests() - classRequests);
    }
    return Math.max(0, free);
  }

  /**
   * Capacity free now: this replica's limit less its work in flight, and (class rules on the pool's
   * numbers) the pool less everyone's work in flight as last reported; never negative.
   */
  long freeWork() {
    return Math.max(0, Math.min(workLimit - totalWork, classCapWork - totalWork - peerTotalWork));
  }

  /** Request slots free now, as {@link #freeWork}; {@code Long.MAX_VALUE} with no request cap. */
  long freeRequests() {
    if (policy.maxRequests() <= 0) {
      return Long.MAX_VALUE;
    }
    return Math.max(
        0,
        Math.min(
            requestLimit - totalRequests, classCapRequests - totalRequests - peerTotalRequests));
  }

  /** The capacity the class rules count against: the pool's, or the share when scaled to it. */
  long classCapWork() {
    return classCapWork;
  }

  /** The request slots the class rules count against (0 when the pool caps none). */
  int classCapRequests() {
    return classCapRequests;
  }

  /** Whether the peers' class loads are known: the class rules count the pool as a whole. */
  boolean pooled() {
    return pooled;
  }

  /** The peers' work in flight in classes not configured here (a rollout). */
  long otherPeerWork() {
    return otherPeerWork;
  }

  /** The peers' requests in flight in classes not configured here (a rollout). */
  int otherPeerRequests() {
    return otherPeerRequests;
  }

  /**
   * Work of class {@code k} in flight as the class rules count it (with the peers' part): on the
   * pool's numbers ({@link #pooled}), each request as it asks of the pool ({@link #inFlightWork}).
   */
  long classWork(ClassSlot k) {
    return inFlightWork(k) + k.peerWork();
  }

  /**
   * This replica's work of class {@code k} in flight as the class rules count it and as it reports
   * it to the peers: when they count the pool as a whole, each request at most its class's reach in
   * the pool ({@link #demandWork}), not the smaller reach it is held as on this replica's share
   * (else a request larger than a small share's reach would count as that reach and pass rules its
   * real work does not fit); else as held ({@link #accountedWork}).
   */
  long inFlightWork(ClassSlot k) {
    return pooled ? k.demandWork() : k.work();
  }

  /**
   * The work a request of class {@code k} counts as in the class rules (see {@link #inFlightWork}).
   */
  long classRuleWork(ClassSlot k, long work) {
    return pooled ? demandWork(k, work) : accountedWork(k, work);
  }

  /** Request slots class {@code k} may still take within its reserve (class rules' count). */
  long classRequestHeadroom(ClassSlot k) {
    return (long) k.reservedRequests() - k.requests() - k.peerRequests();
  }

  /** Takes a permit for {@code request} in class {@code k} (the checks passed). */
  Permit take(PoolState pool, ClassSlot k, AdmissionRequest request, long nowNanos) {
    Tenant tenant = request.tenant();
    long w = accountedWork(k, request.workUnits());
    long asked = demandWork(k, request.workUnits());
    k.hold(w, asked, 1);
    totalWork += w;
    totalRequests++;
    Permit p =
        new Permit(
            pool, k, tenant, w, asked, nowNanos, request.inputTokens(), request.outputTokens());
    p.tenantCount = tenants.take(tenant.id());
    return p;
  }

  /**
   * Counts {@code more} work units more for a running permit (its answer overran its reserve), up
   * to what its class can hold ({@link #accountedWork}); returns the units added.
   */
  long grow(Permit permit, long more) {
    ClassSlot k = permit.slot();
    long w = Math.max(0, Math.min(permit.workUnits() + more, k.reach()) - permit.workUnits());
    long d = Math.max(0, Math.min(permit.demandWork() + more, k.poolReach()) - permit.demandWork());
    k.hold(w, d, 0);
    totalWork += w;
    overrunWork += w;
    permit.grown(w, d);
    return w;
  }

  /** Work units in flight beyond the admitted estimates (answers that overran their reserve). */
  long overrunWork() {
    return overrunWork;
  }

  /** Returns a permit's work and slot; a drained retired class slot is dropped. */
  void release(Permit permit) {
    ClassSlot k = permit.slot();
    overrunWork -= permit.grownWork();
    k.hold(-permit.workUnits(), -permit.demandWork(), -1);
    totalWork -= permit.workUnits();
    totalRequests--;
    int[] counted = permit.tenantCount;
    if (counted != null) {
      tenants.release(counted);
    }
    if (k.retired() && k.work() == 0 && k.requests() == 0) {
      List<ClassSlot> next = new ArrayList<>(slots);
      next.remove(k);
      slots = List.copyOf(next);
    }
  }

  /**
   * The work a request of class {@code k} is accounted as: its own, but at most the most class
   * {@code k} can ever hold — the pool less the other classes' guaranteed shares, and its own
   * reserved share when it may not borrow. A larger request then runs alone (the class's whole
   * reach) rather than never: accounted as the whole capacity it could not start while another
   * class guarantees a share, and would wait out its queue time for nothing. The reach is {@link
   * ClassSlot#reach}, kept wherever the limits or shares change ({@link #reconfigure}, {@link
   * #applyShare}).
   */
  long accountedWork(ClassSlot k, long work) {
    return Math.min(work, k.reach());
  }

  /**
   * The work a request of class {@code k} asks of the pool, for the demand a replica reports: its
   * own, at most the most class {@code k} can hold in the pool as a whole ({@link
   * ClassSlot#poolReach}), whatever this replica's share is now. (Counted as its accounted work, a
   * request larger than the share would report exactly the share and never get more.)
   */
  long demandWork(ClassSlot k, long work) {
    return Math.min(work, k.poolReach());
  }

  /**
   * Every active class's guaranteed part of the pool and the most it can hold in the pool (the
   * pool's own numbers, whatever the share), in rank order: what the share allocation divides.
   */
  List<ClassLimits> poolClassLimits() {
    PoolPolicy p = policy;
    int maxRequests = Math.max(0, p.maxRequests());
    int guaranteedSlotsTotal = 0;
    for (ClassSlot s : slots) {
      if (!s.retired()) {
        guaranteedSlotsTotal += guaranteedSlots(s.policy().guaranteedShare(), maxRequests);
      }
    }
    List<ClassLimits> out = new ArrayList<>();
    for (ClassSlot s : slots) {
      if (s.retired()) {
        continue;
      }
      ClassPolicy c = s.policy();
      int gn = guaranteedSlots(c.guaranteedShare(), maxRequests);
      int reachN = maxRequests - (guaranteedSlotsTotal - gn);
      if (!c.borrow()) {
        reachN = Math.min(reachN, reservedSlots(c.reservedShare(), maxRequests));
      }
      out.add(
          new ClassLimits(
              c.name(),
              (long) Math.floor(c.guaranteedShare() * p.capacityWorkUnits()),
              s.poolReach(),
              gn,
              Math.max(0, reachN)));
    }
    return out;
  }

  /** Σ_{j≠k} max(N_j, GN_j) — request slots other classes hold or are guaranteed. */
  private int protectedRequestsFor(ClassSlot k) {
    int sum = otherPeerRequests;
    List<ClassSlot> all = slots; // indexed: no iterator per decision
    for (int i = 0; i < all.size(); i++) {
      ClassSlot j = all.get(i);
      if (j != k) {
        sum += Math.max(j.requests() + j.peerRequests(), j.guaranteedRequests());
      }
    }
    return sum;
  }
}
