package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
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
 * <p>Concurrency: all mutable fields are guarded by {@link #lock}; critical sections are a few
 * arithmetic operations and one map update. A request larger than the whole pool is accounted as
 * the pool's capacity so it can run alone rather than never.
 */
public final class PoolState {
  private final ReentrantLock lock = new ReentrantLock();
  private final PoolPolicy policy;
  private final List<ClassPolicy> classes;
  private final long[] reserved;
  private final long[] guaranteed;
  private final long[] classWork; // @GuardedBy("lock")
  private final int[] classRequests; // @GuardedBy("lock")
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

  PoolState(
      PoolPolicy policy, List<ClassPolicy> classes, long rateTauNanos, ReleaseListener listener) {
    this.policy = policy;
    this.classes = List.copyOf(classes);
    int n = classes.size();
    this.reserved = new long[n];
    this.guaranteed = new long[n];
    this.classWork = new long[n];
    this.classRequests = new int[n];
    for (int i = 0; i < n; i++) {
      reserved[i] = (long) Math.floor(classes.get(i).reservedShare() * policy.capacityWorkUnits());
      guaranteed[i] =
          (long) Math.floor(classes.get(i).guaranteedShare() * policy.capacityWorkUnits());
    }
    this.completionRate = new CompletionRate(rateTauNanos);
    this.listener = listener;
  }

  public PoolPolicy policy() {
    return policy;
  }

  Decision tryAdmit(AdmissionRequest request, int classIndex, long nowNanos) {
    ClassPolicy cls = classes.get(classIndex);
    Tenant tenant = request.tenant();
    long w = Math.min(request.workUnits(), policy.capacityWorkUnits());
    lock.lock();
    try {
      int maxInFlight = tenant.tier().maxInFlight();
      int[] tenantCount = tenantInFlight.get(tenant.id());
      if (maxInFlight > 0 && tenantCount != null && tenantCount[0] >= maxInFlight) {
        return reject(
            Reason.TENANT_CONCURRENCY,
            429,
            retryAfterForHold(nowNanos),
            "tenant has " + tenantCount[0] + " requests in flight (cap " + maxInFlight + ")");
      }
      if (policy.maxRequests() > 0 && totalRequests >= policy.maxRequests()) {
        return reject(
            Reason.POOL_SATURATED,
            cls.shedStatus(),
            retryAfterForWork(w, nowNanos),
            "pool " + policy.name() + " is at its request cap");
      }
      if (classWork[classIndex] + w > reserved[classIndex] && !cls.borrow()) {
        return reject(
            Reason.CLASS_SHARE,
            cls.shedStatus(),
            retryAfterForWork(classWork[classIndex] + w - reserved[classIndex], nowNanos),
            "class " + cls.name() + " has used its share of pool " + policy.name());
      }
      long need = classWork[classIndex] + w + protectedFor(classIndex);
      if (need > policy.capacityWorkUnits()) {
        return reject(
            Reason.POOL_SATURATED,
            cls.shedStatus(),
            retryAfterForWork(need - policy.capacityWorkUnits(), nowNanos),
            "pool " + policy.name() + " has no capacity for class " + cls.name());
      }
      classWork[classIndex] += w;
      classRequests[classIndex]++;
      totalWork += w;
      totalRequests++;
      if (tenantCount == null) {
        tenantInFlight.put(tenant.id(), new int[] {1});
      } else {
        tenantCount[0]++;
      }
      return new Decision.Admit(new Permit(this, cls, classIndex, tenant, w, nowNanos));
    } finally {
      lock.unlock();
    }
  }

  /** Σ_{j≠k} max(U_j, G_j) — capacity other classes hold or are guaranteed. */
  private long protectedFor(int k) {
    long sum = 0;
    for (int j = 0; j < classWork.length; j++) {
      if (j != k) {
        sum += Math.max(classWork[j], guaranteed[j]);
      }
    }
    return sum;
  }

  void release(Permit permit, Outcome outcome, long nowNanos) {
    lock.lock();
    try {
      int k = permit.classIndex();
      classWork[k] -= permit.workUnits();
      classRequests[k]--;
      totalWork -= permit.workUnits();
      totalRequests--;
      int[] count = tenantInFlight.get(permit.tenant().id());
      if (count != null && --count[0] <= 0) {
        tenantInFlight.remove(permit.tenant().id());
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

  private Decision reject(Reason reason, int status, long retryAfterSeconds, String message) {
    return new Decision.Reject(reason, status, retryAfterSeconds, message);
  }

  /** Seconds until {@code work} units should have drained at the recent completion rate. */
  private long retryAfterForWork(long work, long nowNanos) {
    double rate = completionRate.workPerSecond(nowNanos);
    double seconds =
        rate > 0 ? work / rate : policy.retryAfterMin().toNanos() / (double) NANOS_PER_SECOND;
    return clampSeconds(seconds);
  }

  /** Seconds until a typical in-flight request completes (for per-tenant caps). */
  private long retryAfterForHold(long nowNanos) {
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

  /** A consistent copy of the pool's counters. */
  public Snapshot snapshot(long nowNanos) {
    lock.lock();
    try {
      long[] work = classWork.clone();
      int[] reqs = classRequests.clone();
      return new Snapshot(
          policy.name(),
          policy.capacityWorkUnits(),
          totalWork,
          totalRequests,
          work,
          reqs,
          tenantInFlight.size(),
          completionRate.workPerSecond(nowNanos),
          completionRate.meanHoldNanos());
    } finally {
      lock.unlock();
    }
  }

  public List<ClassPolicy> classes() {
    return classes;
  }

  /** Counters of a pool at one instant; arrays are indexed like {@link #classes()}. */
  public record Snapshot(
      String pool,
      long capacityWorkUnits,
      long workInFlight,
      int requestsInFlight,
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
