package io.sluice.core.admission;

import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.queue.WaitPredictor;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The pool's decision rules, in order, for a request of class {@code k} (PRODUCT.md rules 2–4):
 * unknown class (404); expire what is due; the tenant's cap on in-flight plus queued requests (429
 * {@code tenant_concurrency}); a measured service time longer than the time left (503 {@code
 * deadline_unreachable}); then start at once if it fits and nobody of equal or higher priority is
 * waiting (rule 2), else queue when the adapter can hold it, else refuse with the capacity reason.
 * And the other side of a queued request's turn: {@link #startQueued}.
 *
 * <p>Not thread-safe: {@link PoolState} calls every method under its lock, and owns the sequence;
 * these are the rules it sequences. Time is an argument.
 */
final class AdmissionRules {
  private final PoolState pool;
  private final CapacityLedger capacity;
  private final CapacityRules rules;
  private final QueueCoordinator queues;
  private final ServiceTimes service;
  private final RetryAdvice retry;
  private final AdaptiveLimitSource adaptive;
  private final ReplicaShareLimit share;
  private final LimitSources limits;
  // set by decideLocked: the request could not start for want of capacity (its refusal, if any,
  // is unmet demand for a replica share)
  private boolean unmet;

  AdmissionRules(
      PoolState pool,
      CapacityLedger capacity,
      CapacityRules rules,
      QueueCoordinator queues,
      ServiceTimes service,
      RetryAdvice retry,
      AdaptiveLimitSource adaptive,
      ReplicaShareLimit share,
      LimitSources limits) {
    this.pool = pool;
    this.limits = limits;
    this.share = share;
    this.capacity = capacity;
    this.rules = rules;
    this.queues = queues;
    this.service = service;
    this.retry = retry;
    this.adaptive = adaptive;
  }

  /** Whether the last decision's request could not start for want of capacity. */
  boolean unmet() {
    return unmet;
  }

  /**
   * Under the lock, before anything may start: a replica share past its fence gives way to the
   * store-down share ({@link ReplicaShareLimit#fenced}); no Retry-After of this pool is shorter
   * than the rest of an upstream pause.
   */
  long pausedFor(long nowNanos) {
    if (share.fenced(nowNanos)) {
      pool.applyLimitsLocked();
    }
    long left = adaptive.pauseRemainingNanos(nowNanos);
    retry.floor(left);
    return left;
  }

  /**
   * The pool's one decision for {@code request} as {@code ask} allows, under the pool's lock;
   * answers of waiters it makes go to {@code callbacks}. Sets {@link #unmet}.
   */
  Decision decideLocked(
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
          "class " + request.requestClass().name() + " is not configured",
          Decision.Reject.UNPREDICTED);
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
                k.policy().shedStatus(),
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
        queues.hasWaitingAtOrAbove(k.policy().rank())
            && !queues.startsInReserve(k, capacity.classRuleWork(k, request.workUnits()));
    if (refused == null && !waiting) {
      return new Decision.Admit(capacity.take(pool, k, request, nowNanos));
    }
    // from here on the request cannot start for want of capacity: however it is refused (the
    // capacity reason, a full queue, a wait too long for its deadline), it is unmet demand
    unmet = true;
    if (refused == null) {
      long drain =
          service.drainNanos(
              queues.queuedWorkAtOrAbove(k.policy().rank()),
              queues.queuedItemsAtOrAbove(k.policy().rank()));
      refused =
          new Decision.Reject(
              Reason.POOL_SATURATED,
              k.policy().shedStatus(),
              retry.seconds(drain),
              "requests of equal or higher priority are waiting in pool " + policy.name(),
              drain);
    }
    long maxWait =
        Math.min(k.policy().maxQueueWait().toNanos(), maxHoldNanos - policy.holdMargin().toNanos());
    boolean canWait = maxHoldNanos > 0 && maxWait > 0 && maxWait > pause;
    if (degradeWaitNanos > 0 && !shadow) {
      // the ladder's wait trigger: tried first when the request would be refused, or wait longer
      // than the threshold; the caller decides again without it if no rung admits it
      if (waiter == null || !canWait) {
        return new Decision.Degradable(refused.reason(), -1); // counted when decided again
      }
      Decision w =
          queues.wouldEnqueue(
              k, request, maxWait, nowNanos, refused.reason(), limits.resume(nowNanos));
      if (!(w instanceof Decision.WouldQueue q)) {
        return new Decision.Degradable(refused.reason(), -1);
      }
      // the wait it would have: the prediction, or what the class's oldest waiting request has
      // already waited when that is longer (a queue's head-of-line age is measured, not predicted)
      long expected = Math.max(q.predictedWaitNanos(), k.queue().oldestAgeNanos(nowNanos));
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
      return queues.wouldEnqueue(
          k, request, maxWait, nowNanos, refused.reason(), limits.resume(nowNanos));
    }
    return queues.enqueue(
        k, request, waiter, maxWait, nowNanos, callbacks, Reason.ADMITTED, limits.resume(nowNanos));
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
            + " ms left before the deadline",
        Decision.Reject.UNPREDICTED);
  }

  /** Why {@code work} of class {@code k} cannot start now (not the tenant cap), or null. */
  private Decision.@Nullable Reject capacityRefusal(ClassSlot k, long work, long nowNanos) {
    CapacityRules.Shortfall s = rules.checkCapacity(k, work);
    if (s == null) {
      return null;
    }
    long wait =
        s.drainRequests() > 0
            ? service.drainNanos(0, s.drainRequests())
            : retry.workNanos(s.drainWork(), nowNanos);
    return new Decision.Reject(
        s.reason(), k.policy().shedStatus(), retry.seconds(wait), s.message(), wait);
  }

  /**
   * A waiting request's turn came (the scheduler proposes, this disposes). With the service time
   * measured now it may no longer finish before its deadline (the estimate may have grown while it
   * waited, or was still the pool's mean when it was queued): then it leaves the queue refused
   * instead of started. The tenant's cap was checked at arrival against in-flight + queued.
   */
  QueueCoordinator.@Nullable Start startQueued(ClassSlot k, AdmissionRequest request, long now) {
    Decision.Reject tooLate = cannotFinishInTime(k, request, now);
    if (tooLate != null) {
      return new QueueCoordinator.Start(null, tooLate);
    }
    if (pausedFor(now) > 0 || rules.checkCapacity(k, request.workUnits()) != null) {
      return null;
    }
    return new QueueCoordinator.Start(capacity.take(pool, k, request, now), null);
  }
}
