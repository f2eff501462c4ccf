package io.sluice.core.queue;

import io.sluice.core.queue.FairQueueNodes.ActiveFlows;
import io.sluice.core.queue.FairQueueNodes.Entry;
import io.sluice.core.queue.FairQueueNodes.ExpiryOrder;
import io.sluice.core.queue.FairQueueNodes.Flow;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;

/**
 * The waiting room of one (pool, class): bounded, deadline-aware and fair between tenants.
 *
 * <p><b>Ordering.</b> Across tenants: start-time fair queuing (SFQ, Goyal et al. 1996) on work
 * units. Each tenant with waiting items is a <i>flow</i> with a start tag {@code S}. When a flow
 * becomes backlogged, {@code S = max(V, F)}, where {@code F} is the finish tag of the flow's last
 * served item and {@code V} is the virtual time. {@link #poll(long)} serves the flow with the
 * smallest {@code S} (ties: the flow that became backlogged first), sets {@code V = S}, and the
 * flow's finish tag becomes {@code S + workUnits / weight}; if the flow still has items, that is
 * its next start tag. Tags are attached to a flow's head at service time rather than to each item
 * at arrival, which is what lets a tenant's items be reordered: <b>within a tenant, earliest
 * deadline first</b> (ties: arrival order). Over any interval in which tenants f and g are both
 * backlogged, {@code |W_f/w_f - W_g/w_g| <= maxItem_f/w_f + maxItem_g/w_g} (the SFQ bound). When
 * the queue becomes empty the busy period ends: flows are forgotten and {@code V} restarts at 0.
 *
 * <p><b>Expiry.</b> Every item has an expiry (latest start time, capped at {@code enqueuedAt +
 * maxWait}); it is expired once {@code now - expiry >= 0}. {@link #poll(long)} first removes and
 * reports all expired items, so an expired item is never handed out; {@link #expire(long)} does the
 * same for the caller's timer, armed at {@link #nextExpiryNanos()}. Ages are never refreshed.
 *
 * <p><b>Bounds.</b> See {@link QueueBounds}; a full queue rejects at once with an {@link Offer}
 * value. Call {@link #expire(long)} before {@link #offer} so expired items do not hold room.
 *
 * <p><b>Cost.</b> offer, poll, remove and expiry of one item are O(log n); {@link #queuedWorkAhead}
 * (also done by offer) is O(backlogged tenants); {@link #oldestAgeNanos} and {@link #topTenants}
 * are O(n) and meant for gauges and {@code /debug/queues}. About 200 bytes per item plus the
 * payload (see {@code TenantFairQueueHeapTest}).
 *
 * <p><b>Concurrency.</b> Not thread-safe and never blocks: the owner (the admission controller)
 * calls it under its own lock or from one serializing executor. It holds no timer and reads no
 * clock; time is always an argument.
 */
public final class TenantFairQueue<T> {
  /** Virtual time beyond which all tags are shifted back to keep double precision. */
  private static final double REBASE_THRESHOLD = 1e12;

  /** Idle flows (tenants with credit but nothing queued) kept before a sweep. */
  private static final int MIN_IDLE_FLOWS = 64;

  private QueueBounds bounds;
  private long maxTenantWork;
  private final Map<Long, Entry<T>> byId = new HashMap<>();
  private final Map<String, Flow<T>> flows = new HashMap<>();
  private final ActiveFlows<T> active = new ActiveFlows<>();
  private final ExpiryOrder<T> expiry = new ExpiryOrder<>();
  private double virtualTime;
  private long queuedWork;
  private long nextSeq;
  private int idleFlows;

  public TenantFairQueue(QueueBounds bounds) {
    this.bounds = Objects.requireNonNull(bounds, "bounds");
    this.maxTenantWork = bounds.maxTenantWork();
  }

  public QueueBounds bounds() {
    return bounds;
  }

  /**
   * New bounds for later offers (the waiting room grew or shrank); items already queued stay, even
   * beyond a smaller room, and leave as usual.
   */
  public void rebound(QueueBounds next) {
    this.bounds = Objects.requireNonNull(next, "bounds");
    this.maxTenantWork = next.maxTenantWork();
  }

  /**
   * Queues {@code item} or refuses it. Refusal order: {@link Offer.Reason#EXPIRED}, then {@link
   * Offer.Reason#QUEUE_FULL} (the room has no space for the item: no tenant could queue it now),
   * then {@link Offer.Reason#TENANT_SHARE} (the room has space, but this tenant's part of it is
   * used). So a full queue is reported as full even when one tenant filled it alone. A refused
   * offer leaves the queue unchanged.
   *
   * @throws IllegalArgumentException if an item with the same id is already queued
   */
  public Offer offer(QueuedItem<T> item, long nowNanos) {
    Objects.requireNonNull(item, "item");
    if (byId.containsKey(item.id())) {
      throw new IllegalArgumentException("id: " + item.id() + " (expected: not already queued)");
    }
    Offer checked = check(item, nowNanos);
    if (checked instanceof Offer.Rejected) {
      return checked;
    }
    long expiresAt = effectiveExpiry(item);
    Flow<T> flow = flows.get(item.tenant());
    if (flow == null) {
      flow = new Flow<>(item.tenant());
      flows.put(item.tenant(), flow);
    } else if (flow.size() == 0) {
      idleFlows--;
    }
    flow.weight = item.weight();
    Entry<T> entry = new Entry<>(item, flow, expiresAt, nextSeq++);
    boolean activates = flow.size() == 0;
    flow.add(entry);
    flow.queuedWork += item.workUnits();
    expiry.add(entry);
    byId.put(item.id(), entry);
    queuedWork += item.workUnits();
    if (activates) {
      flow.startTag = Math.max(virtualTime, flow.lastFinishTag);
      flow.activatedSeq = entry.seq;
      active.add(flow);
    }
    return checked;
  }

  /**
   * What {@link #offer} would answer for {@code item} now, without queuing it (the queue is not
   * changed): the same refusal, or the same {@link Offer.Accepted} position and work ahead.
   */
  public Offer check(QueuedItem<T> item, long nowNanos) {
    long expiresAt = effectiveExpiry(item);
    if (expiresAt - nowNanos <= 0) {
      return new Offer.Rejected(Offer.Reason.EXPIRED);
    }
    if (byId.size() >= bounds.maxItems()
        || item.workUnits() > bounds.maxQueuedWork() - queuedWork) {
      return new Offer.Rejected(Offer.Reason.QUEUE_FULL);
    }
    Flow<T> flow = flows.get(item.tenant());
    long tenantWork = flow == null ? 0 : flow.queuedWork;
    if (item.workUnits() > maxTenantWork - tenantWork) {
      return new Offer.Rejected(Offer.Reason.TENANT_SHARE);
    }
    Ahead ahead = estimateAhead(flow, item.weight());
    return new Offer.Accepted(ahead.position, ahead.work);
  }

  /**
   * The item {@link #poll(long)} would serve next if nothing expires first, or empty. It may be
   * expired; call {@link #expire(long)} first when that matters.
   */
  public Optional<QueuedItem<T>> peek() {
    Flow<T> flow = active.peek();
    return flow == null ? Optional.empty() : Optional.of(flow.head().item);
  }

  /**
   * Removes the items expired at {@code nowNanos}, then removes and returns the next item by
   * fairness. The returned item is never expired.
   */
  public Poll<T> poll(long nowNanos) {
    List<QueuedItem<T>> expired = expire(nowNanos);
    Flow<T> flow = active.peek();
    if (flow == null) {
      return new Poll<>(null, expired);
    }
    Entry<T> entry = flow.head(); // an active flow has items
    serve(flow, entry);
    return new Poll<>(entry.item, expired);
  }

  /** Cancels the item with {@code id} (stream reset): removes it at once. Empty if not queued. */
  public Optional<QueuedItem<T>> remove(long id) {
    Entry<T> entry = byId.get(id);
    if (entry == null) {
      return Optional.empty();
    }
    detach(entry);
    return Optional.of(entry.item);
  }

  /** Removes and returns, in expiry order, every item whose expiry is at or before {@code now}. */
  public List<QueuedItem<T>> expire(long nowNanos) {
    Entry<T> first = expiry.peek();
    if (first == null || first.expiresAtNanos - nowNanos > 0) {
      return List.of();
    }
    List<QueuedItem<T>> expired = new ArrayList<>();
    for (Entry<T> e = first; e != null && e.expiresAtNanos - nowNanos <= 0; e = expiry.peek()) {
      detach(e);
      expired.add(e.item);
    }
    return expired;
  }

  /** Removes and returns every item (server shutdown), in expiry order. */
  public List<QueuedItem<T>> clear() {
    List<QueuedItem<T>> all = new ArrayList<>(byId.size());
    for (Entry<T> e = expiry.peek(); e != null; e = expiry.peek()) {
      detach(e);
      all.add(e.item);
    }
    return all;
  }

  /** The earliest expiry among waiting items, for the caller's single timer; empty when empty. */
  public OptionalLong nextExpiryNanos() {
    Entry<T> first = expiry.peek();
    return first == null ? OptionalLong.empty() : OptionalLong.of(first.expiresAtNanos);
  }

  public int depth() {
    return byId.size();
  }

  public long queuedWork() {
    return queuedWork;
  }

  public boolean isEmpty() {
    return byId.isEmpty();
  }

  /** Age of the oldest waiting item ({@code now - enqueuedAt}), 0 when empty. O(n). */
  public long oldestAgeNanos(long nowNanos) {
    long oldest = 0;
    for (int i = 0; i < expiry.size(); i++) {
      oldest = Math.max(oldest, nowNanos - expiry.at(i).item.enqueuedAtNanos());
    }
    return oldest;
  }

  /** Work and items waiting for one tenant. */
  public record TenantLoad(String tenant, long queuedWork, int items) {}

  /** The {@code k} tenants with the most queued work, largest first (for /debug/queues). */
  public List<TenantLoad> topTenants(int k) {
    if (k <= 0) {
      return List.of();
    }
    List<TenantLoad> loads = new ArrayList<>(active.size());
    for (int i = 0; i < active.size(); i++) {
      Flow<T> f = active.at(i);
      loads.add(new TenantLoad(f.tenant, f.queuedWork, f.size()));
    }
    loads.sort(
        Comparator.comparingLong(TenantLoad::queuedWork)
            .reversed()
            .thenComparing(TenantLoad::tenant));
    return loads.size() <= k ? loads : List.copyOf(loads.subList(0, k));
  }

  /** Queued work of one tenant (0 if none). */
  public long tenantQueuedWork(String tenant) {
    Flow<T> flow = flows.get(tenant);
    return flow == null ? 0 : flow.queuedWork;
  }

  /**
   * Estimate of the work units served before a new item of {@code tenant} with {@code weight}
   * offered now (for wait prediction). The tenant's own queued work counts in full (as if FIFO
   * within the tenant); each other backlogged flow g counts {@code min(Q_g, max(head_g, (S_new -
   * S_g) * w_g))} when {@code S_g <= S_new}, the fluid SFQ share it gets before the new item's
   * start tag {@code S_new}. O(backlogged tenants).
   */
  public long queuedWorkAhead(String tenant, double weight) {
    Objects.requireNonNull(tenant, "tenant");
    if (!(weight > 0)) {
      throw new IllegalArgumentException("weight: " + weight + " (expected: > 0)");
    }
    return estimateAhead(flows.get(tenant), weight).work;
  }

  /**
   * As {@link #queuedWorkAhead}, in items: the estimated number of waiting items served before a
   * new item of {@code tenant} offered now (for wait prediction on a pool's request slots).
   */
  public int queuedItemsAhead(String tenant, double weight) {
    Objects.requireNonNull(tenant, "tenant");
    if (!(weight > 0)) {
      throw new IllegalArgumentException("weight: " + weight + " (expected: > 0)");
    }
    return estimateAhead(flows.get(tenant), weight).position;
  }

  // ---- internals ----

  private record Ahead(int position, long work) {}

  private Ahead estimateAhead(@Nullable Flow<T> flow, double weight) {
    double startNew;
    double work = 0;
    double items = 0;
    if (flow != null && flow.size() > 0) {
      startNew = flow.startTag + flow.queuedWork / weight;
      work = flow.queuedWork;
      items = flow.size();
    } else {
      startNew = flow == null ? virtualTime : Math.max(virtualTime, flow.lastFinishTag);
    }
    for (int i = 0; i < active.size(); i++) {
      Flow<T> g = active.at(i);
      if (g == flow || g.startTag > startNew) {
        continue;
      }
      double served = (startNew - g.startTag) * g.weight;
      served = Math.max(served, g.head().item.workUnits());
      served = Math.min(served, g.queuedWork);
      work += served;
      items += g.size() * (served / g.queuedWork);
    }
    return new Ahead((int) Math.min(Integer.MAX_VALUE, Math.ceil(items - 1e-9)), Math.round(work));
  }

  private long effectiveExpiry(QueuedItem<T> item) {
    long maxAgeExpiry = item.enqueuedAtNanos() + bounds.maxWaitNanos();
    return item.expiresAtNanos() - maxAgeExpiry <= 0 ? item.expiresAtNanos() : maxAgeExpiry;
  }

  private void serve(Flow<T> flow, Entry<T> entry) {
    virtualTime = flow.startTag;
    double finish = flow.startTag + entry.item.workUnits() / entry.item.weight();
    flow.lastFinishTag = finish;
    removeEntry(entry);
    if (flow.size() > 0) {
      flow.startTag = finish;
      active.changed(flow.activeIndex);
    } else {
      deactivate(flow);
    }
    afterRemoval();
    if (virtualTime > REBASE_THRESHOLD) {
      rebase();
    }
  }

  private void detach(Entry<T> entry) {
    Flow<T> flow = entry.flow;
    removeEntry(entry);
    // the flow's start tag does not depend on which of its items is at the head
    if (flow.size() == 0) {
      deactivate(flow);
    }
    afterRemoval();
  }

  private void removeEntry(Entry<T> entry) {
    Flow<T> flow = entry.flow;
    flow.removeAt(entry.flowIndex);
    expiry.removeAt(entry.expiryIndex);
    byId.remove(entry.item.id());
    flow.queuedWork -= entry.item.workUnits();
    queuedWork -= entry.item.workUnits();
  }

  private void deactivate(Flow<T> flow) {
    active.removeAt(flow.activeIndex);
    if (flow.lastFinishTag <= virtualTime) {
      flows.remove(flow.tenant);
    } else {
      // keeps its finish tag until V passes it, so emptying and refilling gains nothing
      idleFlows++;
      if (idleFlows > Math.max(MIN_IDLE_FLOWS, 2 * active.size())) {
        sweepIdleFlows();
      }
    }
  }

  private void afterRemoval() {
    if (byId.isEmpty()) {
      // end of the busy period: every flow starts afresh
      flows.clear();
      active.clear();
      expiry.clear();
      idleFlows = 0;
      virtualTime = 0;
    }
  }

  /**
   * Drops idle flows whose finish tag V has passed. If more than half the limit still hold credit
   * (many tenants with one item each keep V from advancing), drops them all: such a tenant may then
   * gain at most one item when it returns, and memory stays O(backlogged tenants). Amortized O(1).
   */
  private void sweepIdleFlows() {
    int kept = 0;
    for (Iterator<Flow<T>> it = flows.values().iterator(); it.hasNext(); ) {
      Flow<T> f = it.next();
      if (f.size() == 0) {
        if (f.lastFinishTag <= virtualTime) {
          it.remove();
        } else {
          kept++;
        }
      }
    }
    if (kept > Math.max(MIN_IDLE_FLOWS, 2 * active.size()) / 2) {
      flows.values().removeIf(f -> f.size() == 0);
      kept = 0;
    }
    idleFlows = kept;
  }

  private void rebase() {
    double shift = virtualTime;
    for (Flow<T> f : flows.values()) {
      f.startTag -= shift;
      f.lastFinishTag -= shift;
    }
    virtualTime = 0;
  }

  /** Number of tenant flows held (backlogged and idle-with-credit); for leak tests. */
  int flowCount() {
    return flows.size();
  }

  /** Number of backlogged tenant flows; for leak tests. */
  int activeFlowCount() {
    return active.size();
  }

  int expiryIndexSize() {
    return expiry.size();
  }

  double virtualTime() {
    return virtualTime;
  }
}
