package io.sluice.harness;

import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.harness.LoadGenerator.Outcome;
import io.sluice.harness.LoadGenerator.Progress;
import io.sluice.harness.LoadGenerator.Try;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * One run of a {@link LoadGenerator}: sends the workload's arrivals to the rig at their times,
 * retries refusals that carry a {@code Retry-After}, follows each attempt to its end, and counts
 * everything in a {@link RunTally}.
 */
final class LoadRun {
  private final Workload workload;
  private final Rig rig;
  private final Consumer<Progress> progress;
  private final Consumer<Outcome> outcomes;
  private final ScheduledThreadPoolExecutor timers =
      new ScheduledThreadPoolExecutor(
          1,
          r -> {
            Thread t = new Thread(r, "loadgen-timers");
            t.setDaemon(true);
            return t;
          });
  private final Map<String, Attempt> attemptsById = new ConcurrentHashMap<>();
  private final Set<Logical> open = ConcurrentHashMap.newKeySet();
  private final @Nullable AttemptTrace traced = AttemptTrace.ifEnabled();
  private final AtomicLong orphanTokens = new AtomicLong();
  private final AtomicLong ids = new AtomicLong();
  private final AtomicLong inFlight = new AtomicLong();
  private final AtomicLong admittedInFlight = new AtomicLong();
  private final RunTally tally;
  private long startNanos;

  LoadRun(Workload workload, Rig rig, Consumer<Progress> progress, Consumer<Outcome> outcomes) {
    this.workload = workload;
    this.rig = rig;
    this.progress = progress;
    this.outcomes = outcomes;
    this.tally = new RunTally(workload, rig);
    timers.setRemoveOnCancelPolicy(true);
  }

  RunReport execute() throws InterruptedException {
    rig.listener(
        new Rig.Listener() {
          @Override
          public void admitted(String requestId) {
            onUpstream(requestId);
          }

          @Override
          public void tokens(String requestId, long tokens) {
            Attempt a = attemptsById.get(requestId);
            if (a != null) {
              a.tokens.addAndGet(tokens);
            }
            Attempt t = traced == null ? null : traced.get(requestId);
            if (t != null) {
              t.tokensTotal.addAndGet(tokens);
            }
            if (a == null) {
              orphanTokens.addAndGet(tokens);
            }
          }
        });
    startNanos = System.nanoTime();
    tally.start(startNanos);
    var sampler =
        timers.scheduleAtFixedRate(
            this::sample, 1_000_000_000L, 1_000_000_000L, TimeUnit.NANOSECONDS);
    try {
      arrive();
      long drainUntil = System.nanoTime() + workload.drain().toNanos();
      while (tally.openLogical.get() > 0 && System.nanoTime() - drainUntil < 0) {
        Thread.sleep(20);
      }
    } finally {
      sampler.cancel(false);
      timers.shutdownNow();
      rig.listener(Rig.Listener.NONE);
    }
    double meanActive = tally.meanActive();
    long inFlightTokens = 0;
    for (Attempt a : attemptsById.values()) {
      inFlightTokens += a.tokens.get();
    }
    if (traced != null) {
      traced.write(rig, tally, orphanTokens.get());
    }
    long end = System.nanoTime();
    for (Logical l : open) {
      tell(l, "unfinished", "", end);
    }
    return tally.report(meanActive, inFlightTokens, orphanTokens.get());
  }

  private long ms(long nanos) {
    return tally.ms(nanos);
  }

  private void arrive() {
    for (Arrivals.Arrival a : Arrivals.arrivals(workload)) {
      long at = startNanos + a.atNanos();
      long wait = at - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait);
      }
      newLogical(a, at);
    }
    long rest = startNanos + workload.duration().toNanos() - System.nanoTime();
    if (rest > 0) {
      LockSupport.parkNanos(rest);
    }
  }

  private void newLogical(Arrivals.Arrival a, long arrivalNanos) {
    Workload.RequestClass c = a.requestClass();
    Workload.Tenant t = a.tenant();
    Logical l =
        new Logical(
            c,
            t,
            a.phase(),
            arrivalNanos,
            arrivalNanos + c.deadline().toNanos(),
            a.cancelAfterNanos() == Long.MAX_VALUE
                ? Long.MAX_VALUE
                : arrivalNanos + a.cancelAfterNanos(),
            Arrivals.body(a.promptTokens(), a.outputTokens(), a.maxTokens()),
            a.outputTokens());
    l.hangsUpAnyway =
        a.cancelAfterNanos() != Long.MAX_VALUE
            && Arrivals.servedOnArrival(a, rig.upstream().settings()).ending() == Ending.CANCELLED;
    open.add(l);
    tally.arrived(l, arrivalNanos);
    send(l);
  }

  private void send(Logical l) {
    long now = System.nanoTime();
    long untilDeadline = l.deadlineNanos - now;
    long untilCancel = l.cancelAtNanos - now;
    if (untilDeadline <= 0 || untilCancel <= 0) {
      if (l.attempt == 0) {
        tally.unsent();
      }
      finish(l, untilCancel <= 0 ? Ending.CANCELLED : Ending.DEADLINE, null, now);
      return;
    }
    boolean voluntary = untilCancel < untilDeadline;
    l.attemptsSent.incrementAndGet();
    String id = "lg-" + ids.incrementAndGet();
    Attempt a = new Attempt(l, id, now, voluntary);
    a.number = l.attempt;
    HttpRequest.Builder b =
        HttpRequest.post(l.requestClass.path(), "")
            .requestId(id)
            .header("x-sluice-timeout-ms", Long.toString(Math.max(1, untilDeadline / 1_000_000)))
            .routeGrpcInitialMetadata("x-sluice-tenant", l.tenant.name())
            .routeDisabled(!rig.admission())
            .cancelAfter(Duration.ofNanos(Math.min(untilDeadline, untilCancel)));
    b.bodyChunk(l.body);
    String sluiceClass = l.requestClass.sluiceClass();
    if (sluiceClass != null) {
      b.routeGrpcInitialMetadata("x-sluice-class", sluiceClass);
    }
    rig.routeMetadata().forEach(b::routeGrpcInitialMetadata);
    attemptsById.put(id, a);
    if (traced != null) {
      traced.put(id, a);
    }
    inFlight.incrementAndGet();
    tally.attemptSent(l.attempt > 0);
    rig.sendAsync(b.build()).whenComplete((r, e) -> onResult(a, r, e));
  }

  private void onUpstream(String id) {
    Attempt t = traced == null ? null : traced.get(id);
    if (t != null && t.upstreamAtNanos < 0) {
      t.upstreamAtNanos = System.nanoTime();
    }
    Attempt a = attemptsById.get(id);
    if (a == null) {
      return;
    }
    synchronized (a) {
      if (a.done || a.admitted) {
        return;
      }
      a.admitted = true;
      a.admittedAtNanos = System.nanoTime();
      // inside a's lock, so before onResult can mark it done and finish the logical request
      tally.reachedUpstream(a.logical);
    }
    admittedInFlight.incrementAndGet();
    tally.admittedAttempt(System.nanoTime());
  }

  private void onResult(Attempt a, HttpResult r, Throwable e) {
    long now = System.nanoTime();
    attemptsById.remove(a.id);
    boolean wasAdmitted;
    synchronized (a) {
      a.done = true;
      wasAdmitted = a.admitted;
    }
    inFlight.decrementAndGet();
    if (wasAdmitted) {
      admittedInFlight.decrementAndGet();
    }
    Logical l = a.logical;
    a.endNanos = now;
    a.ending = e != null || r == null ? "error" : r.outcome() + "/" + r.status();
    if (r != null) {
      r.timeToFirstByte().ifPresent(d -> a.ttfbNanos = d.toNanos());
      l.lastHeaders = r.headers();
      l.lastUpstreamRequest = r.upstreamRequest();
    }
    long admittedAt = a.admittedAtNanos;
    l.tries.add(
        new Try(
            ms(a.startNanos),
            wasAdmitted && admittedAt >= 0 ? ms(admittedAt) : -1,
            ms(now),
            r == null ? 0 : r.status()));
    if (e != null || r == null) {
      finish(l, Ending.ERROR, "exception " + (e == null ? "null" : e.getClass().getName()), now);
      return;
    }
    Optional<Duration> ttfb = r.timeToFirstByte();
    switch (r.outcome()) {
      case CLIENT_CANCELLED -> {
        boolean started = ttfb.isPresent() && r.status() == 200;
        tally.leftMidway(a, l);
        finish(l, a.voluntary ? Ending.CANCELLED : Ending.DEADLINE, started ? "mid" : null, now);
      }
      case UPSTREAM_RESPONSE, LOCAL_REPLY -> {
        int status = r.status();
        if (status == 200 && r.outcome() == HttpResult.Outcome.UPSTREAM_RESPONSE) {
          long attemptTtft = ttfb.orElse(r.total()).toNanos();
          long fromArrival = (a.startNanos - l.arrivalNanos) + attemptTtft;
          l.ttftNanos = fromArrival;
          tally.recordTtft(
              l.requestClass.name(), a.startNanos + attemptTtft, attemptTtft, fromArrival);
          finish(l, Ending.COMPLETED, null, now);
        } else if (status == 429 || status == 503) {
          onRefused(a, r, now);
        } else {
          finish(l, Ending.ERROR, status + " " + r.responseCodeDetails(), now);
        }
      }
      case DOWNSTREAM_RESET -> finish(l, Ending.ERROR, "downstream_reset", now);
    }
  }

  private void onRefused(Attempt a, HttpResult r, long now) {
    Logical l = a.logical;
    String reason =
        r.header("x-sluice-reason")
            .orElse(
                r.outcome() == HttpResult.Outcome.UPSTREAM_RESPONSE
                    ? "upstream_" + r.status()
                    : r.status() + "_" + r.responseCodeDetails());
    Optional<String> retryAfter = r.header("retry-after");
    long retryNanos = tally.refused(reason, r.total(), retryAfter, now);
    if (retryNanos >= 0
        && l.attempt < workload.maxRetries()
        && l.deadlineNanos - (now + retryNanos) > 0
        && l.cancelAtNanos - (now + retryNanos) > 0) {
      l.attempt++; // counted as a retry when it is sent (a late timer may find it expired)
      timers.schedule(() -> send(l), retryNanos, TimeUnit.NANOSECONDS);
      return;
    }
    finish(l, Ending.REFUSED, reason, now);
  }

  private void finish(Logical l, Ending ending, @Nullable String detail, long now) {
    tally.finished(l, ending, detail, now);
    open.remove(l);
    tell(l, ending.name().toLowerCase(Locale.ROOT), detail == null ? "" : detail, now);
  }

  /** Tells {@link #outcomes} how {@code l} ended, once. */
  private void tell(Logical l, String ending, String detail, long now) {
    if (!l.told.compareAndSet(false, true)) {
      return;
    }
    long upstreamAt = tally.upstreamAtMs(l);
    outcomes.accept(
        new Outcome(
            l.requestClass.name(),
            l.tenant.name(),
            l.phaseIndex,
            ms(l.arrivalNanos),
            upstreamAt,
            ms(now),
            ending,
            detail,
            l.attemptsSent.get(),
            ending.equals("completed") ? l.ttftNanos / 1_000_000 : -1,
            l.outputTokens,
            l.lastHeaders,
            l.lastUpstreamRequest,
            List.copyOf(l.tries)));
  }

  private void sample() {
    int s = tally.second(System.nanoTime()) - 1; // the second that just ended
    if (s < 0) {
      return;
    }
    long queued = Math.max(0, inFlight.get() - admittedInFlight.get());
    int active = rig.upstream().active();
    progress.accept(tally.sample(s, queued, active));
  }
}
