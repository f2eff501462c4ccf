package io.sluice.core.admission;

import io.sluice.core.share.ClassDemand;
import io.sluice.core.share.Demand;
import java.util.ArrayList;
import java.util.List;

/**
 * A pool's demand accounting for the share allocation: what each class holds, waits for and was
 * refused for want of capacity since the last read ({@link ClassSlot#refusedWork()}), read and
 * reset by {@link #read}. Not thread-safe: called under the pool lock.
 */
final class PoolDemand {
  private final CapacityLedger capacity;
  private final QueueCoordinator queues;

  PoolDemand(CapacityLedger capacity, QueueCoordinator queues) {
    this.capacity = capacity;
    this.queues = queues;
  }

  /**
   * Counts {@code request}'s demand as unmet when its decision {@code d} refused it for want of
   * capacity ({@code unmet}, not the tenant's cap) or would queue it, and {@code ask} counts
   * demand.
   */
  void countUnmet(AdmissionRequest request, Ask ask, Decision d, boolean unmet) {
    if (ask.countsDemand()
        && ((d instanceof Decision.Reject r && unmet && r.reason() != Reason.TENANT_CONCURRENCY)
            || d instanceof Decision.WouldQueue)) {
      // unmet demand since the last read, by class
      ClassSlot k = capacity.slot(request.requestClass().name());
      if (k != null) {
        k.refused(capacity.demandWork(k, request.workUnits()));
      }
    }
  }

  /** See {@link io.sluice.core.share.SharedPool#demand}; resets the refused counts. */
  Demand read() {
    long inFlightDemand = 0;
    long queuedDemand = 0;
    long refusedWork = 0;
    int refusedRequests = 0;
    List<ClassDemand> classes = new ArrayList<>();
    for (ClassSlot s : capacity.slots()) {
      inFlightDemand += s.demandWork();
      queuedDemand += s.queuedDemandWork();
      refusedWork += s.refusedWork();
      refusedRequests += s.refusedRequests();
      classes.add(
          new ClassDemand(
              s.name(),
              s.demandWork() + s.queuedDemandWork() + s.refusedWork(),
              s.requests() + s.queue().depth() + s.refusedRequests(),
              capacity.inFlightWork(s),
              s.requests(),
              s.queue().peek().map(q -> q.payload().demandWork()).orElse(0L)));
      s.clearRefused();
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
  }
}
