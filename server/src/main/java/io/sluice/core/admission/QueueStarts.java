package io.sluice.core.admission;

import io.sluice.core.queue.ClassScheduler;
import io.sluice.core.queue.QueuedItem;
import java.util.ArrayList;
import java.util.List;

/**
 * The scheduler's view of one pool ({@link ClassScheduler.PoolLedger}) for {@link
 * QueueCoordinator}: the pool's own numbers, and each start the pool's {@link
 * QueueCoordinator.Starter} takes. A queued request starts as its waiter says it asks now ({@link
 * Waiter#atStart}): its output reserve re-estimated with what the learner saw while it waited,
 * never more than it was queued with, so the scheduler fits and the pool charges the smaller
 * request. Not thread-safe: guarded by the pool lock, as the coordinator.
 */
final class QueueStarts implements ClassScheduler.PoolLedger<QueueCoordinator.Entry> {
  private final CapacityLedger capacity;
  private final QueueCoordinator.Starter starter;
  List<ClassSlot> slots; // scheduler index -> slot, the coordinator's
  long now;

  /** Per item the scheduler took off a queue: its permit or refusal. */
  final List<QueueCoordinator.Start> started = new ArrayList<>();

  QueueStarts(CapacityLedger capacity, QueueCoordinator.Starter starter, List<ClassSlot> slots) {
    this.capacity = capacity;
    this.starter = starter;
    this.slots = slots;
  }

  // the class rules' view: the pool's own numbers with the other replicas' load as last
  // reported (or this replica's share when they are scaled to it); the share itself is
  // checked when the start is taken (checkCapacity), and bounds the free capacity here
  @Override
  public long capacityWorkUnits() {
    return capacity.classCapWork();
  }

  @Override
  public long inFlightWorkUnits() {
    return capacity.classCapWork() - capacity.freeWork();
  }

  @Override
  public long inFlightWorkUnits(int classIndex) {
    return capacity.classWork(slots.get(classIndex));
  }

  @Override
  public long freeRequests() {
    return capacity.freeRequests();
  }

  @Override
  public long requestHeadroom(int classIndex) {
    ClassSlot k = slots.get(classIndex);
    return capacity.policy().maxRequests() > 0 ? capacity.classRequestHeadroom(k) : Long.MAX_VALUE;
  }

  /** The item's work as it would start now: its request re-asked, never above its queued work. */
  @Override
  public long workNow(int classIndex, QueuedItem<QueueCoordinator.Entry> item) {
    AdmissionRequest r = startsAs(item);
    return r == item.payload().request()
        ? item.workUnits()
        : Math.min(item.workUnits(), capacity.accountedWork(slots.get(classIndex), r.workUnits()));
  }

  @Override
  public boolean admit(
      int classIndex, QueuedItem<QueueCoordinator.Entry> item, ClassScheduler.Lane lane) {
    QueueCoordinator.Start start = starter.start(slots.get(classIndex), startsAs(item), now);
    if (start == null) {
      return false;
    }
    started.add(start);
    return true;
  }

  /**
   * The request {@code item} starts as: what its waiter asks now, if less; else as queued. Asked
   * again at the start itself (the learner may have moved since the fit): the pool's own capacity
   * check there decides.
   */
  private AdmissionRequest startsAs(QueuedItem<QueueCoordinator.Entry> item) {
    AdmissionRequest queued = item.payload().request();
    AdmissionRequest now = item.payload().waiter().atStart(queued);
    AdmissionRequest r =
        now != queued
                && now.workUnits() < queued.workUnits()
                && now.outputTokens() <= queued.outputTokens()
                && now.pool() == queued.pool()
                && now.requestClass() == queued.requestClass()
                && now.tenant() == queued.tenant()
                && now.deadlineNanos() == queued.deadlineNanos()
                && now.arrivalNanos() == queued.arrivalNanos()
            ? now
            : queued;
    return r;
  }
}
