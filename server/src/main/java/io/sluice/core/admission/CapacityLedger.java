package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What one pool holds in flight — per class, per tenant, in total — and whether a request may
 * start. Admission rule for class {@code k} asking for {@code w} work units, with capacity {@code
 * C}, in-flight work {@code U = Σ U_j}, reserved {@code R_j}, guaranteed {@code G_j = R_j -
 * lendable_j}:
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
 * <p>{@link #reconfigure} keeps every in-flight permit: class slots are matched by name, a removed
 * class keeps its slot (with no reserve) until its work drains, and a smaller capacity simply
 * admits nothing new until in-flight work falls below it. A request larger than its class can ever
 * hold is accounted as that reach ({@link #accountedWork}) so it can run alone rather than never.
 *
 * <p><b>Replica share.</b> When several replicas share the pool through a store, this replica may
 * hold only its granted share of the pool's work units and request slots ({@link #applyShare}). The
 * ledger then counts as a pool of that size: every limit above ({@code C}, {@code M}, and the class
 * reserves and guarantees, which scale with it) is this replica's part, so across replicas the
 * totals stay within the pool's own numbers. A share smaller than the work in flight admits nothing
 * new until that work drains below it. Without a share the ledger is the whole pool.
 *
 * <p>Not thread-safe: guarded by the pool lock, except {@link #slots()} and {@link #policy()},
 * which are safely published (copy-on-write) for lock-free reads. No clock.
 */
final class CapacityLedger {
  /**
   * Why a request cannot start now: the reason, what must drain first (work units, or request slots
   * when {@code drainRequests > 0}) and a message.
   */
  record Shortfall(Reason reason, long drainWork, int drainRequests, String message) {
    Shortfall(Reason reason, long drainWork, String message) {
      this(reason, drainWork, 0, message);
    }
  }

  private volatile PoolPolicy policy; // written under the pool lock
  private volatile List<ClassSlot> slots = List.of(); // copy-on-write; includes retired slots
  private long totalWork;
  private int totalRequests;
  // this replica's limits: the pool's own, or its granted share (written under the pool lock)
  private long workLimit;
  private int requestLimit;
  private long shareWork = -1; // -1: no share applied (the whole pool)
  private int shareRequests = -1;
  private final Map<String, int[]> tenantInFlight = new HashMap<>();

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
      s.policy = c;
      s.retired = false;
      next.add(s);
    }
    for (ClassSlot s : old.values()) {
      if (s.work > 0 || s.requests > 0) {
        s.retired = true;
        s.reserved = 0;
        s.guaranteed = 0;
        s.reservedRequests = 0;
        s.guaranteedRequests = 0;
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
   * clamped to the pool's own; {@code requests} is ignored when the pool caps no requests). Returns
   * whether a limit grew, so waiting requests may start.
   */
  boolean applyShare(long work, int requests) {
    long oldWork = workLimit;
    int oldRequests = requestLimit;
    shareWork = Math.max(0, work);
    shareRequests = Math.max(0, requests);
    applyLimits();
    return workLimit > oldWork || requestLimit > oldRequests;
  }

  /** Whether this replica counts against a granted share rather than the whole pool. */
  boolean shared() {
    return shareWork >= 0;
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
    for (ClassSlot s : slots) {
      if (s.retired) {
        continue;
      }
      ClassPolicy c = s.policy;
      s.reserved = (long) Math.floor(c.reservedShare() * workLimit);
      s.guaranteed = (long) Math.floor(c.guaranteedShare() * workLimit);
      s.reservedRequests =
          maxRequests <= 0 || requestLimit <= 0
              ? 0
              : reservedSlots(c.reservedShare(), requestLimit);
      s.guaranteedRequests =
          maxRequests <= 0 ? 0 : guaranteedSlots(c.guaranteedShare(), requestLimit);
    }
    // each slot's reach (accountedWork): the limit less the others' guarantees, within its reserve
    // when it may not borrow; retired slots guarantee nothing, so dropping one changes no reach
    long guaranteedTotal = 0;
    for (ClassSlot s : slots) {
      guaranteedTotal += s.guaranteed;
    }
    for (ClassSlot s : slots) {
      long reach = workLimit - (guaranteedTotal - s.guaranteed);
      if (!s.policy.borrow()) {
        reach = Math.min(reach, s.reserved);
      }
      s.reach = Math.max(1, reach);
    }
  }

  /** " (this replica's share: 3 of 8)" when a share binds below the pool's own, else "". */
  private String shareNote(long limit, long pool) {
    return shared() && limit < pool ? " (this replica's share: " + limit + " of " + pool + ")" : "";
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
    for (ClassSlot s : slots) {
      if (!s.retired && s.name().equals(className)) {
        return s;
      }
    }
    return null;
  }

  long totalWork() {
    return totalWork;
  }

  int totalRequests() {
    return totalRequests;
  }

  int tenantsInFlight() {
    return tenantInFlight.size();
  }

  /** Requests of {@code tenantId} in flight. */
  int tenantInFlight(String tenantId) {
    int[] c = tenantInFlight.get(tenantId);
    return c == null ? 0 : c[0];
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
    int max = requestLimit;
    long free = Math.min(max - totalRequests, max - k.requests - protectedRequestsFor(k));
    if (!k.policy.borrow()) {
      free = Math.min(free, k.reservedRequests - k.requests);
    }
    return Math.max(0, free);
  }

  /** Capacity free now ({@code C - U}, never negative). */
  long freeWork() {
    return Math.max(0, workLimit - totalWork);
  }

  /** Why {@code tenant}'s in-flight cap stops a start now, or null. */
  @Nullable Shortfall checkTenant(Tenant tenant) {
    int maxInFlight = tenant.tier().maxInFlight();
    if (maxInFlight <= 0) {
      return null;
    }
    int n = tenantInFlight(tenant.id());
    if (n >= maxInFlight) {
      return new Shortfall(
          Reason.TENANT_CONCURRENCY,
          0,
          "tenant has " + n + " requests in flight (cap " + maxInFlight + ")");
    }
    return null;
  }

  /** Pool request cap, class share and pool capacity (not the tenant cap); null if it fits. */
  @Nullable Shortfall checkCapacity(ClassSlot k, long work) {
    PoolPolicy p = policy;
    long w = accountedWork(k, work);
    ClassPolicy cls = k.policy;
    // Σ_{j≠k} max(U_j, G_j) and Σ_{j≠k} max(N_j, GN_j) in one pass over the slots
    long protectedWork = 0;
    int protectedRequests = 0;
    for (ClassSlot j : slots) {
      if (j != k) {
        protectedWork += Math.max(j.work, j.guaranteed);
        protectedRequests += Math.max(j.requests, j.guaranteedRequests);
      }
    }
    if (p.maxRequests() > 0) {
      int maxRequests = requestLimit;
      if (totalRequests >= maxRequests) {
        return new Shortfall(
            Reason.POOL_SATURATED,
            w,
            totalRequests - maxRequests + 1,
            "pool "
                + p.name()
                + " is at its request cap"
                + shareNote(maxRequests, p.maxRequests()));
      }
      if (k.requests + 1 > k.reservedRequests && !cls.borrow()) {
        return new Shortfall(
            Reason.CLASS_SHARE,
            w,
            k.requests + 1 - k.reservedRequests,
            "class " + cls.name() + " holds its share of the request slots of pool " + p.name());
      }
      int needSlots = k.requests + 1 + protectedRequests;
      if (needSlots > maxRequests) {
        return new Shortfall(
            Reason.POOL_SATURATED,
            w,
            needSlots - maxRequests,
            "the free request slots of pool "
                + p.name()
                + " are guaranteed to other classes"
                + shareNote(maxRequests, p.maxRequests()));
      }
    }
    if (k.work + w > k.reserved && !cls.borrow()) {
      return new Shortfall(
          Reason.CLASS_SHARE,
          k.work + w - k.reserved,
          "class " + cls.name() + " has used its share of pool " + p.name());
    }
    long need = k.work + w + protectedWork;
    if (need > workLimit) {
      return new Shortfall(
          Reason.POOL_SATURATED,
          need - workLimit,
          "pool "
              + p.name()
              + " has no capacity for class "
              + cls.name()
              + shareNote(workLimit, p.capacityWorkUnits()));
    }
    return null;
  }

  /** Takes a permit for {@code request} in class {@code k} (the checks passed). */
  Permit take(PoolState pool, ClassSlot k, AdmissionRequest request, long nowNanos) {
    Tenant tenant = request.tenant();
    long w = accountedWork(k, request.workUnits());
    k.work += w;
    k.requests++;
    totalWork += w;
    totalRequests++;
    int[] tenantCount = tenantInFlight.get(tenant.id());
    if (tenantCount == null) {
      tenantInFlight.put(tenant.id(), new int[] {1});
    } else {
      tenantCount[0]++;
    }
    return new Permit(pool, k, tenant, w, nowNanos, request.inputTokens(), request.outputTokens());
  }

  /** Returns a permit's work and slot; a drained retired class slot is dropped. */
  void release(Permit permit) {
    ClassSlot k = permit.slot();
    k.work -= permit.workUnits();
    k.requests--;
    totalWork -= permit.workUnits();
    totalRequests--;
    int[] count = tenantInFlight.get(permit.tenant().id());
    if (count != null && --count[0] <= 0) {
      tenantInFlight.remove(permit.tenant().id());
    }
    if (k.retired && k.work == 0 && k.requests == 0) {
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
    return Math.min(work, k.reach);
  }

  /** Σ_{j≠k} max(N_j, GN_j) — request slots other classes hold or are guaranteed. */
  private int protectedRequestsFor(ClassSlot k) {
    int sum = 0;
    for (ClassSlot j : slots) {
      if (j != k) {
        sum += Math.max(j.requests, j.guaranteedRequests);
      }
    }
    return sum;
  }
}
