package io.sluice.core.share;

import java.util.List;

/**
 * One replica's use of and demand for a pool ({@link SharedPool#demand}).
 *
 * @param workInFlight work units in flight as counted against the share (what it holds)
 * @param demandInFlight the same requests' own work (their demand)
 * @param queuedWork waiting work (each request's own)
 * @param workLimit the work units it counts against now (its share, or the whole pool)
 * @param requestLimit the request slots it counts against now (0 when the pool caps none)
 * @param classes by class (retired classes still holding permits included)
 */
public record Demand(
    long workInFlight,
    int requestsInFlight,
    long demandInFlight,
    long queuedWork,
    int queuedRequests,
    long refusedWork,
    int refusedRequests,
    long workLimit,
    int requestLimit,
    List<ClassDemand> classes) {
  public Demand {
    classes = List.copyOf(classes);
  }

  /** Work it wants: in flight (as asked), waiting and refused. */
  public long demandWork() {
    return demandInFlight + queuedWork + refusedWork;
  }

  /** Requests it wants: in flight, waiting and refused. */
  public int demandRequests() {
    return requestsInFlight + queuedRequests + refusedRequests;
  }
}
