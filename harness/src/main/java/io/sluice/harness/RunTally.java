package io.sluice.harness;

import io.sluice.upstream.SimulatedLlmUpstream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import org.HdrHistogram.Histogram;
import org.jspecify.annotations.Nullable;

/**
 * The counts of one load run: per logical request, per attempt, per second, per class, tenant and
 * phase, and the {@link RunReport} made of them. Every count that the report or a progress line
 * must see add up is changed under this object's lock (which also guards {@link
 * Logical#reachedUpstream} and {@link Logical#upstreamAtNanos}).
 */
final class RunTally {
  private final Workload workload;
  private final Rig rig;
  final int seconds;
  private final AtomicLongArray offeredPerSecond;
  private final AtomicLongArray admittedPerSecond;
  private final AtomicLongArray rejectedPerSecond;
  private final AtomicLongArray completedPerSecond;
  private final Histogram[] ttftPerSecond;
  private final long[] queuedAtSecond;
  private final int[] activeAtSecond;
  private final long promptSpent0;
  private final long completionSpent0;
  final AtomicInteger openLogical = new AtomicInteger();
  private long startNanos;

  // guarded by this
  private long offered;
  private long attempts;
  private long completed;
  private long completedAfterRetry;
  private long deadlineMissed;
  private long deadlineMissedAfterFirstToken;
  private long cancelled;
  private long cancelledMidStream;
  private long refusalsWithRetryAfter;
  private long refusalsWithoutRetryAfter;
  private long retries;
  private long unsent;
  private long usefulTokens;
  private long admittedLogical;
  private long refusedBeforeUpstream;
  private long unservedBeforeUpstream;
  private long tokensOnMissedDeadlines;
  private long tokensOnHangUps;
  private long tokensOnHangUpsAfterWaiting;
  private final Map<String, Long> rejectedFinal = new TreeMap<>();
  private final Map<String, Long> rejectionsByReason = new TreeMap<>();
  private final Map<String, Long> errors = new TreeMap<>();
  private final Map<String, Histogram> ttftByClass = new LinkedHashMap<>();
  private final Map<String, Histogram> ttftFromArrivalByClass = new LinkedHashMap<>();
  private final Map<String, Histogram> refusalMicrosByReason = new LinkedHashMap<>();
  private final Map<String, long[]> byClass = new LinkedHashMap<>();
  private final Map<String, long[]> byTenant = new LinkedHashMap<>();
  private final long[][] byPhase;

  RunTally(Workload workload, Rig rig) {
    this.workload = workload;
    this.rig = rig;
    long drainSeconds = workload.drain().toSeconds() + 2;
    this.seconds = (int) (Math.ceil(workload.duration().toNanos() / 1e9) + drainSeconds + 1);
    offeredPerSecond = new AtomicLongArray(seconds);
    admittedPerSecond = new AtomicLongArray(seconds);
    rejectedPerSecond = new AtomicLongArray(seconds);
    completedPerSecond = new AtomicLongArray(seconds);
    ttftPerSecond = new Histogram[seconds];
    queuedAtSecond = new long[seconds];
    activeAtSecond = new int[seconds];
    for (Workload.RequestClass c : workload.classes()) {
      ttftByClass.put(c.name(), new Histogram(3_600_000_000L, 3));
      ttftFromArrivalByClass.put(c.name(), new Histogram(3_600_000_000L, 3));
      byClass.put(c.name(), new long[2]);
    }
    for (Workload.Tenant t : workload.tenants()) {
      byTenant.put(t.name(), new long[2]);
    }
    byPhase = new long[workload.phases().size()][2];
    promptSpent0 = rig.upstream().promptTokensSpent();
    completionSpent0 = rig.upstream().completionTokensSpent();
  }

  void start(long startNanos) {
    this.startNanos = startNanos;
  }

  long startNanos() {
    return startNanos;
  }

  long promptSpent0() {
    return promptSpent0;
  }

  long completionSpent0() {
    return completionSpent0;
  }

  /** Milliseconds since the run started. */
  long ms(long nanos) {
    return (nanos - startNanos) / 1_000_000;
  }

  /** The mean of the upstream's active generations over the arrival seconds after the first. */
  synchronized double meanActive() {
    int arrivalSeconds = (int) Math.max(1, workload.duration().toSeconds());
    long meanActiveSum = 0;
    int samples = 0;
    for (int s = 0; s < Math.min(arrivalSeconds, seconds); s++) {
      if (s >= 1) {
        meanActiveSum += activeAtSecond[s];
        samples++;
      }
    }
    return samples == 0 ? 0 : (double) meanActiveSum / samples;
  }

  void arrived(Logical l, long arrivalNanos) {
    synchronized (this) {
      offered++;
      openLogical.incrementAndGet();
      Objects.requireNonNull(byClass.get(l.requestClass.name()))[0]++;
      Objects.requireNonNull(byTenant.get(l.tenant.name()))[0]++;
      byPhase[l.phaseIndex][0]++;
    }
    offeredPerSecond.incrementAndGet(second(arrivalNanos));
  }

  synchronized void unsent() {
    unsent++;
  }

  synchronized void attemptSent(boolean retry) {
    attempts++;
    if (retry) {
      retries++;
    }
  }

  /** The request reached the upstream: counted once, whatever its attempts. */
  synchronized void reachedUpstream(Logical l) {
    if (!l.reachedUpstream) {
      l.reachedUpstream = true;
      l.upstreamAtNanos = System.nanoTime();
      admittedLogical++;
    }
  }

  void admittedAttempt(long nowNanos) {
    admittedPerSecond.incrementAndGet(second(nowNanos));
  }

  /** The tokens an attempt spent until its client left: a hang-up or a missed deadline. */
  synchronized void leftMidway(Attempt a, Logical l) {
    if (a.voluntary && l.hangsUpAnyway) {
      tokensOnHangUps += a.tokens.get();
    } else if (a.voluntary) {
      tokensOnHangUpsAfterWaiting += a.tokens.get();
    } else {
      tokensOnMissedDeadlines += a.tokens.get();
    }
  }

  /** A refused attempt; returns the nanoseconds its {@code retry-after} asks to wait, or -1. */
  long refused(String reason, Duration total, Optional<String> retryAfter, long now) {
    rejectedPerSecond.incrementAndGet(second(now));
    long retryNanos = -1;
    synchronized (this) {
      rejectionsByReason.merge(reason, 1L, Long::sum);
      refusalMicrosByReason
          .computeIfAbsent(reason, k -> new Histogram(3_600_000_000L, 2))
          .recordValue(Math.max(0, Math.min(3_600_000_000L, total.toNanos() / 1000)));
      if (retryAfter.isPresent()) {
        refusalsWithRetryAfter++;
        try {
          retryNanos = Long.parseLong(retryAfter.get().trim()) * 1_000_000_000L;
        } catch (NumberFormatException ignored) {
          retryNanos = -1;
        }
      } else {
        refusalsWithoutRetryAfter++;
      }
    }
    return retryNanos;
  }

  void finished(Logical l, Ending ending, @Nullable String detail, long now) {
    synchronized (this) {
      if (!l.reachedUpstream) {
        if (ending == Ending.REFUSED) {
          refusedBeforeUpstream++;
        } else {
          unservedBeforeUpstream++;
        }
      }
      switch (ending) {
        case COMPLETED -> {
          completed++;
          if (l.attempt > 0) {
            completedAfterRetry++;
          }
          Objects.requireNonNull(byClass.get(l.requestClass.name()))[1]++;
          Objects.requireNonNull(byTenant.get(l.tenant.name()))[1]++;
          int completedIn = phaseAt(now);
          if (completedIn >= 0) {
            byPhase[completedIn][1]++;
          }
          usefulTokens +=
              SimulatedLlmUpstream.promptTokens(l.body.length, rig.upstream().settings())
                  + l.outputTokens;
        }
        case DEADLINE -> {
          deadlineMissed++;
          if (detail != null) {
            deadlineMissedAfterFirstToken++;
          }
        }
        case CANCELLED -> {
          cancelled++;
          if (detail != null) {
            cancelledMidStream++;
          }
        }
        case REFUSED -> rejectedFinal.merge(detail, 1L, Long::sum);
        case ERROR -> errors.merge(detail, 1L, Long::sum);
      }
      // Under the same lock as the count above: the report (synchronized) must never see a
      // request both counted as ended and still open.
      openLogical.decrementAndGet();
    }
    if (ending == Ending.COMPLETED) {
      completedPerSecond.incrementAndGet(second(now));
    }
  }

  /** When {@code l} first reached the upstream, ms since the start; -1 if it never did. */
  synchronized long upstreamAtMs(Logical l) {
    return l.reachedUpstream ? ms(l.upstreamAtNanos) : -1;
  }

  void recordTtft(String cls, long firstByteNanos, long ttftNanos, long fromArrival) {
    long micros = Math.max(1, ttftNanos / 1000);
    int s = second(firstByteNanos);
    synchronized (this) {
      Objects.requireNonNull(ttftByClass.get(cls)).recordValue(Math.min(micros, 3_600_000_000L));
      Objects.requireNonNull(ttftFromArrivalByClass.get(cls))
          .recordValue(Math.min(Math.max(1, fromArrival / 1000), 3_600_000_000L));
      if (ttftPerSecond[s] == null) {
        ttftPerSecond[s] = new Histogram(3_600_000_000L, 2);
      }
      ttftPerSecond[s].recordValue(Math.min(micros, 3_600_000_000L));
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
    queuedAtSecond[s] = queued;
    activeAtSecond[s] = active;
    return progress(s + 1, active);
  }

  /** The logical counts so far (under this lock, so they add up). */
  private LoadGenerator.Progress progress(int second, int active) {
    long refusedAttempts = 0;
    for (long n : rejectionsByReason.values()) {
      refusedAttempts += n;
    }
    return new LoadGenerator.Progress(
        second,
        offered,
        admittedLogical,
        refusedBeforeUpstream,
        unservedBeforeUpstream,
        offered - admittedLogical - refusedBeforeUpstream - unservedBeforeUpstream,
        completed,
        refusedAttempts,
        active);
  }

  synchronized RunReport report(double meanActive, long inFlightTokens, long orphanTokens) {
    List<RunReport.Second> timeline = new ArrayList<>();
    int last = 0;
    for (int s = 0; s < seconds; s++) {
      if (offeredPerSecond.get(s) + admittedPerSecond.get(s) + completedPerSecond.get(s) > 0
          || queuedAtSecond[s] > 0) {
        last = s;
      }
    }
    for (int s = 0; s <= last; s++) {
      Histogram h = ttftPerSecond[s];
      timeline.add(
          new RunReport.Second(
              s,
              offeredPerSecond.get(s),
              admittedPerSecond.get(s),
              rejectedPerSecond.get(s),
              completedPerSecond.get(s),
              queuedAtSecond[s],
              activeAtSecond[s],
              h == null ? Double.NaN : h.getValueAtPercentile(50) / 1000.0,
              h == null ? Double.NaN : h.getValueAtPercentile(95) / 1000.0));
    }
    List<RunReport.PhaseRow> phases = new ArrayList<>();
    for (int p = 0; p < workload.phases().size(); p++) {
      Workload.Phase ph = workload.phases().get(p);
      phases.add(
          new RunReport.PhaseRow(
              ph.label(),
              ph.duration().toNanos() / 1e9,
              ph.ratePerSecond(),
              byPhase[p][0],
              byPhase[p][1]));
    }
    Map<String, RunReport.Split> classes = new LinkedHashMap<>();
    byClass.forEach((k, v) -> classes.put(k, new RunReport.Split(v[0], v[1])));
    Map<String, RunReport.Split> tenants = new LinkedHashMap<>();
    byTenant.forEach((k, v) -> tenants.put(k, new RunReport.Split(v[0], v[1])));
    return new RunReport(
        rig.name(),
        workload.duration().toNanos() / 1e9,
        offered,
        attempts,
        completed,
        completedAfterRetry,
        deadlineMissed,
        deadlineMissedAfterFirstToken,
        cancelled,
        cancelledMidStream,
        Map.copyOf(rejectedFinal),
        Map.copyOf(rejectionsByReason),
        refusalsWithRetryAfter,
        refusalsWithoutRetryAfter,
        retries,
        unsent,
        Map.copyOf(errors),
        openLogical.get(),
        Map.copyOf(ttftByClass),
        Map.copyOf(ttftFromArrivalByClass),
        classes,
        tenants,
        phases,
        timeline,
        rig.upstream().promptTokensSpent() - promptSpent0,
        rig.upstream().completionTokensSpent() - completionSpent0,
        usefulTokens,
        inFlightTokens,
        tokensOnMissedDeadlines,
        tokensOnHangUps,
        tokensOnHangUpsAfterWaiting,
        orphanTokens,
        meanActive,
        rig.upstream().settings().batchSlots(),
        Map.copyOf(refusalMicrosByReason));
  }
}
