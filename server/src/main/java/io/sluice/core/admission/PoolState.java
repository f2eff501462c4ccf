package io.sluice.core.admission;

import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.queue.ClassScheduler;
import io.sluice.core.queue.LogQuantile;
import io.sluice.core.queue.Offer;
import io.sluice.core.queue.QueueBounds;
import io.sluice.core.queue.QueuedItem;
import io.sluice.core.queue.RetryAfter;
import io.sluice.core.queue.ServiceModel;
import io.sluice.core.queue.TenantFairQueue;
import io.sluice.core.queue.WaitPredictor;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.DoubleSupplier;

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
 * <p>Queue-hold (PRODUCT.md rules 2–4): a request that cannot start, or that would overtake someone
 * of equal or higher priority already waiting, may wait in its class's {@link TenantFairQueue} when
 * the adapter can hold it ({@code maxHoldNanos > 0}) and the class allows a queue wait. Arrival
 * feasibility uses the {@link WaitPredictor}; releases, cancellations and expiry timers run the
 * {@link ClassScheduler}, which starts waiting items through this pool's own admission check (the
 * scheduler proposes, {@link #check} disposes). Waiters are called outside the lock.
 *
 * <p>Concurrency: all mutable fields are guarded by {@link #lock}; critical sections are a few
 * arithmetic operations and one map update (or one queue operation). A request larger than its
 * class can ever hold is accounted as that reach ({@link #accountedWork}) so it can run alone
 * rather than never.
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
  private final DoubleSupplier uniform;
  private WaitPredictor predictor; // @GuardedBy("lock")
  private RetryAfter retryAfter; // @GuardedBy("lock")
  private ClassScheduler<Entry> scheduler; // @GuardedBy("lock"); indexes = queued slots
  private List<ClassSlot> queueSlots = List.of(); // @GuardedBy("lock"); scheduler index -> slot
  private final Map<String, int[]> tenantQueued = new HashMap<>(); // @GuardedBy("lock")
  private long nextTicket = 1; // @GuardedBy("lock")
  private final Ledger ledger = new Ledger();

  private final ServiceModel serviceModel =
      new ServiceModel(SERVICE_HALF_LIFE_SAMPLES, SERVICE_MIN_SAMPLES); // @GuardedBy("lock")

  /** Completions seen before the model was ready, replayed into the tails once it is. */
  private record Unmodelled(ClassSlot slot, long inputTokens, long outputTokens, long held) {}

  private final List<Unmodelled> unmodelled = new ArrayList<>(); // @GuardedBy("lock")

  /** The pool-wide tail of actual ÷ predicted service, for classes without their own yet. */
  private final LogQuantile poolOverrun =
      new LogQuantile(SERVICE_QUANTILE, SERVICE_QUANTILE_STEP, SERVICE_QUANTILE_WARMUP);

  /**
   * Deadline checks use this quantile of a class's service time: a request started with that much
   * time left misses its deadline only if its answer is among the longest 10 % of its class (answer
   * lengths are unknown at admission).
   */
  static final double SERVICE_QUANTILE = 0.9;

  static final double SERVICE_QUANTILE_STEP = 0.1;

  /** Completions of a class before its own quantile is used. */
  static final int SERVICE_QUANTILE_WARMUP = 20;

  static final int SERVICE_HALF_LIFE_SAMPLES = 200;

  static final int SERVICE_MIN_SAMPLES = 20;

  /** What a queued item carries: its waiter and request (no body, no thread). */
  record Entry(Waiter waiter, AdmissionRequest request) {}

  /** Callbacks to run once the lock is released. */
  private record Callback(
      Waiter waiter, Permit permit, Decision.Reject rejection, long waitedNanos) {
    void run() {
      if (permit != null) {
        waiter.admitted(permit, waitedNanos);
      } else {
        waiter.refused(rejection, waitedNanos);
      }
    }
  }

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
    TenantFairQueue<Entry> queue;

    /** How much longer than the pool's service model this class's requests take (quantile). */
    final LogQuantile overrun =
        new LogQuantile(SERVICE_QUANTILE, SERVICE_QUANTILE_STEP, SERVICE_QUANTILE_WARMUP);

    ClassSlot(ClassPolicy policy) {
      this.policy = policy;
    }
  }

  PoolState(
      PoolPolicy policy,
      List<ClassPolicy> classes,
      long rateTauNanos,
      ReleaseListener listener,
      DoubleSupplier uniform) {
    this.completionRate = new CompletionRate(rateTauNanos);
    this.listener = listener;
    this.uniform = uniform;
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
      for (ClassSlot s : next) {
        QueueBounds bounds = bounds(s.policy, newPolicy);
        if (s.queue == null || (s.queue.isEmpty() && !s.queue.bounds().equals(bounds))) {
          s.queue = new TenantFairQueue<>(bounds); // a non-empty queue keeps its bounds until empty
        }
      }
      this.policy = newPolicy;
      this.slots = List.copyOf(next);
      List<ClassScheduler.QueueClass<Entry>> qcs = new ArrayList<>();
      for (ClassSlot s : next) {
        qcs.add(
            new ClassScheduler.QueueClass<>(
                s.policy.name(),
                s.retired ? Integer.MAX_VALUE / 2 : s.policy.rank(),
                s.retired ? 0 : s.policy.reservedShare(),
                s.retired || s.policy.borrow(),
                s.queue));
      }
      this.queueSlots = List.copyOf(next);
      this.scheduler = new ClassScheduler<>(qcs);
      WaitPredictor previous = predictor;
      WaitPredictor.Config pc =
          new WaitPredictor.Config(
              newPolicy.capacityWorkUnits(),
              10_000_000_000L,
              newPolicy.defaultServiceTime().toNanos(),
              20);
      if (previous == null || !previous.config().equals(pc)) {
        this.predictor = new WaitPredictor(pc);
      }
      this.retryAfter =
          new RetryAfter(
              Math.max(1, ceilSeconds(newPolicy.retryAfterMin().toNanos())),
              Math.max(
                  Math.max(1, ceilSeconds(newPolicy.retryAfterMin().toNanos())),
                  newPolicy.retryAfterMax().toSeconds()),
              newPolicy.retryAfterJitter(),
              uniform);
    } finally {
      lock.unlock();
    }
  }

  private static QueueBounds bounds(ClassPolicy c, PoolPolicy p) {
    long maxWork =
        Math.max(1, (long) Math.floor(c.queueWorkShare() * (double) p.capacityWorkUnits()));
    long maxWait = Math.max(1, c.maxQueueWait().toNanos());
    return new QueueBounds(maxWork, c.maxQueueItems(), maxWait, c.tenantQueueShare());
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

  /** Admit now or refuse (no queueing). */
  Decision tryAdmit(AdmissionRequest request, long nowNanos) {
    return decide(request, 0, null, nowNanos);
  }

  /**
   * Admit now, queue (when {@code maxHoldNanos > 0} and a waiter is given), or refuse.
   *
   * @param maxHoldNanos the longest the adapter can hold the request (Envoy's max_message_timeout);
   *     0 = never queue
   */
  Decision decide(AdmissionRequest request, long maxHoldNanos, Waiter waiter, long nowNanos) {
    List<Callback> callbacks = new ArrayList<>();
    Decision d;
    lock.lock();
    try {
      d = decideLocked(request, maxHoldNanos, waiter, nowNanos, callbacks);
    } finally {
      lock.unlock();
    }
    callbacks.forEach(Callback::run);
    return d;
  }

  private Decision decideLocked(
      AdmissionRequest request,
      long maxHoldNanos,
      Waiter waiter,
      long nowNanos,
      List<Callback> callbacks) {
    ClassSlot k = slot(request.requestClass().name());
    if (k == null) {
      return new Decision.Reject(
          Reason.UNKNOWN_ROUTE,
          404,
          0,
          "class " + request.requestClass().name() + " is not configured");
    }
    drainLocked(nowNanos, callbacks); // expire what is due so it does not count as waiting
    Tenant tenant = request.tenant();
    int maxInFlight = tenant.tier().maxInFlight();
    int load =
        maxInFlight > 0 ? count(tenantInFlight, tenant.id()) + count(tenantQueued, tenant.id()) : 0;
    if (maxInFlight > 0 && load >= maxInFlight) {
      return new Decision.Reject(
          Reason.TENANT_CONCURRENCY,
          429,
          retryAfterForHold(),
          "tenant has " + load + " requests in flight or waiting (cap " + maxInFlight + ")");
    }
    Decision.Reject late = cannotFinishInTime(k, request, nowNanos);
    if (late != null) {
      return late;
    }
    boolean waiting = scheduler.hasWaitingAtOrAbove(k.policy.rank());
    Decision.Reject refused = check(k, tenant, request.workUnits(), nowNanos);
    if (refused == null && !waiting) {
      return new Decision.Admit(take(k, request, nowNanos));
    }
    if (refused == null) {
      refused =
          new Decision.Reject(
              Reason.POOL_SATURATED,
              k.policy.shedStatus(),
              retryAfter.seconds(
                  predictor.predictedDrainNanos(queuedWorkAtOrAbove(k.policy.rank()))),
              "requests of equal or higher priority are waiting in pool " + policy.name());
    }
    if (refused.reason() == Reason.TENANT_CONCURRENCY || waiter == null) {
      return refused;
    }
    long maxWait =
        Math.min(k.policy.maxQueueWait().toNanos(), maxHoldNanos - policy.holdMargin().toNanos());
    if (maxHoldNanos <= 0 || maxWait <= 0) {
      return refused; // queue-hold off for this request
    }
    return enqueue(k, request, waiter, maxWait, nowNanos, callbacks);
  }

  /**
   * Rule 3 with no wait: a request whose deadline service time ({@link #deadlineServiceNanos}) is
   * longer than the time left before its deadline would be answered after its client stopped
   * waiting, so it is refused even when it could start at once (its tokens would all be wasted).
   * Only a measured service time counts: before the pool's first completion the default service
   * time is a pessimistic guess, and a request that might finish is not refused on a guess.
   */
  private Decision.Reject cannotFinishInTime(ClassSlot k, AdmissionRequest request, long nowNanos) {
    if (!predictor.hasServiceSamples()) {
      return null;
    }
    long service = deadlineServiceNanos(k, request, accountedWork(k, request.workUnits()));
    if (WaitPredictor.feasible(nowNanos, request.deadlineNanos(), Long.MAX_VALUE, 0, service)) {
      return null;
    }
    long left = Math.max(0, request.deadlineNanos() - nowNanos);
    return new Decision.Reject(
        Reason.DEADLINE_UNREACHABLE,
        503,
        retryAfter.seconds(0),
        "expected service time "
            + service / 1_000_000L
            + " ms is longer than the "
            + left / 1_000_000L
            + " ms left before the deadline");
  }

  /**
   * Service time of a request of class {@code k} for deadline checks. Once the pool's {@link
   * ServiceModel} is fitted: the model's prediction from the request's input and reserved output
   * tokens, times the {@link #SERVICE_QUANTILE} of (actual ÷ predicted) of the class once it has
   * completed {@link #SERVICE_QUANTILE_WARMUP} requests, of the whole pool until then. Before that,
   * or when the request's token split is unknown: the pool's mean time per work unit × {@code work}
   * (its default service time before any completion).
   */
  long deadlineServiceNanos(ClassSlot k, AdmissionRequest request, long work) {
    LogQuantile tail = k.overrun.ready() ? k.overrun : poolOverrun;
    if (request.hasTokenSplit() && serviceModel.ready() && tail.ready()) {
      double predicted = serviceModel.predictNanos(request.inputTokens(), request.outputTokens());
      if (predicted > 0) {
        return (long) Math.min(Long.MAX_VALUE / 4.0, Math.ceil(predicted * tail.value()));
      }
    }
    return predictor.expectedServiceNanos(work);
  }

  private Decision enqueue(
      ClassSlot k,
      AdmissionRequest request,
      Waiter waiter,
      long maxWait,
      long nowNanos,
      List<Callback> callbacks) {
    Tenant tenant = request.tenant();
    long work = accountedWork(k, request.workUnits());
    long ahead =
        queuedWorkAtOrAbove(k.policy.rank())
            - k.queue.queuedWork()
            + k.queue.queuedWorkAhead(tenant.id(), tenant.tier().weight());
    long freeNow = Math.max(0, policy.capacityWorkUnits() - totalWork);
    long predicted = predictor.predictWaitNanos(ahead, work, freeNow);
    long service = deadlineServiceNanos(k, request, work);
    if (!WaitPredictor.feasible(nowNanos, request.deadlineNanos(), maxWait, predicted, service)) {
      return new Decision.Reject(
          Reason.DEADLINE_UNREACHABLE,
          503,
          retryAfter.seconds(predictor.predictedDrainNanos(ahead + work)),
          "predicted wait cannot meet the deadline or the class's maximum queue wait");
    }
    long expires = QueuedItem.expiryNanos(nowNanos, maxWait, request.deadlineNanos(), service);
    long ticket = nextTicket++;
    QueuedItem<Entry> item =
        new QueuedItem<>(
            ticket,
            tenant.id(),
            tenant.tier().weight(),
            work,
            nowNanos,
            expires,
            request.deadlineNanos(),
            new Entry(waiter, request));
    Offer offer = k.queue.offer(item, nowNanos);
    if (offer instanceof Offer.Rejected r) {
      return switch (r.reason()) {
        case TENANT_SHARE ->
            new Decision.Reject(
                Reason.TENANT_CONCURRENCY,
                429,
                retryAfter.seconds(
                    predictor.predictedDrainNanos(k.queue.tenantQueuedWork(tenant.id()))),
                "tenant owns its share of the waiting room of class " + k.policy.name());
        case QUEUE_FULL ->
            new Decision.Reject(
                Reason.QUEUE_FULL,
                503,
                retryAfter.seconds(predictor.predictedDrainNanos(k.queue.queuedWork())),
                "queue of class " + k.policy.name() + " in pool " + policy.name() + " is full");
        case EXPIRED ->
            new Decision.Reject(
                Reason.DEADLINE_UNREACHABLE,
                503,
                retryAfter.seconds(predictor.predictedDrainNanos(ahead + work)),
                "the deadline leaves no time to wait");
      };
    }
    Offer.Accepted accepted = (Offer.Accepted) offer;
    increment(tenantQueued, tenant.id());
    long hold = Math.max(1_000_000L, (expires - nowNanos) + policy.holdMargin().toNanos());
    Decision.Queued queued =
        new Decision.Queued(policy.name(), ticket, hold, expires, accepted.position(), predicted);
    // Queuing may itself allow a start (e.g. the item is first in line and fits): its waiter
    // is then called after this decision is returned (callbacks run after the lock).
    drainLocked(nowNanos, callbacks);
    return queued;
  }

  /** Removes a queued request whose stream went away; true if it was still waiting. */
  boolean cancel(long ticket, long nowNanos) {
    List<Callback> callbacks = new ArrayList<>();
    boolean removed = false;
    lock.lock();
    try {
      for (ClassSlot s : queueSlots) {
        var item = s.queue.remove(ticket);
        if (item.isPresent()) {
          decrement(tenantQueued, item.get().tenant());
          removed = true;
          break;
        }
      }
      if (removed) {
        drainLocked(nowNanos, callbacks);
      }
    } finally {
      lock.unlock();
    }
    callbacks.forEach(Callback::run);
    return removed;
  }

  /** Expires due items and starts whatever fits (the adapter's timer calls this). */
  void expireDue(long nowNanos) {
    List<Callback> callbacks = new ArrayList<>();
    lock.lock();
    try {
      drainLocked(nowNanos, callbacks);
    } finally {
      lock.unlock();
    }
    callbacks.forEach(Callback::run);
  }

  /** Answers every queued item with 503 (server shutdown); returns how many. */
  int refuseAllQueued(Reason reason, long nowNanos) {
    List<Callback> callbacks = new ArrayList<>();
    lock.lock();
    try {
      for (ClassSlot s : queueSlots) {
        for (QueuedItem<Entry> item : s.queue.clear()) {
          decrement(tenantQueued, item.tenant());
          callbacks.add(
              new Callback(
                  item.payload().waiter(),
                  null,
                  new Decision.Reject(
                      reason,
                      503,
                      retryAfter.seconds(0),
                      "sluice is shutting down; retry on another replica"),
                  nowNanos - item.enqueuedAtNanos()));
        }
      }
    } finally {
      lock.unlock();
    }
    callbacks.forEach(Callback::run);
    return callbacks.size();
  }

  /** Earliest expiry among queued items, for the adapter's timer. */
  public OptionalLong nextExpiryNanos() {
    lock.lock();
    try {
      return scheduler.nextExpiryNanos();
    } finally {
      lock.unlock();
    }
  }

  private void drainLocked(long nowNanos, List<Callback> callbacks) {
    if (!anyQueued()) {
      return; // the common case when the pool is not saturated: nothing to expire or start
    }
    ledger.now = nowNanos;
    ledger.started.clear();
    ledger.late.clear();
    ClassScheduler.Drain<Entry> drain = scheduler.drain(nowNanos, ledger);
    for (ClassScheduler.Expired<Entry> e : drain.expired()) {
      QueuedItem<Entry> item = e.item();
      decrement(tenantQueued, item.tenant());
      callbacks.add(
          new Callback(
              item.payload().waiter(),
              null,
              new Decision.Reject(
                  Reason.QUEUE_TIMEOUT,
                  503,
                  retryAfter.seconds(
                      predictor.predictedDrainNanos(queuedWorkAtOrAbove(Integer.MAX_VALUE))),
                  "waited the longest it could and could not start in time"),
              nowNanos - item.enqueuedAtNanos()));
    }
    for (int i = 0; i < drain.admitted().size(); i++) {
      QueuedItem<Entry> item = drain.admitted().get(i).item();
      decrement(tenantQueued, item.tenant());
      callbacks.add(
          new Callback(
              item.payload().waiter(),
              ledger.started.get(i),
              ledger.late.get(i),
              nowNanos - item.enqueuedAtNanos()));
    }
  }

  private boolean anyQueued() {
    for (ClassSlot s : queueSlots) {
      if (!s.queue.isEmpty()) {
        return true;
      }
    }
    return false;
  }

  /** Work waiting in classes of rank {@code <= rank}. */
  private long queuedWorkAtOrAbove(int rank) {
    long sum = 0;
    for (ClassSlot s : queueSlots) {
      if (!s.retired && s.policy.rank() <= rank) {
        sum += s.queue.queuedWork();
      }
    }
    return sum;
  }

  /** The scheduler's view of this pool; {@link #admit} runs the pool's own capacity check. */
  private final class Ledger implements ClassScheduler.PoolLedger<Entry> {
    long now;

    /**
     * Per item the scheduler took off a queue: its permit, or null when refused in {@link #late}.
     */
    final List<Permit> started = new ArrayList<>();

    /** Per item: null, or why it was refused when its turn came (it could no longer finish). */
    final List<Decision.Reject> late = new ArrayList<>();

    @Override
    public long capacityWorkUnits() {
      return policy.capacityWorkUnits();
    }

    @Override
    public long inFlightWorkUnits() {
      return totalWork;
    }

    @Override
    public long inFlightWorkUnits(int classIndex) {
      return queueSlots.get(classIndex).work;
    }

    @Override
    public boolean admit(int classIndex, QueuedItem<Entry> item, ClassScheduler.Lane lane) {
      ClassSlot k = queueSlots.get(classIndex);
      AdmissionRequest request = item.payload().request();
      // Its turn came, but with the service time measured now it could not finish before its
      // deadline (the estimate may have grown while it waited, or was still the pool's mean when
      // it was queued): take it off the queue and refuse it instead of starting it.
      Decision.Reject tooLate = cannotFinishInTime(k, request, now);
      if (tooLate != null) {
        started.add(null);
        late.add(tooLate);
        return true;
      }
      // the tenant's cap was checked at arrival against in-flight + queued
      if (checkCapacity(k, item.workUnits(), now) != null) {
        return false;
      }
      started.add(take(k, request, now));
      late.add(null);
      return true;
    }
  }

  private static int count(Map<String, int[]> m, String key) {
    int[] c = m.get(key);
    return c == null ? 0 : c[0];
  }

  private static void increment(Map<String, int[]> m, String key) {
    int[] c = m.get(key);
    if (c == null) {
      m.put(key, new int[] {1});
    } else {
      c[0]++;
    }
  }

  private static void decrement(Map<String, int[]> m, String key) {
    int[] c = m.get(key);
    if (c != null && --c[0] <= 0) {
      m.remove(key);
    }
  }

  /** Why {@code w} work of class {@code k} for {@code tenant} cannot start now, or null. */
  private Decision.Reject check(ClassSlot k, Tenant tenant, long work, long nowNanos) {
    int maxInFlight = tenant.tier().maxInFlight();
    int[] tenantCount = maxInFlight > 0 ? tenantInFlight.get(tenant.id()) : null;
    if (tenantCount != null && tenantCount[0] >= maxInFlight) {
      return new Decision.Reject(
          Reason.TENANT_CONCURRENCY,
          429,
          retryAfterForHold(),
          "tenant has " + tenantCount[0] + " requests in flight (cap " + maxInFlight + ")");
    }
    return checkCapacity(k, work, nowNanos);
  }

  /** Pool request cap, class share and pool capacity (not the tenant cap). */
  private Decision.Reject checkCapacity(ClassSlot k, long work, long nowNanos) {
    PoolPolicy p = policy;
    long w = accountedWork(k, work);
    ClassPolicy cls = k.policy;
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

  private Permit take(ClassSlot k, AdmissionRequest request, long nowNanos) {
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
    return new Permit(this, k, tenant, w, nowNanos, request.inputTokens(), request.outputTokens());
  }

  /**
   * The work a request of class {@code k} is accounted as: its own, but at most the most class
   * {@code k} can ever hold — the pool less the other classes' guaranteed shares, and its own
   * reserved share when it may not borrow. A larger request then runs alone (the class's whole
   * reach) rather than never: accounted as the whole capacity it could not start while another
   * class guarantees a share, and would wait out its queue time for nothing.
   */
  private long accountedWork(ClassSlot k, long work) {
    long reach = policy.capacityWorkUnits();
    for (ClassSlot j : slots) {
      if (j != k) {
        reach -= j.guaranteed;
      }
    }
    if (!k.policy.borrow()) {
      reach = Math.min(reach, k.reserved);
    }
    return Math.min(work, Math.max(1, reach));
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
    List<Callback> callbacks = new ArrayList<>();
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
      if (outcome == Outcome.CANCELLED) {
        // the client left mid-answer: its service would have taken at least this long
        long held = nowNanos - permit.admittedAtNanos();
        if (permit.inputTokens() >= 0 && permit.outputTokens() >= 0 && serviceModel.ready()) {
          double predicted = serviceModel.predictNanos(permit.inputTokens(), permit.outputTokens());
          if (predicted > 0) {
            k.overrun.onAtLeast(held / predicted);
            poolOverrun.onAtLeast(held / predicted);
          }
        }
      }
      if (outcome == Outcome.COMPLETED) {
        long held = nowNanos - permit.admittedAtNanos();
        completionRate.onCompletion(permit.workUnits(), held, nowNanos);
        predictor.onCompletion(permit.workUnits(), nowNanos);
        predictor.onServiceTime(permit.workUnits(), Math.max(0, held));
        if (permit.inputTokens() >= 0 && permit.outputTokens() >= 0 && held > 0) {
          if (serviceModel.ready()) {
            double predicted =
                serviceModel.predictNanos(permit.inputTokens(), permit.outputTokens());
            if (predicted > 0) {
              k.overrun.onSample(held / predicted); // out of sample: before this one is fitted
              poolOverrun.onSample(held / predicted);
            }
          }
          boolean wasReady = serviceModel.ready();
          serviceModel.onSample(permit.inputTokens(), permit.outputTokens(), held);
          if (!wasReady) {
            learnTailOnceModelled(k, permit, held);
          }
        }
      }
      drainLocked(nowNanos, callbacks);
    } finally {
      lock.unlock();
    }
    listener.onRelease(this, permit, outcome, nowNanos);
    callbacks.forEach(Callback::run);
  }

  /**
   * Keeps a completion seen while the service model was not ready; when the model becomes ready,
   * replays them all into the class and pool tails (against the first fitted model), so the tails
   * are usable as soon as the model is instead of after as many completions again.
   */
  private void learnTailOnceModelled(ClassSlot k, Permit permit, long held) {
    if (unmodelled.size() >= 4 * SERVICE_MIN_SAMPLES) {
      unmodelled.remove(0); // bounded while the model cannot become ready
    }
    unmodelled.add(new Unmodelled(k, permit.inputTokens(), permit.outputTokens(), held));
    if (!serviceModel.ready()) {
      return;
    }
    for (Unmodelled u : unmodelled) {
      double predicted = serviceModel.predictNanos(u.inputTokens(), u.outputTokens());
      if (predicted > 0) {
        u.slot().overrun.onSample(u.held() / predicted);
        poolOverrun.onSample(u.held() / predicted);
      }
    }
    unmodelled.clear();
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
    return retryAfter.seconds((long) Math.min(Long.MAX_VALUE / 2, seconds * NANOS_PER_SECOND));
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
      List<QueueSnapshot> out = new ArrayList<>();
      for (ClassSlot s : queueSlots) {
        if (!s.retired) {
          out.add(
              new QueueSnapshot(
                  s.policy.name(),
                  s.queue.depth(),
                  s.queue.queuedWork(),
                  s.queue.oldestAgeNanos(nowNanos),
                  topTenants > 0 ? s.queue.topTenants(topTenants) : List.of()));
        }
      }
      return out;
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

  /** In-flight work of one class (0 if unknown). */
  public long classWork(String className) {
    return readSlot(className, s -> s.work);
  }

  /** One number of an active class slot, read under the lock; 0 if the class is unknown. */
  private long readSlot(String className, java.util.function.ToLongFunction<ClassSlot> field) {
    lock.lock();
    try {
      ClassSlot s = slot(className);
      return s == null ? 0 : field.applyAsLong(s);
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
