package io.sluice.harness;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The counts of one load run and the {@link RunReport} made of them, kept by parts that each own
 * one concern: how logical requests ended ({@link OutcomeTally}), refused attempts ({@link
 * RefusalTally}), time to first token ({@link LatencyTally}), tokens spent and wasted ({@link
 * TokenTally}), the per-second timeline ({@link SecondsTally}) and the split by class, tenant and
 * phase ({@link GroupTally}). Every count that the report or a progress line must see add up is
 * changed under this object's lock (which also guards {@link Logical#reachedUpstream} and {@link
 * Logical#upstreamAtNanos}); the parts are not thread-safe and are only touched under it, but for
 * the per-second counters, which are atomic.
 */
final class RunTally {
  private final Workload workload;
  private final Rig rig;
  final int seconds;
  final AtomicInteger openLogical = new AtomicInteger();
  private long startNanos;

  // guarded by this (but the seconds' atomic counters)
  private final OutcomeTally outcomes = new OutcomeTally();
  private final RefusalTally refusals = new RefusalTally();
  private final LatencyTally latency;
  private final TokenTally tokens;
  private final SecondsTally perSecond;
  private final GroupTally groups;

  RunTally(Workload workload, Rig rig) {
    this.workload = workload;
    this.rig = rig;
    long drainSeconds = workload.drain().toSeconds() + 2;
    this.seconds = (int) (Math.ceil(workload.duration().toNanos() / 1e9) + drainSeconds + 1);
    this.latency = new LatencyTally(workload.classes(), seconds);
    this.perSecond = new SecondsTally(seconds);
    this.groups = new GroupTally(workload);
    this.tokens = new TokenTally(rig.upstream());
  }

  void start(long startNanos) {
    this.startNanos = startNanos;
  }

  long startNanos() {
    return startNanos;
  }

  long promptSpent0() {
    return tokens.promptSpent0();
  }

  long completionSpent0() {
    return tokens.completionSpent0();
  }

  /** Milliseconds since the run started. */
  long ms(long nanos) {
    return (nanos - startNanos) / 1_000_000;
  }

  /** The mean of the upstream's active generations over the arrival seconds after the first. */
  synchronized double meanActive() {
    return perSecond.meanActive((int) Math.max(1, workload.duration().toSeconds()));
  }

  void arrived(Logical l, long arrivalNanos) {
    synchronized (this) {
      outcomes.arrived();
      openLogical.incrementAndGet();
      groups.arrived(l);
    }
    perSecond.offered(second(arrivalNanos));
  }

  synchronized void unsent() {
    outcomes.unsent();
  }

  synchronized void attemptSent(boolean retry) {
    outcomes.attemptSent(retry);
  }

  /** The request reached the upstream: counted once, whatever its attempts. */
  synchronized void reachedUpstream(Logical l) {
    if (!l.reachedUpstream) {
      l.reachedUpstream = true;
      l.upstreamAtNanos = System.nanoTime();
      outcomes.reachedUpstream();
    }
  }

  void admittedAttempt(long nowNanos) {
    perSecond.admitted(second(nowNanos));
  }

  /** The tokens an attempt spent until its client left: a hang-up or a missed deadline. */
  synchronized void leftMidway(Attempt a, Logical l) {
    tokens.leftMidway(a, l);
  }

  /** A refused attempt; returns the nanoseconds its {@code retry-after} asks to wait, or -1. */
  long refused(String reason, Duration total, Optional<String> retryAfter, long now) {
    perSecond.rejected(second(now));
    synchronized (this) {
      return refusals.refused(reason, total, retryAfter);
    }
  }

  void finished(Logical l, Ending ending, @Nullable String detail, long now) {
    synchronized (this) {
      outcomes.finished(l, ending, detail, l.reachedUpstream);
      if (ending == Ending.COMPLETED) {
        groups.completed(l, phaseAt(now));
        tokens.completed(l);
      }
      // Under the same lock as the count above: the report (synchronized) must never see a
      // request both counted as ended and still open.
      openLogical.decrementAndGet();
    }
    if (ending == Ending.COMPLETED) {
      perSecond.completed(second(now));
    }
  }

  /** When {@code l} first reached the upstream, ms since the start; -1 if it never did. */
  synchronized long upstreamAtMs(Logical l) {
    return l.reachedUpstream ? ms(l.upstreamAtNanos) : -1;
  }

  void recordTtft(String cls, long firstByteNanos, long ttftNanos, long fromArrival) {
    int s = second(firstByteNanos);
    synchronized (this) {
      latency.record(cls, s, ttftNanos, fromArrival);
    }
  }

  /** The arrival phase whose window contains {@code nanos}, or -1 (before or after them). */
  private int phaseAt(long nanos) {
    long at = startNanos;
    for (int p = 0; p < workload.phases().size(); p++) {
      long end = at + workload.phases().get(p).duration().toNanos();
      if (nanos - at >= 0 && nanos - end < 0) {
        return p;
      }
      at = end;
    }
    return -1;
  }

  int second(long nanos) {
    long s = (nanos - startNanos) / 1_000_000_000L;
    return (int) Math.max(0, Math.min(seconds - 1, s));
  }

  /** Records second {@code s}'s queue and upstream activity; the progress line for it. */
  synchronized LoadGenerator.Progress sample(int s, long queued, int active) {
    perSecond.sample(s, queued, active);
    // the logical counts so far (under this lock, so they add up)
    return outcomes.progress(s + 1, refusals.total(), active);
  }

  synchronized RunReport report(double meanActive, long inFlightTokens, long orphanTokens) {
    return new RunReport(
        rig.name(),
        workload.duration().toNanos() / 1e9,
        outcomes.report(openLogical.get()),
        refusals.report(),
        latency.report(),
        groups.classes(),
        groups.tenants(),
        groups.phases(),
        perSecond.timeline(latency),
        tokens.report(inFlightTokens, orphanTokens),
        new RunReport.Upstream(meanActive, rig.upstream().settings().batchSlots()));
  }
}
