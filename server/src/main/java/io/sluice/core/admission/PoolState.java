package io.sluice.core.admission;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.adapt.AnswerSource;
import io.sluice.core.adapt.LimitStore;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.queue.TenantFairQueue;
import io.sluice.core.share.ClassLimits;
import io.sluice.core.share.ClassShares;
import io.sluice.core.share.Demand;
import io.sluice.core.share.Load;
import io.sluice.core.share.SharedPool;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.DoubleSupplier;
import org.jspecify.annotations.Nullable;

/**
 * One pool's admission: the lock around its parts and the order in which they run. Each part has
 * one job (docs/decisions/0006-pool-state-split.md): {@link CapacityLedger} (what is in flight, and
 * this replica's limits), {@link CapacityRules} (whether a request fits), {@link QueueCoordinator}
 * (the class queues and the scheduler across them), {@link AdmissionRules} (the decision rules, in
 * order), {@link ServiceTimes} (the service-time model), {@link RetryAdvice} (every Retry-After),
 * {@link PoolDemand} (the demand reported for a replica share), {@link PoolReadings} (copies for
 * gauges and {@code /debug/queues}), and the {@link LimitSource}s — the configured limit, the
 * adaptive limit, the replica share — composed in registration order into the {@link PoolLimits}
 * the ledger enforces ({@link LimitSources}).
 *
 * <p>Concurrency: every part is guarded by {@link #lock} (their fields say so); critical sections
 * are a few arithmetic operations and one map update (or one queue operation). Waiters are called
 * outside the lock, from the answers it collected ({@link PoolLock}).
 */
public final class PoolState implements SharedPool {
  private final PoolLock lock = new PoolLock();
  private final ReleaseListener listener;
  private final CapacityLedger capacity; // @GuardedBy("lock"), but for its copy-on-write reads
  private final ServiceTimes service; // @GuardedBy("lock")
  private final RetryAdvice retry; // @GuardedBy("lock")
  private final QueueCoordinator queues; // @GuardedBy("lock")
  private final AdmissionRules decisions; // @GuardedBy("lock")
  private final PoolDemand demand; // @GuardedBy("lock")
  private final PoolReadings readings; // @GuardedBy("lock"), but for classes()
  private final ConfiguredLimit configured;
  private final AdaptiveLimitSource adaptive;
  private final ReplicaShareLimit share;
  private final LimitSources limits; // @GuardedBy("lock")
  // permits held for a predicted tail now (their response end is not seen): Permit.markEndUnseen
  private final AtomicInteger tailsHeld = new AtomicInteger();

  /** Told about every release, outside the lock; the queue scheduler hooks in here. */
  @FunctionalInterface
  public interface ReleaseListener {
    void onRelease(PoolState pool, Permit permit, Outcome outcome, long nowNanos);

    ReleaseListener NONE = (p, permit, o, n) -> {};
  }

  /**
   * @param heldForShare the pool counts against a replica share that is not granted yet: it starts
   *     at a share of nothing ({@link #holdForShare})
   */
  PoolState(
      PoolPolicy policy,
      List<ClassPolicy> classes,
      long rateTauNanos,
      ReleaseListener listener,
      DoubleSupplier uniform,
      boolean heldForShare) {
    this.listener = listener;
    this.capacity = new CapacityLedger(policy);
    this.configured = new ConfiguredLimit(policy);
    this.adaptive = new AdaptiveLimitSource(lock.mutex(), capacity, configured);
    this.share = new ReplicaShareLimit();
    // the limit sources, in the order they compose: a new source is one more entry here
    this.limits = new LimitSources(configured, List.of(configured, adaptive, share));
    PoolPolicy effective = limits.compose().policy();
    List<ClassSlot> slots = capacity.reconfigure(effective, classes);
    CapacityRules rules = new CapacityRules(capacity);
    this.service = new ServiceTimes(policy);
    this.retry = new RetryAdvice(rateTauNanos, uniform, policy);
    this.queues =
        new QueueCoordinator(capacity, service, retry, this::startQueued, slots, effective);
    this.decisions =
        new AdmissionRules(this, capacity, rules, queues, service, retry, adaptive, share, limits);
    this.demand = new PoolDemand(capacity, queues);
    this.readings = new PoolReadings(capacity, rules, retry);
    limits.notifyOnChange(this::limitsChanged);
    if (heldForShare && share.hold()) {
      applyLimitsLocked(); // not published yet: no lock needed, nothing waits
    }
  }

  private QueueCoordinator.@Nullable Start startQueued(
      ClassSlot k, AdmissionRequest request, long nowNanos) {
    return decisions.startQueued(k, request, nowNanos);
  }

  /**
   * Applies a new policy; in-flight work and waiting requests are kept. An adaptive pool keeps its
   * learned limit (clamped into the new bounds) when it stays adaptive.
   */
  void reconfigure(PoolPolicy newPolicy, List<ClassPolicy> classes) {
    lock.lock();
    try {
      limits.reload(newPolicy, capacity, queues, classes);
      service.reconfigure(newPolicy);
      retry.reconfigure(newPolicy);
    } finally {
      lock.unlock();
    }
  }

  /** Under the lock: the sources' limits into the ledger and the waiting rooms. */
  void applyLimitsLocked() {
    limits.apply(capacity, queues, classes());
  }

  /** A source's numbers changed ({@link LimitSource.Listener}): apply them, start what fits. */
  private void limitsChanged(long nowNanos) {
    drain(true, nowNanos);
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
    return configured.policy();
  }

  /** The pool's adaptive limit, or null (fixed numbers, or not ticked yet). */
  public @Nullable AdaptiveLimit adaptive() {
    return adaptive.limit();
  }

  /** The adaptive limit's periodic step ({@link AdaptiveLimitSource#tick}); null: fixed pool. */
  public @Nullable AdaptiveLimit adaptTick(long nowNanos) {
    return adaptive.tick(nowNanos, this::applyLimitsLocked);
  }

  /** An upstream answer, its in flight unknown ({@link AdaptiveLimitSource#onUpstream}). */
  public void onUpstream(int status, long retryAfterNanos, long admittedAtNanos, long nowNanos) {
    adaptive.onUpstream(status, retryAfterNanos, admittedAtNanos, nowNanos);
  }

  /** An answer to the request holding {@code permit} ({@link AdaptiveLimitSource#onAnswer}). */
  public void onAnswer(
      Permit permit, int status, long retryAfterNanos, AnswerSource source, long nowNanos) {
    adaptive.onAnswer(permit, status, retryAfterNanos, source, nowNanos);
  }

  /** An answer revised after its headers ({@link AdaptiveLimitSource#onRevisedAnswer}). */
  public void onRevisedAnswer(Permit permit, int status, long retryAfterNanos, long nowNanos) {
    adaptive.onRevisedAnswer(permit, status, retryAfterNanos, nowNanos);
  }

  /** Answers of requests of this (adaptive) pool produced by {@code source}. */
  public long answers(AnswerSource source) {
    return adaptive.answers(source);
  }

  /** A latency sample of a request of this pool (for an adaptive limit). */
  public void onLatency(AdaptiveLimit.Signal signal, double nanos, long admittedAtNanos) {
    adaptive.onLatency(signal, nanos, admittedAtNanos);
  }

  /** The pool's shared limit as the store answered it (several replicas). */
  public void adoptShared(LimitStore.Shared shared, long nowNanos) {
    adaptive.adopt(shared, nowNanos);
  }

  /** Active (non-retired) classes in rank order. */
  public List<ClassPolicy> classes() {
    return readings.classes();
  }

  /** A tenant concurrency refusal's Retry-After (s): the mean permit hold, as the local cap's. */
  public long tenantRetryAfterSeconds() {
    return lock.readLong(retry::forHold);
  }

  /**
   * The fraction of the pool this replica may hold: its granted work share over the pool's work
   * limit in effect when it counts against a share ({@code replicas}), else 1. In {@code [0, 1]}.
   */
  public double replicaShare() {
    return lock.read(readings::replicaShare);
  }

  /** What {@code className} could take now as a fraction of the pool (or share); 0: unknown. */
  public double classHeadroom(String className) {
    return lock.read(() -> readings.classHeadroom(className));
  }

  /** Whether {@code work} units of {@code className} fit its capacity (rules, share) now. */
  public boolean canStart(String className, long work) {
    return lock.read(() -> readings.canStart(className, work));
  }

  /**
   * The pool's one decision: admit now, queue, or refuse, as {@code ask} allows (PRODUCT.md rules
   * 2–4, {@link AdmissionRules}). A {@link Decision.Queued} result means the ask's waiter will be
   * called exactly once.
   */
  Decision decide(AdmissionRequest request, Ask ask) {
    QueueCoordinator.Callback[] callbacks;
    Decision d;
    lock.lock();
    try {
      d = decisions.decideLocked(request, ask, lock.pending());
      demand.countUnmet(request, ask, d, decisions.unmet());
      callbacks = lock.take();
    } finally {
      lock.unlock();
    }
    WaiterAnswers.run(callbacks);
    return d;
  }

  /** Removes a queued request whose stream went away; true if it was still waiting. */
  boolean cancel(long ticket, long nowNanos) {
    return lock.answering(
        pending -> {
          decisions.pausedFor(nowNanos);
          return queues.cancel(ticket, nowNanos, pending);
        });
  }

  /** Expires due items and starts whatever fits (the adapter's timer calls this). */
  void expireDue(long nowNanos) {
    drain(false, nowNanos);
  }

  /** Answers every queued item with 503 (server shutdown); returns how many. */
  int refuseAllQueued(Reason reason, long nowNanos) {
    return lock.answering(pending -> queues.refuseAll(reason, nowNanos, pending));
  }

  /** Earliest expiry among queued items, for the adapter's timer. */
  public OptionalLong nextExpiryNanos() {
    return lock.read(queues::nextExpiryNanos);
  }

  /** Grows a running permit's work in flight ({@link Permit#grow}); returns the units added. */
  long grow(Permit permit, long more) {
    return lock.readLong(() -> permit.isReleased() ? 0 : capacity.grow(permit, more));
  }

  /**
   * Work units in flight beyond the admitted estimates now: answers that streamed past their output
   * reserve and grew their charge.
   */
  public long overrunWork() {
    return lock.readLong(capacity::overrunWork);
  }

  /**
   * How long after its admission {@code permit}'s request is predicted to end when its response's
   * end will not be seen and its headers came {@code headersNanos} after its admission (negative if
   * unknown); see {@link ServiceTimes#tailNanos(ClassSlot, long, long, long, long)}.
   */
  public long tailNanos(Permit permit, long headersNanos) {
    return lock.readLong(
        () ->
            service.tailNanos(
                permit.slot(),
                permit.workUnits(),
                permit.inputTokens(),
                permit.outputTokens(),
                headersNanos));
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
    return lock.read(service::tailOnGuess);
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
      decisions.pausedFor(nowNanos);
      adaptive.releasedLocked(permit);
      capacity.release(permit);
      if (outcome == Outcome.COMPLETED) { // the completed-work gauge and Retry-After's basis
        retry.onRelease(permit.workUnits(), nowNanos - permit.admittedAtNanos(), nowNanos);
      }
      service.onRelease(permit.slot(), permit, outcome, nowNanos);
      queues.drain(nowNanos, lock.pending());
      callbacks = lock.take();
    } finally {
      lock.unlock();
    }
    listener.onRelease(this, permit, outcome, nowNanos);
    WaiterAnswers.run(callbacks);
  }

  @Override
  public void applyShare(
      long work, int requests, @Nullable ClassShares classes, @Nullable Fence fence, long now) {
    share.grant(work, requests, classes, fence, now);
  }

  @Override
  public Load inFlight() {
    return lock.read(() -> new Load(capacity.totalWork(), capacity.totalRequests()));
  }

  /**
   * This pool counts against a replica share from now on: until the share coordinator grants one, a
   * share of nothing (not the whole pool). Kept when a share was already granted.
   */
  void holdForShare(long nowNanos) {
    if (share.hold()) {
      limitsChanged(nowNanos);
    }
  }

  @Override
  public List<ClassLimits> classLimits() {
    return lock.read(capacity::poolClassLimits);
  }

  @Override
  public Demand demand() {
    return lock.read(demand::read);
  }

  /**
   * Under the lock: the sources' limits applied first when {@code limits} says they changed, then
   * the queues drained (expire what is due, start what fits); the waiters answered outside it.
   */
  private void drain(boolean limits, long nowNanos) {
    lock.answering(
        pending -> {
          decisions.pausedFor(nowNanos);
          if (limits) {
            applyLimitsLocked();
          }
          queues.drain(nowNanos, pending);
          return Boolean.TRUE;
        });
  }

  /** A consistent copy of the pool's counters; arrays are indexed like {@link #classes()}. */
  public Snapshot snapshot(long nowNanos) {
    return lock.read(() -> readings.snapshot(nowNanos));
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
    return lock.read(() -> readings.queues(nowNanos, topTenants));
  }

  /** Queued requests of one class (0 if unknown). */
  public int queueDepth(String className) {
    return (int) lock.readLong(() -> readings.slot(className, s -> s.queue().depth()));
  }

  /** Queued work of one class (0 if unknown). */
  public long queuedWork(String className) {
    return lock.readLong(() -> readings.slot(className, s -> s.queue().queuedWork()));
  }

  /** Age of the oldest request waiting in one class's queue at {@code nowNanos} (0: none). */
  public long oldestQueuedAgeNanos(String className, long nowNanos) {
    return lock.readLong(() -> readings.slot(className, s -> s.queue().oldestAgeNanos(nowNanos)));
  }

  /**
   * This replica's completion rate of the pool (work units per second), corrected for a young
   * replica: the mean rate observed since its first completed request was admitted, rather than the
   * decaying sum that grows from zero over its first tens of seconds ({@link Snapshot}'s {@code
   * completedWorkPerSecond}); the same once the replica is older than a few time constants. 0
   * before any completion.
   */
  public double startedWorkPerSecond(long nowNanos) {
    return lock.read(() -> retry.startedWorkPerSecond(nowNanos));
  }

  /** In-flight work of one class (0 if unknown). */
  public long classWork(String className) {
    return lock.readLong(() -> readings.slot(className, ClassSlot::work));
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
