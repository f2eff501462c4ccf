package io.sluice.core.admission;

import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.queue.ClassScheduler;
import io.sluice.core.queue.Offer;
import io.sluice.core.queue.QueueBounds;
import io.sluice.core.queue.QueuedItem;
import io.sluice.core.queue.TenantFairQueue;
import io.sluice.core.queue.WaitPredictor;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;

/**
 * The waiting side of one pool (PRODUCT.md rules 2–4): each class's {@link TenantFairQueue}, the
 * {@link ClassScheduler} across them, per-tenant queued counts and tickets. It queues a request
 * when its predicted wait fits its deadline and the class's maximum wait, removes it on cancel,
 * expires it when its time is up, and — whenever capacity frees or an item is queued — lets the
 * scheduler propose starts, which the pool's {@link Starter} disposes (its own capacity check).
 *
 * <p>Waiters are never called here: every answer becomes a {@link Callback} the pool runs after it
 * releases its lock. Not thread-safe: guarded by the pool lock. Time is an argument.
 */
final class QueueCoordinator {
  /**
   * A waiting request: its waiter, the request, its class slot and the work it asks of the pool
   * (its demand, {@link CapacityLedger#demandWork}).
   */
  record Entry(Waiter waiter, AdmissionRequest request, ClassSlot slot, long demandWork) {}

  /** A waiter's answer, run once the pool lock is released: a permit or (permit null) a refusal. */
  record Callback(
      Waiter waiter,
      @Nullable Permit permit,
      Decision.@Nullable Reject rejection,
      long waitedNanos) {
    void run() {
      if (permit != null) {
        waiter.admitted(permit, waitedNanos);
      } else {
        // every Callback without a permit is built with a refusal (refuseAll, drain, Start)
        waiter.refused(Objects.requireNonNull(rejection, "rejection"), waitedNanos);
      }
    }
  }

  /**
   * The outcome of a proposed start: a permit, or (permit null) a refusal (it can no longer finish
   * in time).
   */
  record Start(@Nullable Permit permit, Decision.@Nullable Reject refusal) {}

  /** The pool's side of a start: its own checks, then the permit. */
  interface Starter {
    /** A permit or a refusal; null when it does not fit now (it stays queued). */
    @Nullable Start start(ClassSlot k, AdmissionRequest request, long nowNanos);
  }

  private final CapacityLedger capacity;
  private final ServiceTimes service;
  private final RetryAdvice retry;
  private final Map<String, int[]> tenantQueued = new HashMap<>();
  // items queued here (counted as tenantQueued counts them): 0 answers "nobody waits" without a
  // look at each class's queue, the admit and release of a pool that is not saturated
  private int queuedItems;
  private final QueueStarts ledger;
  private ClassScheduler<Entry> scheduler;
  private List<ClassSlot> queueSlots; // scheduler index -> slot
  private long nextTicket = 1;

  /** Queues for {@code slots} (as {@link CapacityLedger#reconfigure} returned them). */
  QueueCoordinator(
      CapacityLedger capacity,
      ServiceTimes service,
      RetryAdvice retry,
      Starter starter,
      List<ClassSlot> slots,
      PoolPolicy policy) {
    this.capacity = capacity;
    this.service = service;
    this.retry = retry;
    List<ClassScheduler.QueueClass<Entry>> qcs = queueClasses(slots, policy);
    this.queueSlots = List.copyOf(slots);
    this.ledger = new QueueStarts(capacity, starter, queueSlots);
    this.scheduler = new ClassScheduler<>(qcs);
  }

  /**
   * Gives every slot a queue with the new bounds (a non-empty queue keeps its bounds until it is
   * empty) and rebuilds the scheduler; retired slots rank last, with no reserve.
   */
  void reconfigure(List<ClassSlot> slots, PoolPolicy policy) {
    List<ClassScheduler.QueueClass<Entry>> qcs = queueClasses(slots, policy);
    this.queueSlots = List.copyOf(slots);
    ledger.slots = queueSlots;
    this.scheduler = new ClassScheduler<>(qcs);
  }

  /** The scheduler's view of {@code slots}; an empty queue whose bounds changed is replaced. */
  private List<ClassScheduler.QueueClass<Entry>> queueClasses(
      List<ClassSlot> slots, PoolPolicy policy) {
    List<ClassScheduler.QueueClass<Entry>> qcs = new ArrayList<>();
    for (ClassSlot s : slots) {
      QueueBounds bounds = WaitingRooms.bounds(s.policy(), policy, capacity.workLimit());
      if (s.queue().isEmpty() && !s.queue().bounds().equals(bounds)) {
        s.setQueue(new TenantFairQueue<>(bounds));
      }
      qcs.add(
          new ClassScheduler.QueueClass<>(
              s.name(),
              s.retired() ? Integer.MAX_VALUE / 2 : s.policy().rank(),
              s.retired() ? 0 : s.policy().reservedShare(),
              s.retired() || s.policy().borrow(),
              s.queue()));
    }
    return qcs;
  }

  /**
   * The waiting rooms follow this replica's share of the pool (called after the share changed): a
   * replica holding a third of the pool has a third of each class's waiting room, so across the
   * replicas the rooms, and each tenant's part of them, add up to the pool's.
   */
  void reboundToShare() {
    PoolPolicy policy = capacity.policy();
    for (ClassSlot s : queueSlots) {
      if (!s.retired()) {
        QueueBounds b = WaitingRooms.bounds(s.policy(), policy, capacity.workLimit());
        if (!s.queue().bounds().equals(b)) {
          s.queue().rebound(b);
        }
      }
    }
  }

  /** Rule 2: whether a class of rank {@code <= rank} has waiting items. */
  boolean hasWaitingAtOrAbove(int rank) {
    return queuedItems > 0 && scheduler.hasWaitingAtOrAbove(rank);
  }

  /**
   * Whether the scheduler would start a new request of class {@code k} costing {@code work} (as
   * accounted) at once if it were queued now: nothing of its class waits and it fits the class's
   * reserve ({@link ClassScheduler#startsInReserve}). Call after {@link #drain}.
   */
  boolean startsInReserve(ClassSlot k, long work) {
    int i = queueSlots.indexOf(k);
    return i >= 0 && scheduler.startsInReserve(i, work, ledger);
  }

  /** Requests waiting in this pool (tests: back to 0 whichever way they left). */
  int queuedItems() {
    return queuedItems;
  }

  /** Requests of {@code tenantId} waiting in this pool. */
  int tenantQueued(String tenantId) {
    if (queuedItems == 0) {
      return 0;
    }
    int[] c = tenantQueued.get(tenantId);
    return c == null ? 0 : c[0];
  }

  /** Work waiting in active classes of rank {@code <= rank}. */
  long queuedWorkAtOrAbove(int rank) {
    long sum = 0;
    for (ClassSlot s : queueSlots) {
      if (!s.retired() && s.policy().rank() <= rank) {
        sum += s.queue().queuedWork();
      }
    }
    return sum;
  }

  /** Requests waiting in active classes of rank {@code <= rank}. */
  long queuedItemsAtOrAbove(int rank) {
    long sum = 0;
    for (ClassSlot s : queueSlots) {
      if (!s.retired() && s.policy().rank() <= rank) {
        sum += s.queue().depth();
      }
    }
    return sum;
  }

  /**
   * Queues {@code request} of class {@code k} for at most {@code maxWait}, or refuses it when its
   * predicted wait cannot meet its deadline or the class's maximum wait, or its queue has no room.
   */
  Decision enqueue(
      ClassSlot k,
      AdmissionRequest request,
      Waiter waiter,
      long maxWait,
      long nowNanos,
      List<Callback> callbacks) {
    return enqueue(k, request, waiter, maxWait, nowNanos, callbacks, Reason.ADMITTED, null);
  }

  /**
   * Shadow mode: what {@link #enqueue} would answer now, nothing queued. Its refusals are the same;
   * where it would queue, {@link Decision.WouldQueue} with {@code why} (the capacity reason).
   */
  Decision wouldEnqueue(
      ClassSlot k,
      AdmissionRequest request,
      long maxWait,
      long nowNanos,
      Reason why,
      PoolLimits.@Nullable Resume resume) {
    return enqueue(k, request, null, maxWait, nowNanos, List.of(), why, resume);
  }

  private static final Waiter NOBODY =
      new Waiter() {
        @Override
        public void admitted(Permit permit, long waitedNanos) {}

        @Override
        public void refused(Decision.Reject rejection, long waitedNanos) {}
      };

  /** As the waiter-taking enqueue (shadow: none); {@code resume}: what the limits give back. */
  Decision enqueue(
      ClassSlot k,
      AdmissionRequest request,
      @Nullable Waiter waiter,
      long maxWait,
      long nowNanos,
      List<Callback> callbacks,
      Reason why,
      PoolLimits.@Nullable Resume resume) {
    PoolPolicy policy = capacity.policy();
    WaitPredictor predictor = service.predictor();
    Tenant tenant = request.tenant();
    long work = capacity.accountedWork(k, request.workUnits());
    long ahead =
        queuedWorkAtOrAbove(k.policy().rank())
            - k.queue().queuedWork()
            + k.queue().queuedWorkAhead(tenant.id(), tenant.tier().weight());
    long requestsAhead =
        queuedItemsAtOrAbove(k.policy().rank())
            - k.queue().depth()
            + k.queue().queuedItemsAhead(tenant.id(), tenant.tier().weight());
    // the binding dimension decides: work units, or request slots when the pool caps requests
    long freeWork = capacity.freeWork();
    long freeSlots = capacity.freeRequestSlotsFor(k);
    long predicted = predictor.predictWaitNanos(ahead, work, freeWork, requestsAhead, freeSlots);
    if (resume != null) { // an announced outage: from its end on, the limit it gives back
      predicted =
          Math.min(
              predicted,
              resume.waitNanos(
                  predictor,
                  ahead,
                  work,
                  freeWork,
                  requestsAhead,
                  freeSlots,
                  capacity.workLimit(),
                  capacity.requestLimit()));
    }
    long serviceNanos = service.deadlineServiceNanos(k, request, work);
    if (!WaitPredictor.feasible(
        nowNanos, request.deadlineNanos(), maxWait, predicted, serviceNanos)) {
      long wait = Math.max(predicted, service.drainNanos(ahead + work, requestsAhead + 1));
      return new Decision.Reject(
          Reason.DEADLINE_UNREACHABLE,
          503,
          retry.seconds(wait),
          "predicted wait "
              + predicted / 1_000_000L
              + " ms cannot meet the deadline or the class's maximum queue wait",
          wait);
    }
    if (resume != null && !k.retired()) { // the room too is the limit's that comes back
      QueueBounds room = WaitingRooms.bounds(k.policy(), policy, capacity.workLimit(), resume);
      if (!k.queue().bounds().equals(room)) {
        k.queue().rebound(room);
      }
    }
    long expires = QueuedItem.expiryNanos(nowNanos, maxWait, request.deadlineNanos(), serviceNanos);
    long ticket = waiter == null ? 0 : nextTicket++; // a shadow check queues nothing
    QueuedItem<Entry> item =
        new QueuedItem<>(
            ticket,
            tenant.id(),
            tenant.tier().weight(),
            work,
            nowNanos,
            expires,
            request.deadlineNanos(),
            new Entry(
                waiter != null ? waiter : NOBODY,
                request,
                k,
                capacity.demandWork(k, request.workUnits())));
    int depth = WaitingRooms.poolDepth(policy, capacity.workLimit()); // a tool's queue
    boolean poolFull = depth > 0 && queuedItemsAtOrAbove(Integer.MAX_VALUE) >= depth;
    Offer offer =
        poolFull
            ? new Offer.Rejected(Offer.Reason.QUEUE_FULL)
            : waiter == null ? k.queue().check(item, nowNanos) : k.queue().offer(item, nowNanos);
    if (offer instanceof Offer.Rejected r) {
      return switch (r.reason()) {
        case TENANT_SHARE ->
            refusal(
                Reason.TENANT_CONCURRENCY,
                429,
                service.drainNanos(k.queue().tenantQueuedWork(tenant.id()), 0),
                "tenant owns its share of the waiting room of class " + k.name());
        case QUEUE_FULL ->
            refusal(
                Reason.QUEUE_FULL,
                503,
                poolFull
                    ? service.drainNanos(queuedWorkAtOrAbove(Integer.MAX_VALUE), depth)
                    : service.drainNanos(k.queue().queuedWork(), k.queue().depth()),
                poolFull
                    ? "queue of pool " + policy.name() + " (depth " + depth + ") is full"
                    : "queue of class " + k.name() + " in pool " + policy.name() + " is full");
        case EXPIRED ->
            refusal(
                Reason.DEADLINE_UNREACHABLE,
                503,
                service.drainNanos(ahead + work, requestsAhead + 1),
                "the deadline leaves no time to wait");
      };
    }
    Offer.Accepted accepted = (Offer.Accepted) offer;
    if (waiter == null) {
      return new Decision.WouldQueue(why, accepted.position(), predicted);
    }
    increment(tenantQueued, tenant.id());
    queuedItems++;
    k.addQueuedDemand(item.payload().demandWork());
    long hold = Math.max(1_000_000L, (expires - nowNanos) + policy.holdMargin().toNanos());
    Decision.Queued queued =
        new Decision.Queued(policy.name(), ticket, hold, expires, accepted.position(), predicted);
    // Queuing may itself allow a start (e.g. the item is first in line and fits): its waiter
    // is then called after this decision is returned (callbacks run after the lock).
    drain(nowNanos, callbacks);
    return queued;
  }

  /** Removes a queued request whose stream went away; true if it was still waiting. */
  boolean cancel(long ticket, long nowNanos, List<Callback> callbacks) {
    for (ClassSlot s : queueSlots) {
      var item = s.queue().remove(ticket);
      if (item.isPresent()) {
        left(item.get());
        drain(nowNanos, callbacks);
        return true;
      }
    }
    return false;
  }

  /** Answers every queued item with {@code reason} (server shutdown); returns how many. */
  int refuseAll(Reason reason, long nowNanos, List<Callback> callbacks) {
    int n = 0;
    for (ClassSlot s : queueSlots) {
      for (QueuedItem<Entry> item : s.queue().clear()) {
        left(item);
        callbacks.add(
            new Callback(
                item.payload().waiter(),
                null,
                new Decision.Reject(
                    reason,
                    503,
                    retry.seconds(0),
                    "sluice is shutting down; retry on another replica",
                    Decision.Reject.UNPREDICTED),
                nowNanos - item.enqueuedAtNanos()));
        n++;
      }
    }
    return n;
  }

  /** A refusal whose Retry-After comes from {@code waitNanos} (carried with it for the client). */
  private Decision.Reject refusal(Reason reason, int status, long waitNanos, String message) {
    return new Decision.Reject(reason, status, retry.seconds(waitNanos), message, waitNanos);
  }

  /** Earliest expiry among queued items, for the adapter's timer. */
  OptionalLong nextExpiryNanos() {
    return scheduler.nextExpiryNanos();
  }

  /** Expires what is due and starts whatever the scheduler proposes and the pool accepts. */
  void drain(long nowNanos, List<Callback> callbacks) {
    if (!anyQueued()) {
      return; // the common case when the pool is not saturated: nothing to expire or start
    }
    ledger.now = nowNanos;
    ledger.started.clear();
    ClassScheduler.Drain<Entry> drain = scheduler.drain(nowNanos, ledger);
    for (ClassScheduler.Expired<Entry> e : drain.expired()) {
      QueuedItem<Entry> item = e.item();
      left(item);
      callbacks.add(
          new Callback(
              item.payload().waiter(),
              null,
              refusal(
                  Reason.QUEUE_TIMEOUT,
                  503,
                  service.drainNanos(
                      queuedWorkAtOrAbove(Integer.MAX_VALUE),
                      queuedItemsAtOrAbove(Integer.MAX_VALUE)),
                  "waited the longest it could and could not start in time"),
              nowNanos - item.enqueuedAtNanos()));
    }
    for (int i = 0; i < drain.admitted().size(); i++) {
      QueuedItem<Entry> item = drain.admitted().get(i).item();
      left(item);
      Start start = ledger.started.get(i);
      callbacks.add(
          new Callback(
              item.payload().waiter(),
              start.permit(),
              start.refusal(),
              nowNanos - item.enqueuedAtNanos()));
    }
  }

  private boolean anyQueued() {
    if (queuedItems == 0) {
      return false;
    }
    List<ClassSlot> slots = queueSlots; // indexed: no iterator per decision
    for (int i = 0; i < slots.size(); i++) {
      if (!slots.get(i).queue().isEmpty()) {
        return true;
      }
    }
    return false;
  }

  /** An item left its queue (started, expired, cancelled or refused): its counts go with it. */
  private void left(QueuedItem<Entry> item) {
    decrement(tenantQueued, item.tenant());
    queuedItems--;
    item.payload().slot().addQueuedDemand(-item.payload().demandWork());
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
}
