package io.sluice.core.queue;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

/**
 * A pool's capacity accounting for scheduler tests. It checks, independently of the scheduler, the
 * rules every start must obey: capacity is never exceeded, a RESERVED start fits the class's
 * reserve, a class with borrow=false never borrows, and a BORROWED start leaves enough free for
 * every other waiting class below its reserve.
 */
final class FakeLedger implements ClassScheduler.PoolLedger<String> {
  record Running(int classIndex, QueuedItem<String> item, ClassScheduler.Lane lane) {}

  private final long capacity;
  private final long[] inFlight;
  private ClassScheduler<String> scheduler;
  final List<Running> running = new ArrayList<>();
  int refuseNext;

  FakeLedger(long capacity, int classes) {
    this.capacity = capacity;
    this.inFlight = new long[classes];
  }

  void attach(ClassScheduler<String> scheduler) {
    this.scheduler = scheduler;
  }

  @Override
  public long capacityWorkUnits() {
    return capacity;
  }

  @Override
  public long inFlightWorkUnits() {
    long sum = 0;
    for (long f : inFlight) {
      sum += f;
    }
    return sum;
  }

  @Override
  public long inFlightWorkUnits(int classIndex) {
    return inFlight[classIndex];
  }

  long reserve(int k) {
    return (long) Math.floor(scheduler.queueClass(k).reservedShare() * capacity);
  }

  long free() {
    return capacity - inFlightWorkUnits();
  }

  @Override
  public boolean admit(int k, QueuedItem<String> item, ClassScheduler.Lane lane) {
    if (refuseNext > 0) {
      refuseNext--;
      return false;
    }
    long w = item.workUnits();
    assertThat(inFlightWorkUnits() + w).as("capacity").isLessThanOrEqualTo(capacity);
    if (lane == ClassScheduler.Lane.RESERVED) {
      assertThat(inFlight[k] + w).as("reserved start fits reserve").isLessThanOrEqualTo(reserve(k));
    } else {
      assertThat(scheduler.queueClass(k).borrow()).as("only borrowers borrow").isTrue();
      long entitled = 0;
      for (int j = 0; j < inFlight.length; j++) {
        TenantFairQueue<String> q = scheduler.queueClass(j).queue();
        if (j != k && !q.isEmpty()) {
          entitled += Math.max(0, Math.min(reserve(j) - inFlight[j], q.queuedWork()));
        }
      }
      assertThat(free() - w)
          .as("borrowing leaves reserves of waiting classes")
          .isGreaterThanOrEqualTo(entitled);
    }
    inFlight[k] += w;
    running.add(new Running(k, item, lane));
    return true;
  }

  /** Direct admission of a new arrival (not from a queue). */
  void admitDirect(int k, QueuedItem<String> item, ClassScheduler.Lane lane) {
    assertThat(admit(k, item, lane)).isTrue();
  }

  void release(int index) {
    Running r = running.remove(index);
    inFlight[r.classIndex()] -= r.item().workUnits();
  }
}
