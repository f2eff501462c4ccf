package io.sluice.bootstrap.replay;

import java.util.PriorityQueue;
import org.jspecify.annotations.Nullable;

/**
 * The replay's model of one pool's upstream (docs/replay.md, "Upstream model"): processor sharing
 * beyond a knee. With {@code n} requests in service, each progresses at rate {@code min(1, knee /
 * n)}: up to the knee every request takes its own service demand, beyond it they share the knee's
 * throughput evenly. A knee of {@link Double#POSITIVE_INFINITY} serves every request in its demand.
 * A request's demand is its recorded service time divided by the slowdown this model gives the
 * concurrency it was recorded at ({@link #demand}).
 */
final class Upstream {
  /** A request in service. */
  static final class Job {
    final Object owner;
    final long startedAt;
    double finish; // in virtual service time

    Job(Object owner, long startedAt) {
      this.owner = owner;
      this.startedAt = startedAt;
    }
  }

  /**
   * The demand of a request whose client left mid-answer ({@code OUTCOME_CANCELLED}): its recorded
   * service is only how long it ran before the client left, not how long its answer takes, so it
   * never ends by itself; its client's cancel takes it out of service.
   */
  static final long UNTIL_CANCELLED = Long.MAX_VALUE;

  private final double knee;
  private final PriorityQueue<Job> jobs =
      new PriorityQueue<>((a, b) -> Double.compare(a.finish, b.finish));
  private double served; // virtual service time: what a request in service has received
  private long last;

  Upstream(double knee, long now) {
    this.knee = knee;
    this.last = now;
  }

  /** The service demand of a recorded service time taken at {@code recordedConcurrency}. */
  static long demand(long serviceNanos, int recordedConcurrency, double knee) {
    return recordedConcurrency <= knee
        ? serviceNanos
        : (long) (serviceNanos * knee / recordedConcurrency);
  }

  private double rate() {
    int n = jobs.size();
    return n <= knee ? 1.0 : knee / n;
  }

  private void advance(long now) {
    if (now > last) {
      served += rate() * (now - last);
      last = now;
    }
  }

  Job start(Object owner, long demandNanos, long now) {
    advance(now);
    Job j = new Job(owner, now);
    j.finish =
        demandNanos == UNTIL_CANCELLED
            ? Double.POSITIVE_INFINITY
            : served + Math.max(0, demandNanos);
    jobs.add(j);
    return j;
  }

  /** A request that left before its end (cancelled). */
  void remove(Job j, long now) {
    advance(now);
    jobs.remove(j);
  }

  /** When the next request in service ends ({@link Long#MAX_VALUE}: none). */
  long nextEnd() {
    Job j = jobs.peek();
    if (j == null) {
      return Long.MAX_VALUE;
    }
    double left = Math.max(0, j.finish - served);
    if (Double.isInfinite(left)) {
      return Long.MAX_VALUE; // only a cancel ends it
    }
    return last + (long) Math.ceil(left / rate());
  }

  /** The request whose service ended by {@code now}, taken out of service; null when none. */
  @Nullable Job pollEnded(long now) {
    advance(now);
    Job j = jobs.peek();
    if (j == null || j.finish > served + 0.5) {
      return null;
    }
    return jobs.poll();
  }

  int inService() {
    return jobs.size();
  }
}
