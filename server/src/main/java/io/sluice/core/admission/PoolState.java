package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Token-weighted work in flight for one pool, per class and per tenant.
 *
 * <p>Admission rule for class {@code k} asking for {@code w} work units, with capacity {@code C},
 * in-flight work {@code U = Σ U_j}, reserved {@code R_j}, guaranteed {@code G_j = R_j -
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
 * <p>Reconfiguration ({@link #reconfigure}) keeps every in-flight permit: class slots are matched
 * by name, a removed class keeps its slot (with no reserve) until its work drains, and a smaller
 * capacity simply admits nothing new until in-flight work falls below it.
 *
 * <p>Concurrency: all mutable fields are guarded by {@link #lock}; critical sections are a few
 * arithmetic operations and one map update. A request larger than the whole pool is accounted as
 * the pool's capacity so it can run alone rather than never.
 */
public final class PoolState {
  private final ReentrantLock lock = new ReentrantLock();
  private volatile PoolPolicy policy; // written under lock
  private volatile List<ClassSlot> slots; // copy-on-write under lock; includes retired slots
  private long totalWork; // @GuardedBy("lock")
  private int totalRequests; // @GuardedBy("lock")
  private final Map<String, int[]> tenantInFlight = new HashMap<>(); // @GuardedBy("lock")
  private final CompletionRate completionRate; // @GuardedBy("lock")
  private final ReleaseListener listener;

  /** Told about every release, outside the lock; the queue scheduler hooks in here. */
  @FunctionalInterface
  public interface ReleaseListener {
    void onRelease(PoolState pool, Permit permit, Outcome outcome, long nowNanos);

    ReleaseListener NONE = (p, permit, o, n) -> {};
  }

  /** One class's accounting inside this pool. Fields guarded by the pool lock. */
  static final class ClassSlot {
    ClassPolicy policy;
    long reserved;
    long guaranteed;
    boolean retired;
    long work;
    int requests;

    ClassSlot(ClassPolicy policy) {
      this.policy = policy;
    }
  }

  PoolState(
      PoolPolicy policy, List<ClassPolicy> classes, long rateTauNanos, ReleaseListener listener) {
    this.completionRate = new CompletionRate(rateTauNanos);
    this.listener = listener;
    this.slots = List.of();
    reconfigure(policy, classes);
  }

  /** Applies a new policy; in-flight work is kept (see class comment). */
  void reconfigure(PoolPolicy newPolicy, List<ClassPolicy> classes) {
    lock.lock();
    try {
      Map<String, ClassSlot> old = new HashMap<>();
      for (ClassSlot s : slots) {
        old.put(s.policy.name(), s);
      }
      List<ClassSlot> next = new ArrayList<>();
      for (ClassPolicy c : classes) {
        ClassSlot s = old.remove(c.name());
        if (s == null) {
          s = new ClassSlot(c);
        }
        s.policy = c;
        s.retired = false;
        s.reserved = (long) Math.floor(c.reservedShare() * newPolicy.capacityWorkUnits());
        s.guaranteed = (long) Math.floor(c.guaranteedShare() * newPolicy.capacityWorkUnits());
        next.add(s);
      }
      for (ClassSlot s : old.values()) {
        if (s.work > 0 || s.requests > 0) {
          s.retired = true;
          s.reserved = 0;
          s.guaranteed = 0;
          next.add(s);
        }
      }
      this.policy = newPolicy;
      this.slots = List.copyOf(next);
    } finally {
      lock.unlock();
    }
  }

  public PoolPolicy policy() {
    return policy;
  }

  /** Active (non-retired) classes in rank order. */
  public List<ClassPolicy> classes() {
    List<ClassPolicy> out = new ArrayList<>();
    for (ClassSlot s : slots) {
      if (!s.retired) {
        out.add(s.policy);
      }
    }
    return out;
  }

  private ClassSlot slot(String className) {
    for (ClassSlot s : slots) {
      if (!s.retired && s.policy.name().equals(className)) {
        return s;
      }
    }
    return null;
  }

  /**
   * Tries to admit; {@code null} class slot means the class is unknown to this pool.
   *
   * @return the decision; never null
   */
  Decision tryAdmit(AdmissionRequest request, long nowNanos) {
    lock.lock();
    try {
      ClassSlot k = slot(request.requestClass().name());
      if (k == null) {
        return new Decision.Reject(
            Reason.UNKNOWN_ROUTE,
            404,
            0,
            "class " + request.requestClass().name() + " is not configured");
      }
      Decision.Reject refused = check(k, request.tenant(), request.workUnits(), nowNanos);
      if (refused != null) {
        return refused;
      }
      return new Decision.Admit(take(k, request.tenant(), request.workUnits(), nowNanos));
    } finally {
      lock.unlock();
    }
  }

  /** Why {@code w} work of class {@code k} for {@code tenant} cannot start now, or null. */
  private Decision.Reject check(ClassSlot k, Tenant tenant, long work, long nowNanos) {
    PoolPolicy p = policy;
    long w = Math.min(work, p.capacityWorkUnits());
    ClassPolicy cls = k.policy;
    int maxInFlight = tenant.tier().maxInFlight();
    int[] tenantCount = tenantInFlight.get(tenant.id());
    if (maxInFlight > 0 && tenantCount != null && tenantCount[0] >= maxInFlight) {
      return new Decision.Reject(
          Reason.TENANT_CONCURRENCY,
          429,
          retryAfterForHold(),
          "tenant has " + tenantCount[0] + " requests in flight (cap " + maxInFlight + ")");
    }
    if (p.maxRequests() > 0 && totalRequests >= p.maxRequests()) {
      return new Decision.Reject(
          Reason.POOL_SATURATED,
          cls.shedStatus(),
          retryAfterForWork(w, nowNanos),
          "pool " + p.name() + " is at its request cap");
    }
    if (k.work + w > k.reserved && !cls.borrow()) {
      return new Decision.Reject(
          Reason.CLASS_SHARE,
          cls.shedStatus(),
          retryAfterForWork(k.work + w - k.reserved, nowNanos),
          "class " + cls.name() + " has used its share of pool " + p.name());
    }
    long need = k.work + w + protectedFor(k);
    if (need > p.capacityWorkUnits()) {
      return new Decision.Reject(
          Reason.POOL_SATURATED,
          cls.shedStatus(),
          retryAfterForWork(need - p.capacityWorkUnits(), nowNanos),
          "pool " + p.name() + " has no capacity for class " + cls.name());
    }
    return null;
  }

  private Permit take(ClassSlot k, Tenant tenant, long work, long nowNanos) {
    long w = Math.min(work, policy.capacityWorkUnits());
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
    return new Permit(this, k, tenant, w, nowNanos);
  }

  /** Σ_{j≠k} max(U_j, G_j) — capacity other classes hold or are guaranteed. */
  private long protectedFor(ClassSlot k) {
    long sum = 0;
    for (ClassSlot j : slots) {
      if (j != k) {
        sum += Math.max(j.work, j.guaranteed);
      }
    }
    return sum;
  }

  void release(Permit permit, Outcome outcome, long nowNanos) {
    lock.lock();
    try {
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
      if (outcome == Outcome.COMPLETED) {
        completionRate.onCompletion(
            permit.workUnits(), nowNanos - permit.admittedAtNanos(), nowNanos);
      }
    } finally {
      lock.unlock();
    }
    listener.onRelease(this, permit, outcome, nowNanos);
  }

  /** Seconds until {@code work} units should have drained at the recent completion rate. */
  private long retryAfterForWork(long work, long nowNanos) {
    double rate = completionRate.workPerSecond(nowNanos);
    double seconds =
        rate > 0 ? work / rate : policy.retryAfterMin().toNanos() / (double) NANOS_PER_SECOND;
    return clampSeconds(seconds);
  }

  /** Seconds until a typical in-flight request completes (for per-tenant caps). */
  private long retryAfterForHold() {
    double holdNanos = completionRate.meanHoldNanos();
    double seconds =
        holdNanos > 0
            ? holdNanos / NANOS_PER_SECOND
            : policy.retryAfterMin().toNanos() / (double) NANOS_PER_SECOND;
    return clampSeconds(seconds);
  }

  private long clampSeconds(double seconds) {
    long min = Math.max(1, ceilSeconds(policy.retryAfterMin().toNanos()));
    long max = Math.max(min, policy.retryAfterMax().toSeconds());
    long s = (long) Math.ceil(seconds);
    return Math.max(min, Math.min(max, s));
  }

  private static long ceilSeconds(long nanos) {
    return (nanos + NANOS_PER_SECOND - 1) / NANOS_PER_SECOND;
  }

  private static final long NANOS_PER_SECOND = 1_000_000_000L;

  /** A consistent copy of the pool's counters; arrays are indexed like {@link #classes()}. */
  public Snapshot snapshot(long nowNanos) {
    lock.lock();
    try {
      List<ClassSlot> active = new ArrayList<>();
      for (ClassSlot s : slots) {
        if (!s.retired) {
          active.add(s);
        }
      }
      long[] work = new long[active.size()];
      int[] reqs = new int[active.size()];
      String[] names = new String[active.size()];
      for (int i = 0; i < active.size(); i++) {
        work[i] = active.get(i).work;
        reqs[i] = active.get(i).requests;
        names[i] = active.get(i).policy.name();
      }
      return new Snapshot(
          policy.name(),
          policy.capacityWorkUnits(),
          totalWork,
          totalRequests,
          names,
          work,
          reqs,
          tenantInFlight.size(),
          completionRate.workPerSecond(nowNanos),
          completionRate.meanHoldNanos());
    } finally {
      lock.unlock();
    }
  }

  /** In-flight work of one class (0 if unknown). */
  public long classWork(String className) {
    lock.lock();
    try {
      ClassSlot s = slot(className);
      return s == null ? 0 : s.work;
    } finally {
      lock.unlock();
    }
  }

  /** Counters of a pool at one instant. */
  public record Snapshot(
      String pool,
      long capacityWorkUnits,
      long workInFlight,
      int requestsInFlight,
      String[] classNames,
      long[] classWork,
      int[] classRequests,
      int tenantsInFlight,
      double completedWorkPerSecond,
      double meanHoldNanos) {}

  /**
   * Exponentially decaying completion rate: {@code rate(t) = Σ w_i e^{-(t - t_i)/τ} / τ} work units
   * per second, plus an EWMA of permit hold time. Guarded by the pool lock.
   */
  static final class CompletionRate {
    private final double tauNanos;
    private double accumulated;
    private long lastNanos;
    private boolean started;
    private double meanHoldNanos;

    CompletionRate(long tauNanos) {
      this.tauNanos = tauNanos;
    }

    void onCompletion(long work, long holdNanos, long nowNanos) {
      decay(nowNanos);
      accumulated += work;
      meanHoldNanos = meanHoldNanos == 0 ? holdNanos : meanHoldNanos * 0.8 + holdNanos * 0.2;
    }

    double workPerSecond(long nowNanos) {
      decay(nowNanos);
      return accumulated / (tauNanos / NANOS_PER_SECOND);
    }

    double meanHoldNanos() {
      return meanHoldNanos;
    }

    private void decay(long nowNanos) {
      if (!started) {
        started = true;
        lastNanos = nowNanos;
        return;
      }
      long dt = nowNanos - lastNanos;
      if (dt > 0) {
        accumulated *= Math.exp(-dt / tauNanos);
        lastNanos = nowNanos;
      }
    }
  }
}
