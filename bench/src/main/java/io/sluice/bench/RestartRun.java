package io.sluice.bench;

import static io.sluice.bench.Restart.HOLD_MILLIS;
import static io.sluice.bench.Restart.N;
import static io.sluice.bench.Restart.freePort;
import static io.sluice.bench.Restart.limitOf;
import static io.sluice.bench.Restart.policy;
import static io.sluice.bench.Restart.reserveOf;
import static io.sluice.bench.Restart.sleep;
import static io.sluice.bench.Restart.sum;
import static io.sluice.bench.Restart.withLimit;
import static io.sluice.bench.RestartReport.fmt;

import io.sluice.bench.Restart.How;
import io.sluice.bench.Restart.Learned;
import io.sluice.bench.Restart.Replaced;
import io.sluice.bench.Restart.Result;
import io.sluice.bench.Restart.RunSpec;
import io.sluice.bench.Restart.Sample;
import io.sluice.bench.Restart.Scope;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.share.ShareCoordinator;
import io.sluice.core.time.Ticker;
import io.sluice.emulator.FilterConfig;
import io.sluice.harness.LeastRequestBalancer;
import io.sluice.harness.LoadGenerator;
import io.sluice.harness.Rig;
import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import java.io.IOException;
import java.io.PrintStream;
import java.net.http.HttpClient;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;

/**
 * One run of the restart bench: the deployment under test (three replicas on Redis behind a
 * least-request balancer, with slots for their replacements), the load, the samples of what each
 * replica learned, and the restart played half-way.
 */
final class RestartRun {
  private final Restart cmd;

  RestartRun(Restart cmd) {
    this.cmd = cmd;
  }

  /** The deployment under test: servers by balancer slot (N originals, then N replacements). */
  private final class Deployment {
    final AtomicReferenceArray<@Nullable SluiceServer> servers = new AtomicReferenceArray<>(2 * N);
    final int[] ports = new int[2 * N];
    final String prefix;
    volatile long t0 = System.nanoTime();
    final List<String> events = Collections.synchronizedList(new ArrayList<>());
    @Nullable Rig rig;

    /** Every replacement of the restart is serving (the live shares can be whole again). */
    volatile boolean replacedAll;

    private int healthy;
    private long noneSinceNanos = -1;
    private long noneTotalNanos;

    Deployment(String prefix) {
      this.prefix = prefix;
    }

    double now() {
      return (System.nanoTime() - t0) / 1e9;
    }

    SluiceServer start(int slot, String podName) throws IOException {
      var cfg = ConfigLoader.parse(policy(cmd.redis, prefix, ports[slot], cmd.floor));
      SluiceServer s =
          SluiceServer.start(
              cfg,
              new SluiceServer.Options(
                  null, Map.of("POD_NAME", podName), Ticker.system(), Clock.systemUTC()));
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (!s.serving() && System.nanoTime() - until < 0) {
        sleep(20);
      }
      servers.set(slot, s);
      return s;
    }

    synchronized void eject(int slot) {
      Rig r = java.util.Objects.requireNonNull(rig);
      if (r.balancer().healthy(slot)) {
        r.balancer().eject(slot);
        if (--healthy == 0) {
          noneSinceNanos = System.nanoTime();
        }
      }
    }

    synchronized void restore(int slot) {
      Rig r = java.util.Objects.requireNonNull(rig);
      if (!r.balancer().healthy(slot)) {
        r.balancer().restore(slot);
        if (healthy++ == 0 && noneSinceNanos >= 0) {
          noneTotalNanos += System.nanoTime() - noneSinceNanos;
          noneSinceNanos = -1;
        }
      }
    }

    synchronized void initHealthy(int n) {
      healthy = n;
    }

    synchronized double noReplicaSeconds() {
      long total = noneTotalNanos;
      if (noneSinceNanos >= 0) {
        total += System.nanoTime() - noneSinceNanos;
      }
      return total / 1e9;
    }

    void event(String text) {
      events.add(String.format(Locale.ROOT, "%6.2f s  %s", now(), text));
    }
  }

  Result run(RunSpec spec, Workload w, PrintStream o) throws Exception {
    String prefix = "sluice_bench_restart_" + UUID.randomUUID().toString().substring(0, 8) + "_";
    ScheduledExecutorService timers = Executors.newScheduledThreadPool(2);
    ExecutorService restarts = Executors.newCachedThreadPool();
    Deployment d = new Deployment(prefix);
    List<Replaced> replaced = Collections.synchronizedList(new ArrayList<>());
    List<Sample> samples = Collections.synchronizedList(new ArrayList<>());
    AtomicReferenceArray<Learned> lastLearned = new AtomicReferenceArray<>(2 * N);
    for (int i = 0; i < 2 * N; i++) {
      d.ports[i] = freePort();
      lastLearned.set(i, Learned.NONE);
    }
    double restartAt = cmd.restartAt();
    int totalSeconds = cmd.warmupSeconds + cmd.durationSeconds;
    int buckets = (totalSeconds + 30) * 10;
    AtomicIntegerArray completed = new AtomicIntegerArray(buckets);
    AtomicIntegerArray errors = new AtomicIntegerArray(buckets);
    AtomicIntegerArray refused = new AtomicIntegerArray(buckets);
    double[] wholeAt = {Double.NaN};
    try {
      List<String> targets = new ArrayList<>();
      for (int i = 0; i < 2 * N; i++) {
        targets.add("127.0.0.1:" + d.ports[i]);
      }
      for (int i = 0; i < N; i++) {
        d.start(i, "sluice-" + i);
      }
      FilterConfig filter =
          Rig.benchFilter().maxMessageTimeout(Duration.ofMillis(HOLD_MILLIS)).build();
      Rig rig = Rig.extProcReplicas(spec.name(), targets, filter, Scenario.UPSTREAM, Map.of());
      d.rig = rig;
      for (int i = N; i < 2 * N; i++) {
        rig.balancer().eject(i); // the replacements' slots: empty until one starts there
      }
      d.initHealthy(N);
      Deployment dep = d;
      dep.t0 = System.nanoTime(); // the clock starts with the arrivals
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(200)).build();
      int[] tick = {0};
      var sampler =
          timers.scheduleAtFixedRate(
              () -> {
                double t = dep.now();
                boolean reserves = tick[0]++ % 5 == 0;
                double[] limits = new double[2 * N];
                int granted = 0;
                int poolLimit = 0;
                int healthy = 0;
                for (int i = 0; i < 2 * N; i++) {
                  limits[i] = Double.NaN;
                  SluiceServer s = dep.servers.get(i);
                  if (s == null || s.draining()) {
                    continue;
                  }
                  if (rig.balancer().healthy(i)) {
                    healthy++;
                  }
                  Learned prev = lastLearned.get(i);
                  double limit = limitOf(s);
                  limits[i] = limit;
                  Learned now =
                      reserves
                          ? withLimit(reserveOf(http, s), limit)
                          : new Learned(limit, prev.reserveTokens(), prev.reserveWarmed());
                  lastLearned.set(i, now);
                  ShareCoordinator.Status st = s.replicaShares().get("llm");
                  if (st != null) {
                    granted += st.grantedRequests();
                  }
                  if (!Double.isNaN(limit)) {
                    poolLimit = Math.max(poolLimit, (int) limit);
                  }
                }
                samples.add(new Sample(t, limits, granted, poolLimit, healthy));
                synchronized (wholeAt) {
                  if (dep.replacedAll
                      && spec.how() == How.HALT
                      && Double.isNaN(wholeAt[0])
                      && poolLimit > 0
                      && granted >= 0.9 * poolLimit) {
                    wholeAt[0] = t - restartAt;
                  }
                }
              },
              0,
              100,
              TimeUnit.MILLISECONDS);
      if (spec.scope() != Scope.NONE) {
        var unused =
            timers.schedule(
                () ->
                    restarts.submit(
                        () -> {
                          restart(spec, dep, restarts, lastLearned, replaced);
                          return null;
                        }),
                Math.round(restartAt * 1000),
                TimeUnit.MILLISECONDS);
      }
      rig.upstream().resetConcurrency();
      RunReport report =
          new LoadGenerator(w)
              .run(
                  rig,
                  p -> {
                    if (!cmd.quiet) {
                      o.println(progress(p, dep, lastLearned));
                    }
                  },
                  oc -> {
                    int b = (int) Math.min(buckets - 1, Math.max(0, dep.now() * 10));
                    switch (oc.ending()) {
                      case "completed" -> completed.incrementAndGet(b);
                      case "error" -> errors.incrementAndGet(b);
                      case "refused" -> refused.incrementAndGet(b);
                      default -> {}
                    }
                  });
      sampler.cancel(false);
      restarts.shutdown();
      restarts.awaitTermination(30, TimeUnit.SECONDS);
      for (String e : List.copyOf(dep.events)) {
        o.println("  " + e);
      }
      double window = cmd.windowSeconds;
      long before = sum(completed, restartAt - window, restartAt);
      long after = sum(completed, restartAt, restartAt + window);
      double[] perSecond = new double[totalSeconds + 10];
      for (int s = 0; s < perSecond.length; s++) {
        perSecond[s] = sum(completed, s, s + 1);
      }
      List<Replaced> rep = new ArrayList<>(replaced);
      rep.sort(java.util.Comparator.comparingInt(Replaced::replica));
      double whole;
      synchronized (wholeAt) {
        whole = wholeAt[0];
      }
      return new Result(
          spec,
          report,
          restartAt,
          window,
          before,
          after,
          sum(errors, restartAt, restartAt + window),
          sum(refused, restartAt, restartAt + window),
          dep.noReplicaSeconds(),
          whole,
          rig.upstream().peakActive(),
          rep,
          List.copyOf(samples),
          perSecond);
    } finally {
      timers.shutdownNow();
      restarts.shutdownNow();
      if (d.rig != null) {
        d.rig.close();
      }
      for (int i = 0; i < 2 * N; i++) {
        SluiceServer s = d.servers.get(i);
        if (s != null) {
          s.close();
        }
      }
    }
  }

  /** Plays the restart of {@code spec} (on its own thread: starts and drains block). */
  private void restart(
      RunSpec spec,
      Deployment d,
      ExecutorService pool,
      AtomicReferenceArray<Learned> last,
      List<Replaced> replaced)
      throws Exception {
    List<Integer> victims =
        spec.scope() == Scope.ONE
            ? List.of(N - 1)
            : java.util.stream.IntStream.range(0, N).boxed().toList();
    d.event("restart: " + spec.name());
    if (spec.scope() == Scope.ROLLING) {
      for (int v : victims) {
        CompletableFuture<Void> old = replaceOne(spec, d, v, pool, last, replaced);
        if (spec.how() == How.HALT) {
          old.join();
        }
      }
      d.replacedAll = true;
      return;
    }
    List<CompletableFuture<Void>> all = new ArrayList<>();
    java.util.concurrent.atomic.AtomicInteger ready =
        new java.util.concurrent.atomic.AtomicInteger();
    for (int v : victims) {
      all.add(
          CompletableFuture.supplyAsync(
                  () -> {
                    try {
                      CompletableFuture<Void> f = replaceOne(spec, d, v, pool, last, replaced);
                      if (ready.incrementAndGet() == victims.size()) {
                        d.replacedAll = true;
                      }
                      return f;
                    } catch (Exception e) {
                      throw new java.util.concurrent.CompletionException(e);
                    }
                  },
                  pool)
              .thenCompose(f -> f));
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
  }

  /**
   * Replaces replica {@code v}; returns when the replacement is ready (drain: the old one's
   * pre-stop and drain go on in the returned stage; halt: the returned stage is done).
   */
  private CompletableFuture<Void> replaceOne(
      RunSpec spec,
      Deployment d,
      int v,
      ExecutorService pool,
      AtomicReferenceArray<Learned> last,
      List<Replaced> replaced)
      throws Exception {
    SluiceServer old = java.util.Objects.requireNonNull(d.servers.get(v));
    Learned before = last.get(v);
    double stoppedAt = d.now();
    if (spec.how() == How.HALT) {
      d.eject(v);
      old.halt();
      d.event("replica " + v + " halted: its streams cut, its leases left in Redis");
      long t = System.nanoTime();
      String name = spec.sameIdentity() ? "sluice-" + v : "sluice-" + v + "-b";
      SluiceServer s = d.start(v, name);
      double startMs = (System.nanoTime() - t) / 1e6;
      d.restore(v);
      double readyAt = d.now();
      d.event(
          String.format(
              Locale.ROOT,
              "replica %d back as %s on the same port after %.0f ms",
              v,
              name,
              startMs));
      record(pool, v, v, s, stoppedAt, readyAt, startMs, before, last, replaced);
      return CompletableFuture.completedFuture(null);
    }
    // drain: the replacement pod starts beside the terminating one
    int slot = N + v;
    long t = System.nanoTime();
    SluiceServer s = d.start(slot, "sluice-" + v + "-r");
    double startMs = (System.nanoTime() - t) / 1e6;
    d.restore(slot);
    double readyAt = d.now();
    d.event(
        String.format(Locale.ROOT, "replacement of replica %d ready after %.0f ms", v, startMs));
    CompletableFuture<Void> stop =
        CompletableFuture.runAsync(
            () -> {
              sleep(
                  Math.max(
                      0, Math.round(cmd.preStopSeconds * 1000 - (d.now() - stoppedAt) * 1000)));
              d.eject(v);
              long s0 = System.nanoTime();
              old.shutdown(Duration.ofSeconds(cmd.graceSeconds), "bench: SIGTERM after preStop");
              d.event(
                  String.format(
                      Locale.ROOT,
                      "replica %d drained and stopped in %.0f ms",
                      v,
                      (System.nanoTime() - s0) / 1e6));
            },
            pool);
    record(pool, v, slot, s, stoppedAt, readyAt, startMs, before, last, replaced);
    return stop;
  }

  private void record(
      ExecutorService pool,
      int v,
      int slot,
      SluiceServer s,
      double stoppedAt,
      double readyAt,
      double startMs,
      Learned before,
      AtomicReferenceArray<Learned> last,
      List<Replaced> replaced) {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(200)).build();
    Learned atReady = withLimit(reserveOf(http, s), limitOf(s));
    last.set(slot, atReady);
    Runnable later =
        () -> {
          sleep(1000);
          Learned l = withLimit(reserveOf(http, s), limitOf(s));
          replaced.add(new Replaced(v, stoppedAt, readyAt, startMs, before, atReady, l));
        };
    try {
      pool.execute(later);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      later.run();
    }
  }

  private String progress(
      LoadGenerator.Progress p, Deployment d, AtomicReferenceArray<Learned> last) {
    StringBuilder b =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "[%3ds] offered %5d admitted %5d refused %5d waiting %4d | goodput %5d |"
                    + " upstream %2d | replicas (limit, reserve):",
                p.second(),
                p.offered(),
                p.admitted(),
                p.refused(),
                p.waiting(),
                p.completed(),
                p.upstreamActive()));
    LeastRequestBalancer lb = java.util.Objects.requireNonNull(d.rig).balancer();
    for (int i = 0; i < 2 * N; i++) {
      SluiceServer s = d.servers.get(i);
      if (s == null) {
        continue;
      }
      Learned l = last.get(i);
      b.append(
          String.format(
              Locale.ROOT,
              " %d:%s%s/%s",
              i,
              lb.healthy(i) ? "" : s.draining() ? "(down)" : "(out)",
              fmt(l.limitRequests()),
              l.reserveWarmed() ? fmt(l.reserveTokens()) : "cold"));
    }
    return b.toString();
  }
}
