package io.sluice.core.admission;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.adapt.LimitStore;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.queue.TenantFairQueue;
import io.sluice.core.queue.WaitPredictor;
import io.sluice.core.share.ClassDemand;
import io.sluice.core.share.ClassLimits;
import io.sluice.core.share.ClassShares;
import io.sluice.core.share.Demand;
import io.sluice.core.share.SharedPool;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.DoubleSupplier;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/**
 * One pool's admission: the order of the checks and the lock around its parts. Each part has one
 * job (docs/decisions/0006-pool-state-split.md):
 *
 * <ul>
 *   <li>{@link CapacityLedger}: what is in flight per class and tenant, and whether a request fits
 *       (tenant cap, request cap, class share, pool capacity);
 *   <li>{@link QueueCoordinator}: the class queues and the scheduler across them — queue, cancel,
 *       expire, and start waiting requests when capacity frees;
 *   <li>{@link ServiceTimes}: the learned service-time model and the wait predictor;
 *   <li>{@link RetryAdvice}: the Retry-After of every refusal.
 * </ul>
 *
 * <p>Decision order for a request of class {@code k}: unknown class (404); expire what is due; the
 * tenant's cap on in-flight plus queued requests (429 {@code tenant_concurrency}); a measured
 * service time longer than the time left (503 {@code deadline_unreachable}); then start at once if
 * it fits and nobody of equal or higher priority is waiting (rule 2), else queue when the adapter
 * can hold it, else refuse with the capacity reason.
 *
 * <p>Concurrency: all parts are guarded by {@link #lock}; critical sections are a few arithmetic
 * operations and one map update (or one queue operation). Waiters are called outside the lock.
 */
public final class PoolState implements SharedPool {
  private final ReentrantLock lock = new ReentrantLock();
  private final ReleaseListener listener;
  private final CapacityLedger capacity;
  private final ServiceTimes service;
  private final RetryAdvice retry;
  private final QueueCoordinator queues;
  // the policy as configured; the ledger and the queues hold the effective one (the adaptive
  // limit's numbers in place of capacity and maxRequests), written under the lock
  private volatile PoolPolicy configured;
  // the adaptive limit: created at its first tick (it needs the time), null when the pool's
  // numbers are fixed; carried: the limit a replaced one had (a hot reload), NaN: none
  private volatile @Nullable AdaptiveLimit adaptive;
  private double carried = Double.NaN;
  // permits held for a predicted tail now (their response end is not seen): Permit.markEndUnseen
  private final java.util.concurrent.atomic.AtomicInteger tailsHeld =
      new java.util.concurrent.atomic.AtomicInteger();
  private volatile boolean pauseSeen; // paused at the last tick (its end starts waiting requests)
  // permits the upstream refused (overloaded) still held, and their work: under the lock
  private int refusedHeld;
  private long refusedWork;
  // answers of requests of an adaptive pool by who produced them (AnswerSource ordinal)
  private final java.util.concurrent.atomic.LongAdder[] answers =
      newAdders(io.sluice.core.adapt.AnswerSource.values().length);
  // set by decideLocked: the request could not start for want of capacity (its refusal, if any,
  // is unmet demand for a replica share)
  private boolean unmet;

  /**
   * Waiter answers collected under the lock, handed out by {@link #takeCallbacks()} before it is
   * released: reused, so an admit or release that answers nobody (the pool is not saturated)
   * allocates no list.
   */
  private final ArrayList<QueueCoordinator.Callback> pending = new ArrayList<>();

  private static final QueueCoordinator.Callback[] NO_CALLBACKS = {};

  /** Told about every release, outside the lock; the queue scheduler hooks in here. */
  @FunctionalInterface
  public interface ReleaseListener {
    void onRelease(PoolState pool, Permit permit, Outcome outcome, long nowNanos);

    ReleaseListener NONE = (p, permit, o, n) -> {};
  }

  PoolState(
      PoolPolicy policy,
      List<ClassPolicy> classes,
      long rateTauNanos,
      ReleaseListener listener,
      DoubleSupplier uniform) {
    this.listener = listener;
    this.configured = policy;
    PoolPolicy effective = effective(policy, Double.NaN);
    this.capacity = new CapacityLedger(effective);
    List<ClassSlot> slots = capacity.reconfigure(effective, classes);
    this.service = new ServiceTimes(policy);
    this.retry = new RetryAdvice(rateTauNanos, uniform, policy);
    this.queues =
        new QueueCoordinator(capacity, service, retry, this::startQueued, slots, effective);
  }

  /**
   * Applies a new policy; in-flight work and waiting requests are kept. An adaptive pool keeps its
   * learned limit (clamped into the new bounds) when it stays adaptive.
   */
  void reconfigure(PoolPolicy newPolicy, List<ClassPolicy> classes) {
    lock.lock();
    try {
      AdaptiveLimit a = adaptive;
      double keep = a != null ? a.fraction() : carried;
      configured = newPolicy;
      if (a != null && !a.ceiling().equals(newPolicy)) {
        adaptive = null; // the next tick makes a new one from the limit kept here
      }
      carried = newPolicy.adaptive().enabled() ? keep : Double.NaN;
      PoolPolicy effective = effective(newPolicy, adaptive != null ? keep : carried);
      List<ClassSlot> slots = capacity.reconfigure(effective, classes);
      queues.reconfigure(slots, effective);
      service.reconfigure(newPolicy);
      retry.reconfigure(newPolicy);
    } finally {
      lock.unlock();
    }
  }

  /** {@code policy} with the adaptive limit {@code fraction}'s numbers when it is adaptive. */
  private static PoolPolicy effective(PoolPolicy policy, double fraction) {
    if (!policy.adaptive().enabled()) {
      return policy;
    }
    return policy.withLimits(
        AdaptiveLimit.workOf(policy, fraction), AdaptiveLimit.requestsOf(policy, fraction));
  }

  /**
   * The policy in effect: the configured one, or for an adaptive pool the same with the learned
   * limit's work units and request slots as its capacity and maxRequests.
   */
  @Override
  public PoolPolicy policy() {
    return capacity.policy();
  }

  /** The policy as configured (for an adaptive pool, capacity and maxRequests are the ceiling). */
  public PoolPolicy configuredPolicy() {
    return configured;
  }

  /** The pool's adaptive limit, or null (fixed numbers, or not ticked yet). */
  public @Nullable AdaptiveLimit adaptive() {
    return adaptive;
  }

  /**
   * The adaptive limit's periodic step (the bootstrap's timer): makes the limit at the first tick,
   * runs the latency rule with the pool's load now, and applies a changed limit (a larger one, or
   * the end of a pause, starts waiting requests). Returns the limit, or null for a fixed pool.
   */
  public @Nullable AdaptiveLimit adaptTick(long nowNanos) {
    PoolPolicy p = configured;
    if (!p.adaptive().enabled()) {
      return null;
    }
    AdaptiveLimit a = adaptive;
    if (a == null) {
      lock.lock();
      try {
        a = adaptive;
        if (a == null || !a.ceiling().equals(configured)) {
          a = new AdaptiveLimit(configured, carried, nowNanos);
          adaptive = a;
          carried = Double.NaN;
          applyLimitLocked(a);
        }
      } finally {
        lock.unlock();
      }
    }
    boolean wasPaused = a.pauseRemainingNanos(nowNanos) > 0 || pauseSeen;
    double use;
    lock.lock();
    try {
      use = capacity.use();
    } finally {
      lock.unlock();
    }
    boolean changed = a.tick(nowNanos, use);
    boolean pauseEnded = wasPaused && !a.paused(nowNanos);
    pauseSeen = a.paused(nowNanos);
    if (changed || pauseEnded) {
      applyAdaptive(a, nowNanos);
    }
    return a;
  }

  /**
   * The upstream answered {@code status} (with a Retry-After of {@code retryAfterNanos}, negative
   * if none) to a request of this pool admitted at {@code admittedAtNanos}: an overload shrinks an
   * adaptive limit and may pause the pool (the pool's in flight unknown).
   */
  public void onUpstream(int status, long retryAfterNanos, long admittedAtNanos, long nowNanos) {
    AdaptiveLimit a = adaptive;
    if (a != null && a.onUpstream(status, retryAfterNanos, admittedAtNanos, nowNanos)) {
      applyAdaptive(a, nowNanos);
    }
  }

  /**
   * An answer of {@code source} with {@code status} (and a Retry-After of {@code retryAfterNanos},
   * negative if none) to the request holding {@code permit}: counted by source; only the upstream's
   * own answers reach the adaptive limit, with the pool's requests in flight that the upstream has
   * not refused (an overload settles the limit at what the upstream took).
   */
  public void onAnswer(
      Permit permit,
      int status,
      long retryAfterNanos,
      io.sluice.core.adapt.AnswerSource source,
      long nowNanos) {
    AdaptiveLimit a = adaptive;
    if (a == null) {
      return;
    }
    answers[source.ordinal()].increment();
    if (source != io.sluice.core.adapt.AnswerSource.UPSTREAM) {
      return;
    }
    int requests;
    long work;
    lock.lock();
    try {
      requests = capacity.totalRequests() - refusedHeld;
      work = capacity.totalWork() - refusedWork;
      if (capacity.shared()) {
        // this replica holds its share of the pool: what the upstream took of the whole pool is
        // about the others in flight here over that share (the store keeps the smallest estimate)
        long whole = capacity.policy().capacityWorkUnits();
        double share = whole <= 0 ? 1.0 : Math.min(1.0, (double) capacity.workLimit() / whole);
        if (share > 0 && share < 1.0) {
          requests = 1 + (int) Math.round(Math.max(0, requests - 1) / share);
          work = Math.round(work / share);
        }
      }
      if (a.ceiling().adaptive().overload(status)
          && !permit.upstreamRefused
          && !permit.isReleased()) {
        permit.upstreamRefused = true;
        refusedHeld++;
        refusedWork += permit.workUnits();
      }
    } finally {
      lock.unlock();
    }
    if (a.onUpstream(
        status,
        retryAfterNanos,
        permit.admittedAtNanos(),
        nowNanos,
        Math.max(1, requests),
        Math.max(1, work))) {
      applyAdaptive(a, nowNanos);
    }
  }

  /** Answers of requests of this (adaptive) pool produced by {@code source}. */
  public long answers(io.sluice.core.adapt.AnswerSource source) {
    return answers[source.ordinal()].sum();
  }

  private static java.util.concurrent.atomic.LongAdder[] newAdders(int n) {
    java.util.concurrent.atomic.LongAdder[] out = new java.util.concurrent.atomic.LongAdder[n];
    for (int i = 0; i < n; i++) {
      out[i] = new java.util.concurrent.atomic.LongAdder();
    }
    return out;
  }

  /** A latency sample of a request of this pool (for an adaptive limit). */
  public void onLatency(AdaptiveLimit.Signal signal, double nanos, long admittedAtNanos) {
    AdaptiveLimit a = adaptive;
    if (a != null) {
      a.onLatency(signal, nanos, admittedAtNanos);
    }
  }

  /** The pool's shared limit as the store answered it (several replicas). */
  public void adoptShared(LimitStore.Shared shared, long nowNanos) {
    AdaptiveLimit a = adaptive;
    if (a != null
        && a.adopt(
            shared.fraction(),
            shared.cause(),
            shared.pauseRemainingMillis() * 1_000_000L,
            shared.ttftBaselineNanos(),
            shared.tpotBaselineNanos(),
            nowNanos)) {
      applyAdaptive(a, nowNanos);
    }
  }

  /** Applies the adaptive limit's numbers and starts what now fits. */
  private void applyAdaptive(AdaptiveLimit a, long nowNanos) {
    drainIf(
        () -> {
          if (adaptive != a) {
            return false; // replaced by a reload meanwhile
          }
          applyLimitLocked(a);
          return true;
        },
        nowNanos);
  }

  private void applyLimitLocked(AdaptiveLimit a) {
    PoolPolicy effective = configured.withLimits(a.work(), a.requests());
    if (effective.equals(capacity.policy())) {
      return;
    }
    List<ClassSlot> slots = capacity.reconfigure(effective, classes());
    queues.reconfigure(slots, effective);
    queues.reboundToShare();
  }

  /** Under the lock: no Retry-After of this pool is shorter than the rest of an upstream pause. */
  private long pausedFor(long nowNanos) {
    AdaptiveLimit a = adaptive;
    long left = a == null ? 0 : a.pauseRemainingNanos(nowNanos);
    retry.floor(left);
    return left;
  }

  /** Active (non-retired) classes in rank order. */
  public List<ClassPolicy> classes() {
    List<ClassPolicy> out = new ArrayList<>();
    for (ClassSlot s : capacity.slots()) {
      if (!s.retired) {
        out.add(s.policy);
      }
    }
    return out;
  }

  /**
   * The Retry-After (seconds) of a tenant concurrency refusal: the mean permit hold time, as the
   * local cap's (a slot frees when one of the tenant's requests ends); for the cap across replicas.
   */
  public long tenantRetryAfterSeconds() {
    lock.lock();
    try {
      return retry.forHold();
    } finally {
      lock.unlock();
    }
  }

  /**
   * The fraction of the pool this replica may hold: its granted work share over the pool's work
   * limit in effect when it counts against a share ({@code replicas}), else 1. In {@code [0, 1]}.
   */
  public double replicaShare() {
    lock.lock();
    try {
      if (!capacity.shared()) {
        return 1.0;
      }
      long whole = capacity.policy().capacityWorkUnits();
      return whole <= 0 ? 1.0 : Math.min(1.0, (double) capacity.workLimit() / whole);
    } finally {
      lock.unlock();
    }
  }

  /**
   * The capacity a request of {@code className} could take now, as a fraction of the pool (or this
   * replica's share of it); 0 for an unknown class. The degrade ladder's headroom trigger.
   */
  public double classHeadroom(String className) {
    lock.lock();
    try {
      ClassSlot k = capacity.slot(className);
      return k == null ? 0 : capacity.classHeadroom(k);
    } finally {
      lock.unlock();
    }
  }

  /**
   * The pool's one decision: admit now, queue, or refuse, as {@code ask} allows (PRODUCT.md rules
   * 2–4). A {@link Decision.Queued} result means the ask's waiter will be called exactly once.
   */
  Decision decide(AdmissionRequest request, Ask ask) {
    QueueCoordinator.Callback[] callbacks;
    Decision d;
    lock.lock();
    try {
      d = decideLocked(request, ask, pending);
      if (ask.countsDemand()
          && ((d instanceof Decision.Reject r && unmet && r.reason() != Reason.TENANT_CONCURRENCY)
              || d instanceof Decision.WouldQueue)) {
        // unmet demand since the last demand() read, by class
        ClassSlot k = capacity.slot(request.requestClass().name());
        if (k != null) {
          k.refusedWork += capacity.demandWork(k, request.workUnits());
          k.refusedRequests++;
        }
      }
      callbacks = takeCallbacks();
    } finally {
      pending.clear(); // empty unless the section threw; then its answers are dropped
      lock.unlock();
    }
    run(callbacks);
    return d;
  }

  private Decision decideLocked(
      AdmissionRequest request, Ask ask, List<QueueCoordinator.Callback> callbacks) {
    long nowNanos = ask.nowNanos();
    long maxHoldNanos = ask.maxHoldNanos();
    @Nullable Waiter waiter = ask.waiter();
    boolean shadow = ask.mode() == Ask.Mode.SHADOW;
    long degradeWaitNanos = ask.degradeWaitNanos();
    unmet = false;
    long pause = pausedFor(nowNanos);
    ClassSlot k = capacity.slot(request.requestClass().name());
    if (k == null) {
      return new Decision.Reject(
          Reason.UNKNOWN_ROUTE,
          404,
          0,
          "class " + request.requestClass().name() + " is not configured");
    }
    queues.drain(nowNanos, callbacks); // expire what is due so it does not count as waiting
    PoolPolicy policy = capacity.policy();
    Tenant tenant = request.tenant();
    int maxInFlight = tenant.tier().maxInFlight();
    int load =
        maxInFlight > 0
            ? capacity.tenantInFlight(tenant.id()) + queues.tenantQueued(tenant.id())
            : 0;
    if (maxInFlight > 0 && load >= maxInFlight) {
      long hold = retry.holdNanos();
      return new Decision.Reject(
          Reason.TENANT_CONCURRENCY,
          429,
          retry.seconds(hold),
          tenant.capRefusal(
              "tenant has " + load + " requests in flight or waiting (cap " + maxInFlight + ")"),
          hold);
    }
    Decision.Reject late = cannotFinishInTime(k, request, nowNanos);
    if (late != null) {
      return late;
    }
    // no tenant check here: in flight <= in flight + queued, which is below the cap (checked above)
    Decision.Reject refused =
        pause > 0
            ? new Decision.Reject(
                Reason.UPSTREAM_OVERLOADED,
                k.policy.shedStatus(),
                retry.seconds(pause),
                "the upstream of pool "
                    + policy.name()
                    + " asked for a pause (Retry-After): no new request starts for "
                    + (pause + 999_999) / 1_000_000
                    + " ms",
                pause)
            : capacityRefusal(k, request.workUnits(), nowNanos);
    // Rule 2: start at once only if nobody of equal or higher priority waits, or if the scheduler
    // would start it at once anyway (its class's reserve has room and nothing of its class waits):
    // it waits behind no one, so no wait is predicted for it from their queues.
    boolean waiting =
        queues.hasWaitingAtOrAbove(k.policy.rank())
            && !queues.startsInReserve(k, capacity.accountedWork(k, request.workUnits()));
    if (refused == null && !waiting) {
      return new Decision.Admit(capacity.take(this, k, request, nowNanos));
    }
    // from here on the request cannot start for want of capacity: however it is refused (the
    // capacity reason, a full queue, a wait too long for its deadline), it is unmet demand
    unmet = true;
    if (refused == null) {
      long drain =
          service.drainNanos(
              queues.queuedWorkAtOrAbove(k.policy.rank()),
              queues.queuedItemsAtOrAbove(k.policy.rank()));
      refused =
          new Decision.Reject(
              Reason.POOL_SATURATED,
              k.policy.shedStatus(),
              retry.seconds(drain),
              "requests of equal or higher priority are waiting in pool " + policy.name(),
              drain);
    }
    long maxWait =
        Math.min(k.policy.maxQueueWait().toNanos(), maxHoldNanos - policy.holdMargin().toNanos());
    boolean canWait = maxHoldNanos > 0 && maxWait > 0 && maxWait > pause;
    if (degradeWaitNanos > 0 && !shadow) {
      // the ladder's wait trigger: tried first when the request would be refused, or wait longer
      // than the threshold; the caller decides again without it if no rung admits it
      if (waiter == null || !canWait) {
        return new Decision.Degradable(refused.reason(), -1); // counted when decided again
      }
      Decision w = queues.wouldEnqueue(k, request, maxWait, nowNanos, refused.reason());
      if (!(w instanceof Decision.WouldQueue q)) {
        return new Decision.Degradable(refused.reason(), -1);
      }
      // the wait it would have: the prediction, or what the class's oldest waiting request has
      // already waited when that is longer (a queue's head-of-line age is measured, not predicted)
      long expected = Math.max(q.predictedWaitNanos(), k.queue.oldestAgeNanos(nowNanos));
      if (expected > degradeWaitNanos) {
        return new Decision.Degradable(refused.reason(), expected);
      }
    }
    if (waiter == null && !shadow) {
      return refused;
    }
    if (!canWait) {
      return refused; // queue-hold off for this request, or it cannot outwait the pause
    }
    if (waiter == null) { // shadow: what enqueue would answer, nothing queued
      return queues.wouldEnqueue(k, request, maxWait, nowNanos, refused.reason());
    }
    return queues.enqueue(k, request, waiter, maxWait, nowNanos, callbacks);
  }

  /**
   * Rule 3 with no wait: a request whose deadline service time ({@link
   * ServiceTimes#deadlineServiceNanos}) is longer than the time left before its deadline would be
   * answered after its client stopped waiting, so it is refused even when it could start at once
   * (its tokens would all be wasted). Only a measured service time counts: before the pool's first
   * completion the default service time is a pessimistic guess, and a request that might finish is
   * not refused on a guess.
   */
  private Decision.@Nullable Reject cannotFinishInTime(
      ClassSlot k, AdmissionRequest request, long nowNanos) {
    if (!service.hasSamples()) {
      return null;
    }
    long serviceNanos =
        service.deadlineServiceNanos(k, request, capacity.accountedWork(k, request.workUnits()));
    if (WaitPredictor.feasible(
        nowNanos, request.deadlineNanos(), Long.MAX_VALUE, 0, serviceNanos)) {
      return null;
    }
    long left = Math.max(0, request.deadlineNanos() - nowNanos);
    return new Decision.Reject(
        Reason.DEADLINE_UNREACHABLE,
        503,
        retry.seconds(0),
        "expected service time "
            + serviceNanos / 1_000_000L
            + " ms is longer than the "
            + left / 1_000_000L
            + " ms left before the deadline");
  }

  /** Why {@code work} of class {@code k} cannot start now (not the tenant cap), or null. */
  private Decision.@Nullable Reject capacityRefusal(ClassSlot k, long work, long nowNanos) {
    CapacityLedger.Shortfall s = capacity.checkCapacity(k, work);
    if (s == null) {
      return null;
    }
    long wait =
        s.drainRequests() > 0
            ? service.drainNanos(0, s.drainRequests())
            : retry.workNanos(s.drainWork(), nowNanos);
    return new Decision.Reject(
        s.reason(), k.policy.shedStatus(), retry.seconds(wait), s.message(), wait);
  }

  /**
   * A waiting request's turn came (the scheduler proposes, this disposes). With the service time
   * measured now it may no longer finish before its deadline (the estimate may have grown while it
   * waited, or was still the pool's mean when it was queued): then it leaves the queue refused
   * instead of started. The tenant's cap was checked at arrival against in-flight + queued.
   */
  private QueueCoordinator.@Nullable Start startQueued(
      ClassSlot k, AdmissionRequest request, long now) {
    Decision.Reject tooLate = cannotFinishInTime(k, request, now);
    if (tooLate != null) {
      return new QueueCoordinator.Start(null, tooLate);
    }
    if (pausedFor(now) > 0 || capacity.checkCapacity(k, request.workUnits()) != null) {
      return null;
    }
    return new QueueCoordinator.Start(capacity.take(this, k, request, now), null);
  }

  /** Removes a queued request whose stream went away; true if it was still waiting. */
  boolean cancel(long ticket, long nowNanos) {
    QueueCoordinator.Callback[] callbacks;
    boolean removed;
    lock.lock();
    try {
      pausedFor(nowNanos);
      removed = queues.cancel(ticket, nowNanos, pending);
      callbacks = takeCallbacks();
    } finally {
      pending.clear(); // empty unless the section threw; then its answers are dropped
      lock.unlock();
    }
    run(callbacks);
    return removed;
  }

  /** Expires due items and starts whatever fits (the adapter's timer calls this). */
  void expireDue(long nowNanos) {
    drainIf(() -> true, nowNanos);
  }

  /** Answers every queued item with 503 (server shutdown); returns how many. */
  int refuseAllQueued(Reason reason, long nowNanos) {
    QueueCoordinator.Callback[] callbacks;
    int n;
    lock.lock();
    try {
      n = queues.refuseAll(reason, nowNanos, pending);
      callbacks = takeCallbacks();
    } finally {
      pending.clear(); // empty unless the section threw; then its answers are dropped
      lock.unlock();
    }
    run(callbacks);
    return n;
  }

  /** Earliest expiry among queued items, for the adapter's timer. */
  public OptionalLong nextExpiryNanos() {
    lock.lock();
    try {
      return queues.nextExpiryNanos();
    } finally {
      lock.unlock();
    }
  }

  /** Grows a running permit's work in flight ({@link Permit#grow}); returns the units added. */
  long grow(Permit permit, long more) {
    lock.lock();
    try {
      return permit.isReleased() ? 0 : capacity.grow(permit, more);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Work units in flight beyond the admitted estimates now: answers that streamed past their output
   * reserve and grew their charge.
   */
  public long overrunWork() {
    lock.lock();
    try {
      return capacity.overrunWork();
    } finally {
      lock.unlock();
    }
  }

  /**
   * How long after its admission {@code permit}'s request is predicted to end when its response's
   * end will not be seen and its response headers came {@code headersNanos} after its admission
   * (negative if unknown): its headers time plus its reserved output at the pool's learned time per
   * output token, else its class's median end-to-end time of answers seen to end, else the pool's
   * median, else the pool's learned mean service time for its work ({@code defaultServiceTime}
   * before any completion: {@link #serviceTimeGuessed}).
   */
  public long tailNanos(Permit permit, long headersNanos) {
    lock.lock();
    try {
      return service.tailNanos(
          permit.slot(),
          permit.workUnits(),
          permit.inputTokens(),
          permit.outputTokens(),
          headersNanos);
    } finally {
      lock.unlock();
    }
  }

  /** As {@link #tailNanos(Permit, long)} with the headers time unknown. */
  public long tailNanos(Permit permit) {
    return tailNanos(permit, -1);
  }

  /**
   * True while the pool has seen no response end: its service time (the hold of a response whose
   * end is not seen, the deadline checks' service time) is {@code defaultServiceTime}, a guess.
   */
  public boolean serviceTimeGuessed() {
    lock.lock();
    try {
      return service.tailOnGuess();
    } finally {
      lock.unlock();
    }
  }

  /** Permits held now for a predicted tail ({@link Permit#markEndUnseen}). */
  public int tailsHeld() {
    return tailsHeld.get();
  }

  void tailStarted() {
    tailsHeld.incrementAndGet();
  }

  void tailEnded() {
    tailsHeld.decrementAndGet();
  }

  void release(Permit permit, Outcome outcome, long nowNanos) {
    if (permit.endUnseen()) {
      tailEnded();
    }
    QueueCoordinator.Callback[] callbacks;
    lock.lock();
    try {
      pausedFor(nowNanos);
      if (permit.upstreamRefused) {
        permit.upstreamRefused = false;
        refusedHeld--;
        refusedWork = refusedHeld == 0 ? 0 : Math.max(0, refusedWork - permit.workUnits());
      }
      capacity.release(permit);
      if (outcome == Outcome.COMPLETED) { // the completed-work gauge and Retry-After's basis
        retry.onRelease(permit.workUnits(), nowNanos - permit.admittedAtNanos(), nowNanos);
      }
      service.onRelease(permit.slot(), permit, outcome, nowNanos);
      queues.drain(nowNanos, pending);
      callbacks = takeCallbacks();
    } finally {
      pending.clear(); // empty unless the section threw; then its answers are dropped
      lock.unlock();
    }
    listener.onRelease(this, permit, outcome, nowNanos);
    run(callbacks);
  }

  /**
   * Limits this replica to its granted share of the pool ({@code work} units, {@code requests}
   * slots); a larger share starts waiting requests at once, a smaller one admits nothing new until
   * in-flight work drains below it. Permits in flight are kept either way. With {@code classes}
   * (the other replicas' load by class, and the idle class guarantees placed on this replica) the
   * class reserves and guarantees hold for the pool as a whole; with null they are scaled to the
   * share.
   */
  @Override
  public void applyShare(long work, int requests, @Nullable ClassShares classes, long nowNanos) {
    drainIf(
        () -> {
          boolean changed = capacity.applyShare(work, requests, classes);
          queues.reboundToShare();
          return changed;
        },
        nowNanos);
  }

  /** Every active class's {@link ClassLimits}, in rank order. */
  @Override
  public List<ClassLimits> classLimits() {
    lock.lock();
    try {
      return capacity.poolClassLimits();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Under the lock: drains the queues (expire what is due, start what fits) when {@code change}
   * says something changed; then answers the waiters outside the lock.
   */
  private void drainIf(java.util.function.BooleanSupplier change, long nowNanos) {
    QueueCoordinator.Callback[] callbacks;
    lock.lock();
    try {
      pausedFor(nowNanos);
      if (change.getAsBoolean()) {
        queues.drain(nowNanos, pending);
      }
      callbacks = takeCallbacks();
    } finally {
      pending.clear(); // empty unless the section threw; then its answers are dropped
      lock.unlock();
    }
    run(callbacks);
  }

  /**
   * What this replica holds and wants of the pool now: in flight, waiting, and refused for want of
   * capacity since the last call (which this call resets), in total and by class, with the limits
   * it counts against. Demand counts each request's own work (at most what its class can hold in
   * the pool), not the work it is counted as on this replica's share: a request larger than the
   * share asks for more than the share.
   */
  @Override
  public Demand demand() {
    lock.lock();
    try {
      long inFlightDemand = 0;
      long queuedDemand = 0;
      long refusedWork = 0;
      int refusedRequests = 0;
      List<ClassDemand> classes = new ArrayList<>();
      for (ClassSlot s : capacity.slots()) {
        inFlightDemand += s.demandWork;
        queuedDemand += s.queuedDemandWork;
        refusedWork += s.refusedWork;
        refusedRequests += s.refusedRequests;
        classes.add(
            new ClassDemand(
                s.name(),
                s.demandWork + s.queuedDemandWork + s.refusedWork,
                s.requests + s.queue.depth() + s.refusedRequests,
                s.work,
                s.requests,
                s.queue.peek().map(q -> q.payload().demandWork()).orElse(0L)));
        s.refusedWork = 0;
        s.refusedRequests = 0;
      }
      return new Demand(
          capacity.totalWork(),
          capacity.totalRequests(),
          inFlightDemand,
          queuedDemand,
          (int) queues.queuedItemsAtOrAbove(Integer.MAX_VALUE),
          refusedWork,
          refusedRequests,
          capacity.workLimit(),
          capacity.requestLimit(),
          classes);
    } finally {
      lock.unlock();
    }
  }

  /**
   * The answers collected in {@link #pending}, emptying it; called under the lock, just before it
   * is released (a waiter may call back into this pool).
   */
  private QueueCoordinator.Callback[] takeCallbacks() {
    if (pending.isEmpty()) {
      return NO_CALLBACKS;
    }
    QueueCoordinator.Callback[] out = pending.toArray(NO_CALLBACKS);
    pending.clear();
    return out;
  }

  private static void run(QueueCoordinator.Callback[] callbacks) {
    for (QueueCoordinator.Callback c : callbacks) {
      c.run();
    }
  }

  /** A consistent copy of the pool's counters; arrays are indexed like {@link #classes()}. */
  public Snapshot snapshot(long nowNanos) {
    lock.lock();
    try {
      List<ClassSlot> active = new ArrayList<>();
      for (ClassSlot s : capacity.slots()) {
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
        names[i] = active.get(i).name();
      }
      PoolPolicy policy = capacity.policy();
      return new Snapshot(
          policy.name(),
          policy.capacityWorkUnits(),
          capacity.totalWork(),
          capacity.totalRequests(),
          names,
          work,
          reqs,
          capacity.tenantsInFlight(),
          retry.completedWorkPerSecond(nowNanos),
          retry.meanHoldNanos());
    } finally {
      lock.unlock();
    }
  }

  /** Queue state of one class at one instant (for gauges and /debug/queues). */
  public record QueueSnapshot(
      String className,
      int depth,
      long queuedWork,
      long oldestAgeNanos,
      List<TenantFairQueue.TenantLoad> topTenants) {}

  /** Every active class's queue, in rank order. */
  public List<QueueSnapshot> queues(long nowNanos, int topTenants) {
    lock.lock();
    try {
      return queues.snapshots(nowNanos, topTenants);
    } finally {
      lock.unlock();
    }
  }

  /** Queued requests of one class (0 if unknown). */
  public int queueDepth(String className) {
    return (int) readSlot(className, s -> s.queue.depth());
  }

  /** Queued work of one class (0 if unknown). */
  public long queuedWork(String className) {
    return readSlot(className, s -> s.queue.queuedWork());
  }

  /** Age of the oldest request waiting in one class's queue at {@code nowNanos} (0: none). */
  public long oldestQueuedAgeNanos(String className, long nowNanos) {
    return readSlot(className, s -> s.queue.oldestAgeNanos(nowNanos));
  }

  /** In-flight work of one class (0 if unknown). */
  public long classWork(String className) {
    return readSlot(className, s -> s.work);
  }

  /** One number of an active class slot, read under the lock; 0 if the class is unknown. */
  private long readSlot(String className, ToLongFunction<ClassSlot> field) {
    lock.lock();
    try {
      ClassSlot s = capacity.slot(className);
      return s == null ? 0 : field.applyAsLong(s);
    } finally {
      lock.unlock();
    }
  }

  /** Counters of a pool at one instant. */
  @SuppressWarnings("ArrayRecordComponent") // a read-only view for metrics and /debug/queues
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
}
