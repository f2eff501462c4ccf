package io.sluice.bench;

import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.share.ShareCoordinator;
import io.sluice.emulator.FilterConfig;
import io.sluice.harness.LeastRequestBalancer;
import io.sluice.harness.LoadGenerator;
import io.sluice.harness.Rig;
import io.sluice.harness.RunReport;
import io.sluice.harness.Workload;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The measurement: one policy on one and on three Sluice replicas sharing one Redis, behind an
 * emulated Envoy that spreads ext_proc streams by {@code LEAST_REQUEST} ({@link
 * LeastRequestBalancer}), in front of one simulated upstream with K batch slots, at 2x its
 * capacity; then three replicas of which one stops half-way (a graceful drain, then its leases are
 * given up) and three of which one crashes half-way ({@link SluiceServer#halt()}: its lease stays
 * until {@code replicas.leaseTtl}). Same arrivals in every run, one run after the other.
 *
 * <pre>java -jar bench/target/sluice-bench.jar replicas [--duration 30]</pre>
 */
@Command(
    name = "replicas",
    description =
        "One policy on 1 and on 3 Sluice replicas (one Redis, LEAST_REQUEST Envoy, one upstream)"
            + " at 2x capacity, then 3 with one stopped and 3 with one crashed half-way.")
final class Replicas implements Callable<Integer> {
  @Option(
      names = "--duration",
      defaultValue = "30",
      description = "seconds of arrivals per run, 10..600 (default: ${DEFAULT-VALUE})")
  int durationSeconds = 30;

  @Option(
      names = "--load",
      defaultValue = "2.0",
      description =
          "offered load as a multiple of the upstream's capacity (default: ${DEFAULT-VALUE})")
  double load = 2.0;

  @Option(
      names = "--lend",
      defaultValue = "false",
      description =
          "lend the class reserves (interactive lendableShare 0.5, batch 0.3) instead of"
              + " guaranteeing them whole")
  boolean lend;

  @Option(
      names = "--renew-interval",
      defaultValue = "",
      description =
          "replicas.renewInterval of every replica, e.g. 100ms (default: the server's, 200ms)")
  String renewInterval = "";

  @Option(
      names = "--redis",
      defaultValue = "127.0.0.1:6379",
      description = "the Redis all replicas share, host:port (default: ${DEFAULT-VALUE})")
  String redis = "127.0.0.1:6379";

  @Option(
      names = "--runs",
      split = ",",
      defaultValue = "one,three,three-stop,three-crash",
      description = "which runs, in order (default: ${DEFAULT-VALUE})")
  List<String> runs = List.of("one", "three", "three-stop", "three-crash");

  @Option(
      names = "--repeat",
      defaultValue = "1",
      description =
          "run the whole sequence this many times, 1..5, interleaved; the goodput target compares"
              + " the means (default: ${DEFAULT-VALUE})")
  int repeat = 1;

  @Option(
      names = "--out",
      defaultValue = "target/sluice-bench-replicas",
      description = "directory for the charts and the markdown table (default: ${DEFAULT-VALUE})")
  Path out = Path.of("target/sluice-bench-replicas");

  @Option(names = "--quiet", description = "no live progress lines")
  boolean quiet;

  /** How a run ends one of its replicas half-way. */
  enum Kill {
    NONE,
    /** Taken out of the balancer, then {@code shutdown(grace)}: drain, then leases given up. */
    STOP,
    /** Taken out of the balancer, then {@link SluiceServer#halt()}: streams cut, lease kept. */
    CRASH
  }

  record RunSpec(String name, int replicas, Kill kill) {
    /** The same run, numbered (the {@code k}th of a repeated sequence). */
    RunSpec numbered(int k) {
      return new RunSpec(name + " #" + k, replicas, kill);
    }

    static RunSpec named(String n) {
      return switch (n) {
        case "one" -> new RunSpec("1 replica", 1, Kill.NONE);
        case "three" -> new RunSpec("3 replicas", 3, Kill.NONE);
        case "three-stop" -> new RunSpec("3, one stopped", 3, Kill.STOP);
        case "three-crash" -> new RunSpec("3, one crashed", 3, Kill.CRASH);
        default ->
            throw new IllegalArgumentException(
                "--runs: "
                    + n
                    + " (expected: one of one, three, three-stop, three-crash, comma-separated)");
      };
    }
  }

  /** One 100 ms sample: upstream concurrency, each replica's granted requests and open streams. */
  record Sample(
      double seconds,
      int upstreamActive,
      int[] grantedRequests,
      long[] grantedWork,
      int[] requestsInFlight,
      long[] workInFlight) {}

  /** What one run measured, besides the load generator's report. */
  record Result(
      RunSpec spec,
      RunReport report,
      int upstreamPeak,
      double upstreamMean,
      long[] sentPerReplica,
      int maxGrantedRequestsSum,
      long maxGrantedWorkSum,
      long leakedRequests,
      long leakedWork,
      double killAtSeconds,
      double drainedAfterSeconds,
      double sharesWholeAfterSeconds,
      List<Sample> samples) {}

  static final int K = Scenario.UPSTREAM.batchSlots();
  static final long CAPACITY = K * Scenario.CHAT_WORK;
  static final long HOLD_MILLIS = 10_000;
  static final Duration BATCH_DEADLINE = Duration.ofSeconds(15);

  static final String CLASSES =
      """
        interactive: {rank: 0, reservedShare: 0.7, borrow: true, deadline: 8s, maxQueueWait: 2s,
                      defaultOutputTokens: 256, maxOutputTokens: 4096}
        batch:       {rank: 1, reservedShare: 0.3, borrow: true, deadline: 15s, maxQueueWait: 8s,
                      defaultOutputTokens: 256, maxOutputTokens: 4096}
      """;

  static List<Workload.RequestClass> classes() {
    return List.of(
        Scenario.chat("interactive", "interactive", 0.5),
        Workload.RequestClass.of(
            "batch",
            "batch",
            "/v1/chat/completions",
            0.5,
            300,
            700,
            40,
            160,
            BATCH_DEADLINE,
            Duration.ofSeconds(8)));
  }

  static Workload workload(int seconds, double multiple) {
    List<Workload.RequestClass> classes = classes();
    double cap = Scenario.capacity(classes);
    List<Workload.Tenant> tenants =
        List.of(
            new Workload.Tenant("acme", 1),
            new Workload.Tenant("globex", 1),
            new Workload.Tenant("initech", 1),
            new Workload.Tenant("umbrella", 1));
    return Workload.of(
        classes,
        tenants,
        List.of(
            new Workload.Phase(
                String.format(Locale.ROOT, "%.1fx", multiple),
                Duration.ofSeconds(seconds),
                multiple * cap)),
        0,
        Duration.ZERO,
        Duration.ZERO,
        2,
        BATCH_DEADLINE.plusSeconds(1),
        42);
  }

  /** The policy of every run: the Redis store, a key prefix of the run's own. */
  static String policy(String redis, String keyPrefix) {
    return policy(redis, keyPrefix, false);
  }

  /** With {@code lend}, the class reserves are mostly lendable (as in the classes scenario). */
  static String policy(String redis, String keyPrefix, boolean lend) {
    String classes =
        lend
            ? CLASSES
                .replace("reservedShare: 0.7,", "reservedShare: 0.7, lendableShare: 0.5,")
                .replace("reservedShare: 0.3,", "reservedShare: 0.3, lendableShare: 0.3,")
            : CLASSES;
    String base = Policies.policy(CAPACITY, K, HOLD_MILLIS, classes, "interactive");
    String shared =
        base.replace(
            "rateLimit: {enabled: false}\n",
            "rateLimit: {enabled: false, env: {BACKEND_TYPE: redis, REDIS_URL: \""
                + redis
                + "\"}}\nquotas: {keyPrefix: "
                + keyPrefix
                + "}\n");
    if (shared.equals(base)) {
      throw new IllegalStateException("bench policy changed shape; update Replicas.policy");
    }
    return shared;
  }

  @Override
  public Integer call() throws Exception {
    if (repeat < 1 || repeat > 5) {
      throw new picocli.CommandLine.ParameterException(
          new picocli.CommandLine(this), "--repeat: " + repeat + " (expected: 1..5)");
    }
    if (durationSeconds < 10 || durationSeconds > 600) {
      throw new picocli.CommandLine.ParameterException(
          new picocli.CommandLine(this), "--duration: " + durationSeconds + " (expected: 10..600)");
    }
    PrintStream o = System.out;
    if (!BenchNet.reachable(redis)) {
      o.println("replicas: no Redis at " + redis + " (start redis-server, or pass --redis)");
      return 1;
    }
    Workload w = workload(durationSeconds, load);
    double cap = Scenario.capacity(w.classes());
    o.printf(
        Locale.ROOT,
        "replicas: simulated LLM (K=%d slots, capacity ~%.1f req/s), offered %.1fx for %d s per"
            + " run (interactive and batch, half each), pool capacity %d work units, maxRequests"
            + " %d, Redis %s; Envoy LEAST_REQUEST (two choices) over the replicas.%n",
        K,
        cap,
        load,
        durationSeconds,
        CAPACITY,
        K,
        redis);
    List<RunSpec> specs = new ArrayList<>();
    for (int k = 1; k <= repeat; k++) {
      for (String n : runs) {
        RunSpec spec = RunSpec.named(n.trim());
        specs.add(repeat == 1 ? spec : spec.numbered(k));
      }
    }
    List<Result> results = new ArrayList<>();
    for (RunSpec spec : specs) {
      o.printf(Locale.ROOT, "%n== run: %s ==%n", spec.name());
      results.add(runOne(spec, w, o));
    }
    String md = ReplicasReport.report(results, cap);
    o.println();
    o.println(md);
    Files.createDirectories(out);
    Files.writeString(out.resolve("replicas.md"), md, StandardCharsets.UTF_8);
    o.println(
        "chart: "
            + ReplicasReport.concurrencyChart(results, out.resolve("replicas-concurrency.png")));
    if (results.stream().anyMatch(r -> r.spec().kill() != Kill.NONE)) {
      o.println(
          "chart: " + ReplicasReport.sharesChart(results, out.resolve("replicas-shares.png")));
    }
    return ReplicasReport.verdicts(results).stream().allMatch(Verdict::pass) ? 0 : 1;
  }

  private Result runOne(RunSpec spec, Workload w, PrintStream o) throws Exception {
    String prefix = "sluice_bench_replicas_" + UUID.randomUUID().toString().substring(0, 8) + "_";
    String yaml = policy(redis, prefix, lend);
    if (!renewInterval.isEmpty()) {
      yaml += "replicas: {renewInterval: " + renewInterval + "}\n";
    }
    List<SluiceServer> servers = new ArrayList<>();
    ScheduledExecutorService timers = Executors.newScheduledThreadPool(2);
    Rig rig = null;
    try {
      List<String> targets = new ArrayList<>();
      for (int i = 0; i < spec.replicas(); i++) {
        SluiceServer s = SluiceServer.start(ConfigLoader.parse(yaml));
        servers.add(s);
        targets.add("127.0.0.1:" + s.grpcPort());
      }
      FilterConfig filter =
          Rig.benchFilter().maxMessageTimeout(Duration.ofMillis(HOLD_MILLIS)).build();
      rig = Rig.extProcReplicas(spec.name(), targets, filter, Scenario.UPSTREAM, Map.of());
      Rig r = rig;
      List<Sample> samples = java.util.Collections.synchronizedList(new ArrayList<>());
      long start = System.nanoTime();
      double[] mean = {Double.NaN};
      double[] killAt = {Double.NaN};
      double[] drainedAt = {Double.NaN};
      double[] wholeAt = {Double.NaN};
      AtomicIntegerArray down = new AtomicIntegerArray(spec.replicas()); // 1: out of the sampling
      int victim = spec.replicas() - 1;
      var sampler =
          timers.scheduleAtFixedRate(
              () -> {
                double t = (System.nanoTime() - start) / 1e9;
                int[] req = new int[servers.size()];
                long[] work = new long[servers.size()];
                int[] reqIn = new int[servers.size()];
                long[] workIn = new long[servers.size()];
                int sumReq = 0;
                long sumWork = 0;
                for (int i = 0; i < servers.size(); i++) {
                  if (down.get(i) == 1) {
                    continue;
                  }
                  var snap =
                      Objects.requireNonNull(servers.get(i).runtime().controller().pool("llm"))
                          .snapshot(0);
                  reqIn[i] = snap.requestsInFlight();
                  workIn[i] = snap.workInFlight();
                  ShareCoordinator.Status st = servers.get(i).replicaShares().get("llm");
                  if (st != null) {
                    req[i] = st.grantedRequests();
                    work[i] = st.grantedWork();
                  }
                  sumReq += req[i];
                  sumWork += work[i];
                }
                samples.add(new Sample(t, r.upstream().active(), req, work, reqIn, workIn));
                synchronized (wholeAt) {
                  if (!Double.isNaN(killAt[0])
                      && Double.isNaN(wholeAt[0])
                      && sumReq == K
                      && sumWork == CAPACITY) {
                    wholeAt[0] = t - killAt[0];
                  }
                }
              },
              0,
              100,
              TimeUnit.MILLISECONDS);
      var unusedMean =
          timers.schedule(
              () -> {
                mean[0] = r.upstream().meanActive();
              },
              w.duration().toMillis(),
              TimeUnit.MILLISECONDS);
      if (spec.kill() != Kill.NONE) {
        var unusedKill =
            timers.schedule(
                () -> {
                  SluiceServer s = servers.get(victim);
                  r.balancer().eject(victim);
                  synchronized (wholeAt) {
                    killAt[0] = (System.nanoTime() - start) / 1e9;
                  }
                  if (spec.kill() == Kill.CRASH) {
                    down.set(victim, 1);
                    s.halt();
                  } else {
                    // SIGTERM: drain up to 10 s (its share shrinks as it drains), then leave
                    s.shutdown(Duration.ofSeconds(10), "bench: stop one replica");
                    down.set(victim, 1);
                  }
                  drainedAt[0] = (System.nanoTime() - start) / 1e9 - killAt[0];
                },
                w.duration().toMillis() / 2,
                TimeUnit.MILLISECONDS);
      }
      rig.upstream().resetConcurrency();
      RunReport report =
          new LoadGenerator(w)
              .run(
                  rig,
                  p -> {
                    if (!quiet) {
                      o.println(ReplicasReport.progress(p, r, servers, down));
                    }
                  });
      sampler.cancel(false);
      int peak = rig.upstream().peakActive();
      long[] sent = new long[spec.replicas()];
      for (int i = 0; i < sent.length; i++) {
        sent[i] = rig.balancer().sent(i);
      }
      int maxReq = 0;
      long maxWork = 0;
      synchronized (samples) {
        for (Sample s : samples) {
          int sr = 0;
          long sw = 0;
          for (int i = 0; i < s.grantedRequests().length; i++) {
            sr += s.grantedRequests()[i];
            sw += s.grantedWork()[i];
          }
          maxReq = Math.max(maxReq, sr);
          maxWork = Math.max(maxWork, sw);
        }
      }
      long[] leaked = leaked(servers);
      double whole;
      synchronized (wholeAt) {
        whole = wholeAt[0];
      }
      return new Result(
          spec,
          report,
          peak,
          mean[0],
          sent,
          maxReq,
          maxWork,
          leaked[0],
          leaked[1],
          killAt[0],
          drainedAt[0],
          whole,
          List.copyOf(samples));
    } finally {
      timers.shutdownNow();
      if (rig != null) {
        rig.close();
      }
      servers.forEach(SluiceServer::close);
    }
  }

  /** Requests and work still in flight on any replica's pool, waiting up to 5 s for them to end. */
  private static long[] leaked(List<SluiceServer> servers) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (true) {
      long req = 0;
      long work = 0;
      for (SluiceServer s : servers) {
        var p = Objects.requireNonNull(s.runtime().controller().pool("llm")).snapshot(0);
        req += p.requestsInFlight();
        work += p.workInFlight();
      }
      if ((req == 0 && work == 0) || System.nanoTime() - deadline > 0) {
        return new long[] {req, work};
      }
      Thread.sleep(100);
    }
  }
}
