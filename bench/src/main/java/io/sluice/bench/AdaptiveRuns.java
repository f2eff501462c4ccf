package io.sluice.bench;

import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.admission.PoolState;
import io.sluice.emulator.FilterConfig;
import io.sluice.harness.LoadGenerator;
import io.sluice.harness.Rig;
import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import io.sluice.upstream.SimulatedLlmUpstream;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The rig of the bench scenarios ({@code knee}, {@code throttle}): one Sluice server (its own
 * housekeeping ticks the adaptive limit every 100 ms), one emulated Envoy with a STREAMED response
 * body (so Sluice sees the first token), one simulated upstream; the pool's effective limit, the
 * upstream's concurrency and its throttled answers sampled every 100 ms.
 */
final class AdaptiveRuns {
  private AdaptiveRuns() {}

  /** The pool of the bench policies. */
  static final String POOL = "llm";

  /** Work units per request slot: more than any request here, so the slots are what binds. */
  static final long WORK_PER_SLOT = 2000;

  /**
   * One run's policy: {@code maxRequests} slots (capacity {@link #WORK_PER_SLOT} each), adaptive
   * between {@code floor} slots and that ceiling when {@code floor} is above 0 (the controller's
   * other settings at their defaults unless {@code extraAdaptive} adds some, e.g. {@code "interval:
   * 1s"}).
   */
  static String policy(
      int maxRequests, int floor, String extraAdaptive, String classesYaml, long holdMillis) {
    String base =
        Policies.policy(
            maxRequests * WORK_PER_SLOT, maxRequests, holdMillis, classesYaml, "interactive");
    if (floor <= 0) {
      return base;
    }
    String adaptive =
        String.format(
            Locale.ROOT,
            "    defaultServiceTime: 2s\n"
                + "    adaptive: {enabled: true, minRequests: %d, minCapacity: %d%s}\n",
            floor,
            floor * WORK_PER_SLOT,
            extraAdaptive.isBlank() ? "" : ", " + extraAdaptive);
    String out = base.replace("    defaultServiceTime: 2s\n", adaptive);
    if (out.equals(base)) {
      throw new IllegalStateException("bench policy changed shape; update AdaptiveRuns.policy");
    }
    return out;
  }

  /** One 100 ms sample. */
  record Sample(
      double seconds,
      int upstreamActive,
      int limitRequests,
      int requestsInFlight,
      boolean paused,
      long upstreamThrottled,
      double lastRatio,
      double ttftBaselineMillis,
      double tpotBaselineMillis,
      String cause) {}

  /** Something done to the upstream at a time of the run (an outage starting or ending). */
  record Action(double atSeconds, Consumer<SimulatedLlmUpstream> what) {}

  /** What one run measured besides the load generator's report. */
  record Result(
      String name,
      boolean adaptive,
      int ceiling,
      RunReport report,
      List<Sample> samples,
      double skipSeconds,
      double meanActiveAfterSkip,
      int peakActiveAfterSkip,
      long upstreamThrottled,
      long adaptiveOverloads,
      Map<String, Long> limitChanges) {

    /** Samples within [from, to) seconds. */
    List<Sample> between(double from, double to) {
      return samples.stream().filter(s -> s.seconds() >= from && s.seconds() < to).toList();
    }

    /** Mean effective request limit of the samples within [from, to). */
    double meanLimit(double from, double to) {
      return between(from, to).stream()
          .mapToInt(Sample::limitRequests)
          .average()
          .orElse(Double.NaN);
    }

    /** The p-th percentile (0..100) of the sampled upstream concurrency within [from, to). */
    double activePercentile(double from, double to, double p) {
      int[] v = between(from, to).stream().mapToInt(Sample::upstreamActive).toArray();
      if (v.length == 0) {
        return Double.NaN;
      }
      Arrays.sort(v);
      int i = (int) Math.ceil(p / 100.0 * v.length) - 1;
      return v[Math.max(0, Math.min(v.length - 1, i))];
    }

    /** Useful tokens (prompt + answer of completions before the deadline) per arrival second. */
    double usefulTokensPerSecond() {
      return report.arrivalSeconds() <= 0 ? 0 : report.tokens().useful() / report.arrivalSeconds();
    }

    long errors504() {
      return report.outcomes().errors().entrySet().stream()
          .filter(e -> e.getKey().startsWith("504"))
          .mapToLong(Map.Entry::getValue)
          .sum();
    }
  }

  /**
   * Runs {@code w} against a fresh server with {@code yaml} and a fresh upstream ({@code setup}
   * applied before the first arrival, {@code actions} at their times); the upstream's exact mean
   * and peak concurrency are measured from {@code skipSeconds} to the end of the arrivals.
   */
  static Result run(
      String name,
      String yaml,
      int ceiling,
      Workload w,
      SimulatedLlmUpstream.Settings upstream,
      long holdMillis,
      Consumer<SimulatedLlmUpstream> setup,
      List<Action> actions,
      double skipSeconds,
      PrintStream o,
      boolean quiet)
      throws Exception {
    return run(
        name,
        yaml,
        ceiling,
        w,
        upstream,
        holdMillis,
        setup,
        actions,
        skipSeconds,
        o,
        quiet,
        r -> {},
        s -> {});
  }

  /**
   * As above, and {@code outcomes} is told how each request ended (see {@link LoadGenerator});
   * {@code atEnd} sees the server after the last request, before it stops (e.g. its metrics).
   */
  static Result run(
      String name,
      String yaml,
      int ceiling,
      Workload w,
      SimulatedLlmUpstream.Settings upstream,
      long holdMillis,
      Consumer<SimulatedLlmUpstream> setup,
      List<Action> actions,
      double skipSeconds,
      PrintStream o,
      boolean quiet,
      Consumer<LoadGenerator.Outcome> outcomes,
      Consumer<SluiceServer> atEnd)
      throws Exception {
    return run(
        name,
        yaml,
        ceiling,
        w,
        upstream,
        holdMillis,
        setup,
        actions,
        skipSeconds,
        o,
        quiet,
        outcomes,
        atEnd,
        FilterConfig.BodyMode.STREAMED);
  }

  /**
   * As above with the emulated filter's {@code response_body_mode} {@code responseBody} ({@code
   * NONE}: Sluice sees no first token and no response end; only statuses reach the limit).
   */
  static Result run(
      String name,
      String yaml,
      int ceiling,
      Workload w,
      SimulatedLlmUpstream.Settings upstream,
      long holdMillis,
      Consumer<SimulatedLlmUpstream> setup,
      List<Action> actions,
      double skipSeconds,
      PrintStream o,
      boolean quiet,
      Consumer<LoadGenerator.Outcome> outcomes,
      Consumer<SluiceServer> atEnd,
      FilterConfig.BodyMode responseBody)
      throws Exception {
    SluiceServer server = SluiceServer.start(ConfigLoader.parse(yaml));
    ScheduledExecutorService timers = Executors.newScheduledThreadPool(1);
    Rig rig = null;
    try {
      PoolState pool = server.runtime().controller().pool(POOL);
      boolean adaptive = Objects.requireNonNull(pool, POOL).configuredPolicy().adaptive().enabled();
      FilterConfig filter =
          Rig.benchFilter()
              .maxMessageTimeout(Duration.ofMillis(holdMillis))
              .responseBodyMode(responseBody)
              .build();
      rig = Rig.extProc(name, "127.0.0.1:" + server.grpcPort(), filter, upstream, Map.of());
      SimulatedLlmUpstream up = rig.upstream();
      setup.accept(up);
      List<Sample> samples = Collections.synchronizedList(new ArrayList<>());
      long start = System.nanoTime();
      double[] meanAfter = {Double.NaN};
      int[] peakAfter = {0};
      var sampler =
          timers.scheduleAtFixedRate(
              () -> {
                long now = System.nanoTime();
                AdaptiveLimit a = pool.adaptive();
                var snap = pool.snapshot(now);
                AdaptiveLimit.Snapshot l = a == null ? null : a.snapshot(now);
                samples.add(
                    new Sample(
                        (now - start) / 1e9,
                        up.active(),
                        pool.policy().maxRequests(),
                        snap.requestsInFlight(),
                        a != null && a.paused(now),
                        up.throttledAnswers(),
                        l == null ? Double.NaN : l.lastRatio(),
                        l == null ? Double.NaN : l.ttftBaselineNanos() / 1e6,
                        l == null ? Double.NaN : l.tpotBaselineNanos() / 1e6,
                        l == null ? "" : l.cause().label()));
              },
              0,
              100,
              TimeUnit.MILLISECONDS);
      var unusedReset =
          timers.schedule(up::resetConcurrency, (long) (skipSeconds * 1000), TimeUnit.MILLISECONDS);
      var unusedMean =
          timers.schedule(
              () -> {
                meanAfter[0] = up.meanActive();
                peakAfter[0] = up.peakActive();
              },
              w.duration().toMillis(),
              TimeUnit.MILLISECONDS);
      for (Action act : actions) {
        var unusedAct =
            timers.schedule(
                () -> act.what().accept(up),
                (long) (act.atSeconds() * 1000),
                TimeUnit.MILLISECONDS);
      }
      RunReport report =
          new LoadGenerator(w)
              .run(
                  rig,
                  p -> {
                    if (!quiet) {
                      o.println(progress(name, p, pool));
                    }
                  },
                  outcomes);
      sampler.cancel(false);
      atEnd.accept(server);
      AdaptiveLimit a = pool.adaptive();
      Map<String, Long> changes = new java.util.LinkedHashMap<>();
      if (a != null) {
        for (AdaptiveLimit.Cause c : AdaptiveLimit.Cause.values()) {
          if (a.changes(c) > 0) {
            changes.put(c.label(), a.changes(c));
          }
        }
      }
      List<Sample> copy;
      synchronized (samples) {
        copy = List.copyOf(samples);
      }
      return new Result(
          name,
          adaptive,
          ceiling,
          report,
          copy,
          skipSeconds,
          meanAfter[0],
          peakAfter[0],
          up.throttledAnswers(),
          a == null ? 0 : a.overloads(),
          changes);
    } finally {
      timers.shutdownNow();
      if (rig != null) {
        rig.close();
      }
      server.close();
    }
  }

  private static String progress(String name, LoadGenerator.Progress p, PoolState pool) {
    return String.format(
        Locale.ROOT,
        "[%3ds] %s: offered %5d admitted %5d refused %5d waiting %4d | goodput %5d | refused"
            + " attempts %5d | limit %2d | upstream active %2d",
        p.second(),
        name,
        p.offered(),
        p.admitted(),
        p.refused(),
        p.waiting(),
        p.completed(),
        p.refusedAttempts(),
        pool.policy().maxRequests(),
        p.upstreamActive());
  }

  /**
   * Every change of the adaptive limit seen by the samples: when, from and to, its cause, the
   * latency ratio of the last interval (recent median ÷ no-load baseline, the larger of TTFT's and
   * TPOT's), the baselines, and the upstream's concurrency then.
   */
  static String limitChanges(Result r) {
    StringBuilder b =
        new StringBuilder(
            r.name()
                + ", changes of the limit:\n\n| time | limit | cause | last latency ratio | TTFT"
                + " baseline | TPOT baseline | upstream active |\n");
    b.append("|---|---|---|---|---|---|---|\n");
    Sample prev = null;
    for (Sample s : r.samples()) {
      if (prev != null && s.limitRequests() != prev.limitRequests()) {
        b.append(
            String.format(
                Locale.ROOT,
                "| %.1f s | %d -> %d | %s | %.2f | %.1f ms | %.2f ms | %d |\n",
                s.seconds(),
                prev.limitRequests(),
                s.limitRequests(),
                s.cause(),
                s.lastRatio(),
                s.ttftBaselineMillis(),
                s.tpotBaselineMillis(),
                prev.upstreamActive()));
      }
      prev = s;
    }
    return b.toString();
  }

  /** Refused attempts by reason, and the errors, with one column per run (as Tables). */
  static String refusals(List<Result> results) {
    return Tables.rejections(results.stream().map(Result::report).toList());
  }

  /** The upstream's throttled answers (429/503) per second, from the 100 ms samples. */
  static double[][] throttledPerSecond(Result r) {
    List<Sample> s = r.samples();
    int n = s.isEmpty() ? 0 : (int) Math.ceil(s.get(s.size() - 1).seconds());
    double[] x = new double[n];
    double[] y = new double[n];
    long before = 0;
    int k = 0;
    for (int sec = 0; sec < n; sec++) {
      long last = before;
      while (k < s.size() && s.get(k).seconds() < sec + 1) {
        last = s.get(k).upstreamThrottled();
        k++;
      }
      x[sec] = sec + 0.5;
      y[sec] = last - before;
      before = last;
    }
    return new double[][] {x, y};
  }
}
