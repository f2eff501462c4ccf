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
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Issue 15's "Prove it": one policy on one and on three Sluice replicas sharing one Redis, behind
 * an emulated Envoy that spreads ext_proc streams by {@code LEAST_REQUEST} ({@link
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
        new Workload.RequestClass(
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
    return new Workload(
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
    if (!reachable(redis)) {
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
    String md = report(results, cap);
    o.println();
    o.println(md);
    Files.createDirectories(out);
    Files.writeString(out.resolve("replicas.md"), md, StandardCharsets.UTF_8);
    o.println("chart: " + concurrencyChart(results, out.resolve("replicas-concurrency.png")));
    if (results.stream().anyMatch(r -> r.spec().kill() != Kill.NONE)) {
      o.println("chart: " + sharesChart(results, out.resolve("replicas-shares.png")));
    }
    return verdicts(results).stream().allMatch(Verdict::pass) ? 0 : 1;
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
                  var snap = servers.get(i).runtime().controller().pool("llm").snapshot(0);
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
                      o.println(progress(p, r, servers, down));
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
        var p = s.runtime().controller().pool("llm").snapshot(0);
        req += p.requestsInFlight();
        work += p.workInFlight();
      }
      if ((req == 0 && work == 0) || System.nanoTime() - deadline > 0) {
        return new long[] {req, work};
      }
      Thread.sleep(100);
    }
  }

  private static String progress(
      LoadGenerator.Progress p, Rig rig, List<SluiceServer> servers, AtomicIntegerArray down) {
    StringBuilder b =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "[%3ds] offered %5d admitted %5d refused %5d waiting %4d | goodput %5d | upstream"
                    + " active %2d | shares (requests/work, open streams):",
                p.second(),
                p.offered(),
                p.admitted(),
                p.refused(),
                p.waiting(),
                p.completed(),
                p.upstreamActive()));
    LeastRequestBalancer lb = rig.balancer();
    for (int i = 0; i < servers.size(); i++) {
      if (down.get(i) == 1) {
        b.append(" [down]");
        continue;
      }
      ShareCoordinator.Status st = servers.get(i).replicaShares().get("llm");
      b.append(
          String.format(
              Locale.ROOT,
              " [%d/%d, %d]",
              st == null ? 0 : st.grantedRequests(),
              st == null ? 0 : st.grantedWork(),
              lb.open(i)));
    }
    return b.toString();
  }

  /** One target and whether it holds. */
  record Verdict(String target, String measured, boolean pass) {
    String line() {
      return (pass ? "PASS " : "FAIL ") + target + ": " + measured;
    }
  }

  static List<Verdict> verdicts(List<Result> results) {
    List<Verdict> v = new ArrayList<>();
    for (Result r : results) {
      if (r.spec().replicas() > 1) {
        v.add(
            new Verdict(
                r.spec().name() + ": upstream peak concurrency <= maxRequests " + K + " + 0",
                "peak " + r.upstreamPeak(),
                r.upstreamPeak() <= K));
      }
    }
    double one = meanGoodput(results, 1, Kill.NONE);
    double three = meanGoodput(results, 3, Kill.NONE);
    if (!Double.isNaN(one) && !Double.isNaN(three)) {
      long n1 = count(results, 1, Kill.NONE);
      long n3 = count(results, 3, Kill.NONE);
      double ratio = one <= 0 ? 0 : three / one;
      v.add(
          new Verdict(
              "3 replicas: goodput >= 95% of the single replica's",
              String.format(
                  Locale.ROOT,
                  "%.2f/s vs %.2f/s = %.1f%%%s",
                  three,
                  one,
                  100 * ratio,
                  n1 > 1 || n3 > 1
                      ? String.format(Locale.ROOT, " (means of %d and %d runs)", n3, n1)
                      : ""),
              ratio >= 0.95));
    }
    for (Result r : results) {
      v.add(
          new Verdict(
              r.spec().name() + ": 0 leaked permits",
              r.leakedRequests() + " requests, " + r.leakedWork() + " work units in flight after",
              r.leakedRequests() == 0 && r.leakedWork() == 0));
    }
    return v;
  }

  private static long count(List<Result> results, int replicas, Kill kill) {
    return results.stream()
        .filter(r -> r.spec().replicas() == replicas && r.spec().kill() == kill)
        .count();
  }

  /** Mean goodput/s of the runs of one kind (NaN if none). */
  static double meanGoodput(List<Result> results, int replicas, Kill kill) {
    return results.stream()
        .filter(r -> r.spec().replicas() == replicas && r.spec().kill() == kill)
        .mapToDouble(r -> r.report().goodputPerSecond())
        .average()
        .orElse(Double.NaN);
  }

  static String report(List<Result> results, double cap) {
    StringBuilder b = new StringBuilder();
    double one = meanGoodput(results, 1, Kill.NONE);
    b.append(
        "| run | offered | goodput (before deadline) | goodput/s | vs 1 replica (mean) | upstream peak |"
            + " upstream mean | Σ shares max (requests / work) | streams per replica |"
            + " missed deadline | refused (final) | errors | leaked permits |\n");
    b.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (Result r : results) {
      RunReport rep = r.report();
      StringBuilder sent = new StringBuilder();
      for (long s : r.sentPerReplica()) {
        sent.append(sent.length() == 0 ? "" : " / ").append(s);
      }
      long errors = rep.errors().values().stream().mapToLong(Long::longValue).sum();
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %d (%.0f%%) | %.2f | %s | %d | %.2f | %s | %s | %d | %d | %d | %d |\n",
              r.spec().name(),
              rep.offered(),
              rep.completed(),
              Tables.pct(rep.completed(), rep.offered()),
              rep.goodputPerSecond(),
              Double.isNaN(one) || one <= 0
                  ? "n/a"
                  : String.format(Locale.ROOT, "%.1f%%", 100 * rep.goodputPerSecond() / one),
              r.upstreamPeak(),
              r.upstreamMean(),
              r.spec().replicas() == 1
                  ? "n/a (one replica)"
                  : r.maxGrantedRequestsSum() + " / " + r.maxGrantedWorkSum(),
              sent,
              rep.deadlineMissed(),
              rep.rejectedFinalTotal(),
              errors,
              r.leakedRequests()));
    }
    b.append('\n');
    b.append(diagnostics(results, durationOf(results))).append('\n');
    List<RunReport> reports = results.stream().map(Result::report).toList();
    b.append(Tables.summary(reports)).append('\n');
    b.append(Tables.ttft(reports)).append('\n');
    b.append(Tables.rejections(reports)).append('\n');
    for (Result r : results) {
      if (!r.report().errors().isEmpty()) {
        b.append("Errors, ").append(r.spec().name()).append(": ").append(r.report().errors());
        b.append("\n\n");
      }
    }
    for (Result r : results) {
      if (r.spec().kill() == Kill.NONE) {
        continue;
      }
      b.append(
          String.format(
              Locale.ROOT,
              "%s: replica %d taken out of the balancer and %s at %.1f s; %s; the survivors'"
                  + " shares added up to the pool (%d requests, %d work units) again %s.%n%n",
              r.spec().name(),
              r.spec().replicas() - 1,
              r.spec().kill() == Kill.STOP
                  ? "stopped (shutdown with a 10 s drain, then its leases given up)"
                  : "crashed (halt: streams cut, lease left to expire after leaseTtl 5 s)",
              r.killAtSeconds(),
              r.spec().kill() == Kill.STOP
                  ? String.format(
                      Locale.ROOT, "its drain and shutdown took %.2f s", r.drainedAfterSeconds())
                  : String.format(Locale.ROOT, "the halt took %.2f s", r.drainedAfterSeconds()),
              K,
              CAPACITY,
              Double.isNaN(r.sharesWholeAfterSeconds())
                  ? "never within the run"
                  : String.format(
                      Locale.ROOT, "%.1f s after the kill", r.sharesWholeAfterSeconds())));
    }
    b.append(
        String.format(
            Locale.ROOT,
            "Upstream capacity ~%.1f requests/s; peak and mean are exact (every start and end of a"
                + " generation), the mean over the arrival window.%n%n",
            cap));
    for (Verdict v : verdicts(results)) {
      b.append("- ").append(v.line()).append('\n');
    }
    return b.toString();
  }

  private static double durationOf(List<Result> results) {
    return results.isEmpty() ? 0 : results.get(0).report().arrivalSeconds();
  }

  /**
   * Where the pool's capacity went, as means over the 100 ms samples of the arrival window (after
   * its first second): permits and work units in flight on all replicas, and the work headroom
   * (granted share less work in flight) summed over the replicas.
   */
  static String diagnostics(List<Result> results, double arrivalSeconds) {
    StringBuilder b = new StringBuilder();
    b.append(
        "| run | upstream active | permits in flight (Σ replicas) | work in flight (Σ, % of pool)"
            + " | Σ granted work | Σ work headroom (granted − in flight) |\n");
    b.append("|---|---|---|---|---|---|\n");
    for (Result r : results) {
      double n = 0;
      double active = 0;
      double permits = 0;
      double work = 0;
      double granted = 0;
      double headroom = 0;
      for (Sample s : r.samples()) {
        if (s.seconds() < 1 || s.seconds() > arrivalSeconds) {
          continue;
        }
        n++;
        active += s.upstreamActive();
        for (int i = 0; i < s.requestsInFlight().length; i++) {
          permits += s.requestsInFlight()[i];
          work += s.workInFlight()[i];
          granted += s.grantedWork()[i];
          headroom += Math.max(0, s.grantedWork()[i] - s.workInFlight()[i]);
        }
      }
      if (n == 0) {
        continue;
      }
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %.2f | %.2f | %.0f (%.0f%%) | %.0f | %.0f |\n",
              r.spec().name(),
              active / n,
              permits / n,
              work / n,
              100 * work / n / CAPACITY,
              granted / n,
              headroom / n));
    }
    return b.toString();
  }

  static Path concurrencyChart(List<Result> results, Path file) throws IOException {
    XYChart c =
        new XYChartBuilder()
            .width(900)
            .height(420)
            .title(
                "Upstream concurrency (generations running), sampled every 100 ms; maxRequests "
                    + K)
            .xAxisTitle("time (s)")
            .yAxisTitle("generations")
            .build();
    for (Result r : results) {
      List<Double> x = new ArrayList<>();
      List<Double> y = new ArrayList<>();
      for (Sample s : r.samples()) {
        x.add(s.seconds());
        y.add((double) s.upstreamActive());
      }
      if (!x.isEmpty()) {
        c.addSeries(r.spec().name(), x, y).setMarker(SeriesMarkers.NONE);
      }
    }
    return Charts.save(List.of(c), 1, 1, file);
  }

  static Path sharesChart(List<Result> results, Path file) throws IOException {
    List<XYChart> charts = new ArrayList<>();
    for (Result r : results) {
      if (r.spec().kill() == Kill.NONE || r.samples().isEmpty()) {
        continue;
      }
      XYChart c =
          new XYChartBuilder()
              .width(900)
              .height(360)
              .title(
                  String.format(
                      Locale.ROOT,
                      "%s: request slots granted per replica (killed at %.1f s)",
                      r.spec().name(),
                      r.killAtSeconds()))
              .xAxisTitle("time (s)")
              .yAxisTitle("request slots")
              .build();
      int n = r.samples().get(0).grantedRequests().length;
      List<Double> x = new ArrayList<>();
      List<List<Double>> ys = new ArrayList<>();
      List<Double> sum = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        ys.add(new ArrayList<>());
      }
      for (Sample s : r.samples()) {
        x.add(s.seconds());
        double total = 0;
        for (int i = 0; i < n; i++) {
          ys.get(i).add((double) s.grantedRequests()[i]);
          total += s.grantedRequests()[i];
        }
        sum.add(total);
      }
      for (int i = 0; i < n; i++) {
        c.addSeries("replica " + i, x, ys.get(i)).setMarker(SeriesMarkers.NONE);
      }
      c.addSeries("sum", x, sum).setMarker(SeriesMarkers.NONE);
      charts.add(c);
    }
    return Charts.save(charts, charts.size(), 1, file);
  }

  static boolean reachable(String hostPort) {
    int colon = hostPort.lastIndexOf(':');
    try (Socket s = new Socket()) {
      s.connect(
          new InetSocketAddress(
              hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1))),
          500);
      return true;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }
}
