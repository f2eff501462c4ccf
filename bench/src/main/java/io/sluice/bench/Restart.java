package io.sluice.bench;

import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.admission.PoolState;
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
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Issue 31's {@code restart}: three Sluice replicas sharing one pool through Redis (a fresh key
 * prefix per run), behind an emulated Envoy with {@code LEAST_REQUEST}, in front of one simulated
 * upstream with K batch slots, offered {@code --load} times its capacity. The pool is adaptive
 * (ceiling 2K, floor K/4) and learns its output reserve (clients ask {@code max_tokens} 2048–4096
 * for answers of 100–300 tokens). After a warm-up, half-way through the measured phase, the run
 * restarts one replica or all three, and reports the goodput (answers completed, by completion
 * time) in the {@code --window} seconds after the restart over the same span before it, and the
 * learned limit and reserve of each restarted replica when it is ready again against its
 * predecessor's just before.
 *
 * <p>How a restart is played, as Kubernetes does it with the shipped manifests:
 *
 * <ul>
 *   <li><b>drain</b> (the pod is deleted or rolled: SIGTERM after {@code preStop}): a replacement
 *       pod (a new name, a new address) starts at once and joins the balancer when ready; the old
 *       one stays in the balancer for {@code --pre-stop} seconds (the shipped {@code preStop}
 *       sleep, while Envoy's DNS still lists it), then leaves it and runs the server's own shutdown
 *       ({@link SluiceServer#shutdown}: queued requests answered 503 {@code shutting_down},
 *       in-flight ones drained for {@code --grace}, then its leases given up).
 *   <li><b>halt</b> (the container crashes and the kubelet restarts it in place: same pod name,
 *       same address): {@link SluiceServer#halt()} cuts every stream (Envoy resets those requests)
 *       and leaves its leases in Redis; it leaves the balancer at once (Envoy's best case: a real
 *       Envoy notices by failed connects or its health check) and a new process starts on the same
 *       port under the same {@code POD_NAME}, or under a new one ({@code one-halt-new-id}: what a
 *       replica that cannot tell its predecessor sees), and rejoins when ready.
 *   <li><b>all</b> does that to the three at once; <b>rolling</b> one after the other, the next
 *       when the previous one's replacement is ready ({@code maxSurge 1, maxUnavailable 0}).
 * </ul>
 *
 * The servers run in this JVM (a start here costs no JVM start-up or class loading: a real pod's
 * start is longer, see docs/benchmarks.md).
 *
 * <pre>java -jar bench/target/sluice-bench.jar restart [--duration 24] [--warmup 15]
 * [--runs steady,one-drain,...]</pre>
 */
@Command(
    name = "restart",
    description =
        "Three replicas on Redis, adaptive limit and learned reserve on, offered 1.5x: restart one"
            + " or all (drain or halt, at once or rolling) half-way; goodput after / before.")
final class Restart implements Callable<Integer> {
  @Option(
      names = "--duration",
      defaultValue = "24",
      description =
          "seconds of the measured phase, 2 x --window .. 600; the restart is half-way"
              + " (default: ${DEFAULT-VALUE})")
  int durationSeconds = 24;

  @Option(
      names = "--warmup",
      defaultValue = "30",
      description =
          "seconds of arrivals before the measured phase (the learners warm up), 0..120"
              + " (default: ${DEFAULT-VALUE})")
  int warmupSeconds = 30;

  @Option(
      names = "--window",
      defaultValue = "10",
      description =
          "seconds before and after the restart compared, 2..60 (default: ${DEFAULT-VALUE})")
  int windowSeconds = 10;

  @Option(
      names = "--load",
      defaultValue = "1.5",
      description =
          "offered load as a multiple of the upstream's capacity (default: ${DEFAULT-VALUE})")
  double load = 1.5;

  @Option(
      names = "--floor",
      defaultValue = "4",
      description =
          "the adaptive pool's floor (request slots; the ceiling is twice the upstream's 16),"
              + " 1..32 (default: ${DEFAULT-VALUE})")
  int floor = FLOOR;

  @Option(
      names = "--pre-stop",
      defaultValue = "5",
      description =
          "seconds a draining replica stays in the balancer after it is told to stop (the shipped"
              + " preStop sleep), 0..30 (default: ${DEFAULT-VALUE})")
  double preStopSeconds = 5;

  @Option(
      names = "--grace",
      defaultValue = "10",
      description = "drain grace of a stopped replica, seconds (default: ${DEFAULT-VALUE})")
  int graceSeconds = 10;

  @Option(
      names = "--redis",
      defaultValue = "127.0.0.1:6379",
      description = "the Redis all replicas share, host:port (default: ${DEFAULT-VALUE})")
  String redis = "127.0.0.1:6379";

  @Option(
      names = "--runs",
      split = ",",
      defaultValue = DEFAULT_RUNS,
      description = "which runs, in order (default: ${DEFAULT-VALUE})")
  List<String> runs = List.of(DEFAULT_RUNS.split(","));

  @Option(
      names = "--out",
      defaultValue = "target/sluice-bench-restart",
      description = "directory for the chart and the markdown table (default: ${DEFAULT-VALUE})")
  Path out = Path.of("target/sluice-bench-restart");

  @Option(names = "--quiet", description = "no live progress lines")
  boolean quiet;

  static final String DEFAULT_RUNS =
      "steady,one-drain,one-halt,one-halt-new-id,all-drain,rolling-drain,all-halt";

  /** Replicas of the deployment. */
  static final int N = 3;

  static final int K = Scenario.UPSTREAM.batchSlots();

  /** The adaptive pool's ceiling (request slots): twice the upstream's slots. */
  static final int CEILING = 2 * K;

  /** The adaptive pool's floor by default. */
  static final int FLOOR = K / 4;

  /** Work units per request slot: a mean real request (prompt + answer) with 20 % slack. */
  static final long WORK_PER_SLOT =
      Math.round(
          ((Reserve.PROMPT_MIN + Reserve.PROMPT_MAX) / 2.0
                  + (Reserve.ANSWER_MIN + Reserve.ANSWER_MAX) / 2.0)
              * 1.2);

  static final long HOLD_MILLIS = 10_000;

  /** Completions a reserve key needs before its learned value is used. */
  static final int RESERVE_WARMUP = 5;

  /** What restarts. */
  enum Scope {
    NONE,
    ONE,
    ALL,
    ROLLING
  }

  /** How a replica ends. */
  enum How {
    NONE,
    DRAIN,
    HALT
  }

  record RunSpec(String key, String name, Scope scope, How how, boolean sameIdentity) {
    static RunSpec named(String n) {
      return switch (n) {
        case "steady" -> new RunSpec(n, "no restart (control)", Scope.NONE, How.NONE, true);
        case "one-drain" ->
            new RunSpec(n, "one drained (pod replaced)", Scope.ONE, How.DRAIN, false);
        case "one-halt" -> new RunSpec(n, "one halted (same pod name)", Scope.ONE, How.HALT, true);
        case "one-halt-new-id" ->
            new RunSpec(n, "one halted (new name)", Scope.ONE, How.HALT, false);
        case "all-drain" -> new RunSpec(n, "all drained at once", Scope.ALL, How.DRAIN, false);
        case "rolling-drain" ->
            new RunSpec(n, "all drained, rolling", Scope.ROLLING, How.DRAIN, false);
        case "all-halt" -> new RunSpec(n, "all halted at once", Scope.ALL, How.HALT, true);
        case "rolling-halt" -> new RunSpec(n, "all halted, rolling", Scope.ROLLING, How.HALT, true);
        default ->
            throw new IllegalArgumentException(
                "--runs: "
                    + n
                    + " (expected: comma-separated, of steady, one-drain, one-halt,"
                    + " one-halt-new-id, all-drain, rolling-drain, all-halt, rolling-halt)");
      };
    }

    int restarted() {
      return scope == Scope.NONE ? 0 : scope == Scope.ONE ? 1 : N;
    }
  }

  /** A replica's learned numbers at one instant (NaN / -1: not known). */
  record Learned(double limitRequests, double reserveTokens, boolean reserveWarmed) {
    static final Learned NONE = new Learned(Double.NaN, Double.NaN, false);
  }

  /**
   * One restarted replica: its predecessor's numbers just before, and its own when it joined the
   * balancer and one second later.
   */
  record Replaced(
      int replica,
      double stoppedAtSeconds,
      double readyAtSeconds,
      double startMillis,
      Learned before,
      Learned atReady,
      Learned oneSecondLater) {}

  /** One 100 ms sample: the pool limit each slot's replica holds, and the live grants. */
  record Sample(double seconds, double[] limit, int grantedSum, int poolLimit, int healthy) {}

  /** What one run measured. */
  record Result(
      RunSpec spec,
      RunReport report,
      double restartAtSeconds,
      double window,
      long completedBefore,
      long completedAfter,
      long errorsAfter,
      long refusedAfter,
      double noReplicaSeconds,
      double sharesWholeAfterSeconds,
      int upstreamPeak,
      List<Replaced> replaced,
      List<Sample> samples,
      double[] completionsPerSecond) {
    double ratio() {
      return completedBefore == 0 ? Double.NaN : (double) completedAfter / completedBefore;
    }
  }

  static Workload workload(int warmupSeconds, int seconds, double multiple) {
    Workload.RequestClass c = Reserve.chat(false);
    double capacity =
        LoadGenerator.capacityPerSecond(
            new Workload(
                List.of(c),
                List.of(new Workload.Tenant("acme", 1)),
                List.of(new Workload.Phase("probe", Duration.ofSeconds(1), 1)),
                0,
                Duration.ZERO,
                Duration.ZERO,
                0,
                Duration.ofSeconds(1),
                1),
            Scenario.UPSTREAM);
    double rate = multiple * capacity;
    List<Workload.Phase> phases = new ArrayList<>();
    if (warmupSeconds > 0) {
      phases.add(new Workload.Phase("warm-up", Duration.ofSeconds(warmupSeconds), rate));
    }
    phases.add(
        new Workload.Phase(
            String.format(Locale.ROOT, "%.1fx", multiple), Duration.ofSeconds(seconds), rate));
    return new Workload(
        List.of(c),
        List.of(new Workload.Tenant("acme", 1), new Workload.Tenant("globex", 1)),
        phases,
        0,
        Duration.ZERO,
        Duration.ZERO,
        2,
        Duration.ofSeconds(25),
        31);
  }

  /**
   * The policy of every replica: the adaptive pool, the learned reserve, the Redis store under
   * {@code keyPrefix}, gRPC on {@code grpcPort} (0: any).
   */
  static String policy(String redis, String keyPrefix, int grpcPort) {
    return policy(redis, keyPrefix, grpcPort, FLOOR);
  }

  /** As {@link #policy(String, String, int)} with the adaptive floor {@code floor}. */
  static String policy(String redis, String keyPrefix, int grpcPort, int floor) {
    String classes =
        "  interactive: {rank: 0, reservedShare: 1.0, borrow: true, deadline: 20s,"
            + " maxQueueWait: 8s, defaultOutputTokens: 256, maxOutputTokens: 4096}\n";
    String base =
        Policies.policy(CEILING * WORK_PER_SLOT, CEILING, HOLD_MILLIS, classes, "interactive");
    String out =
        base.replace(
                "    defaultServiceTime: 2s\n",
                String.format(
                    Locale.ROOT,
                    "    defaultServiceTime: 2s\n"
                        + "    adaptive: {enabled: true, minRequests: %d, minCapacity: %d}\n",
                    floor,
                    floor * WORK_PER_SLOT))
            .replace(
                "rateLimit: {enabled: false}\n",
                "rateLimit: {enabled: false, env: {BACKEND_TYPE: redis, REDIS_URL: \""
                    + redis
                    + "\"}}\nquotas: {keyPrefix: "
                    + keyPrefix
                    + "}\n")
            .replace(
                "grpc: {host: 127.0.0.1, port: 0}",
                "grpc: {host: 127.0.0.1, port: " + grpcPort + "}");
    if (!out.contains("adaptive: {enabled: true")
        || !out.contains("REDIS_URL")
        || (grpcPort != 0 && !out.contains("port: " + grpcPort + "}"))) {
      throw new IllegalStateException("bench policy changed shape; update Restart.policy");
    }
    return out
        + String.format(
            Locale.ROOT,
            "estimation:%n  learnedReserve: {enabled: true, warmup: %d}%n",
            RESERVE_WARMUP);
  }

  @Override
  public Integer call() throws Exception {
    picocli.CommandLine cl = new picocli.CommandLine(this);
    if (windowSeconds < 2 || windowSeconds > 60) {
      throw new picocli.CommandLine.ParameterException(
          cl, "--window: " + windowSeconds + " (expected: 2..60)");
    }
    if (durationSeconds < 2 * windowSeconds || durationSeconds > 600) {
      throw new picocli.CommandLine.ParameterException(
          cl, "--duration: " + durationSeconds + " (expected: " + 2 * windowSeconds + "..600)");
    }
    if (warmupSeconds < 0 || warmupSeconds > 120) {
      throw new picocli.CommandLine.ParameterException(
          cl, "--warmup: " + warmupSeconds + " (expected: 0..120)");
    }
    if (floor < 1 || floor > CEILING) {
      throw new picocli.CommandLine.ParameterException(
          cl, "--floor: " + floor + " (expected: 1.." + CEILING + ")");
    }
    if (!(preStopSeconds >= 0 && preStopSeconds <= 30)) {
      throw new picocli.CommandLine.ParameterException(
          cl, "--pre-stop: " + preStopSeconds + " (expected: 0..30)");
    }
    List<RunSpec> specs = runs.stream().map(String::trim).map(RunSpec::named).toList();
    PrintStream o = System.out;
    if (!Replicas.reachable(redis)) {
      o.println("restart: no Redis at " + redis + " (start redis-server, or pass --redis)");
      return 1;
    }
    Workload w = workload(warmupSeconds, durationSeconds, load);
    o.printf(
        Locale.ROOT,
        "restart: %d replicas on Redis %s, simulated LLM (K=%d), offered %.1fx for %d s warm-up +"
            + " %d s; adaptive pool (ceiling %d, floor %d), learned reserve (warmup %d); restart at"
            + " %.0f s, goodput compared over %d s before and after.%n",
        N,
        redis,
        K,
        load,
        warmupSeconds,
        durationSeconds,
        CEILING,
        floor,
        RESERVE_WARMUP,
        restartAt(),
        windowSeconds);
    List<Result> results = new ArrayList<>();
    for (RunSpec spec : specs) {
      o.printf(Locale.ROOT, "%n== run: %s ==%n", spec.name());
      results.add(runOne(spec, w, o));
    }
    String md = report(results, preStopSeconds, graceSeconds);
    o.println();
    o.println(md);
    Files.createDirectories(out);
    Files.writeString(out.resolve("restart.md"), md, StandardCharsets.UTF_8);
    o.println("chart: " + chart(results, out.resolve("restart-goodput.png")));
    return verdicts(results).stream().allMatch(Verdict::pass) ? 0 : 1;
  }

  double restartAt() {
    return warmupSeconds + durationSeconds / 2.0;
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
      var cfg = ConfigLoader.parse(policy(redis, prefix, ports[slot], floor));
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

  private Result runOne(RunSpec spec, Workload w, PrintStream o) throws Exception {
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
    double restartAt = restartAt();
    int totalSeconds = warmupSeconds + durationSeconds;
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
                    if (!quiet) {
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
      double window = windowSeconds;
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
              sleep(Math.max(0, Math.round(preStopSeconds * 1000 - (d.now() - stoppedAt) * 1000)));
              d.eject(v);
              long s0 = System.nanoTime();
              old.shutdown(Duration.ofSeconds(graceSeconds), "bench: SIGTERM after preStop");
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

  /**
   * The pool's limit in effect on the replica now (request slots: the adaptive limit's, or before
   * its first step what the pool starts from).
   */
  static double limitOf(SluiceServer s) {
    try {
      PoolState p = s.runtime().controller().pool("llm");
      return p.policy().maxRequests();
    } catch (RuntimeException e) {
      return Double.NaN;
    }
  }

  private static Learned withLimit(Learned l, double limit) {
    return new Learned(limit, l.reserveTokens(), l.reserveWarmed());
  }

  private static final Pattern ESTIMATE =
      Pattern.compile("\\{[^{}]*\"pool\"\\s*:\\s*\"llm\"[^{}]*}");
  private static final Pattern TOKENS = Pattern.compile("\"absoluteTokens\"\\s*:\\s*([0-9.]+)");
  private static final Pattern WARMED = Pattern.compile("\"warmed\"\\s*:\\s*(true|false)");
  private static final Pattern SAMPLES = Pattern.compile("\"samples\"\\s*:\\s*([0-9.]+)");
  private static final Pattern TENANT = Pattern.compile("\"tenant\"\\s*:");

  /**
   * The learned reserve of the pool's coarse key (no tenant) with the most samples, from {@code
   * /debug/estimates} (the admin port's view, whatever the store).
   */
  static Learned reserveOf(HttpClient http, SluiceServer s) {
    try {
      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(
                      URI.create("http://127.0.0.1:" + s.adminPort() + "/debug/estimates?limit=50"))
                  .timeout(Duration.ofMillis(500))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      return r.statusCode() == 200 ? parseReserve(r.body()) : Learned.NONE;
    } catch (IOException | RuntimeException e) {
      return Learned.NONE;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Learned.NONE;
    }
  }

  /** {@link #reserveOf}'s reading of a {@code /debug/estimates} body. */
  static Learned parseReserve(String json) {
    Matcher m = ESTIMATE.matcher(json);
    double best = -1;
    Learned out = Learned.NONE;
    while (m.find()) {
      String e = m.group();
      if (TENANT.matcher(e).find()) {
        continue;
      }
      Matcher t = TOKENS.matcher(e);
      Matcher w = WARMED.matcher(e);
      Matcher n = SAMPLES.matcher(e);
      if (!t.find() || !w.find()) {
        continue;
      }
      double samples = n.find() ? Double.parseDouble(n.group(1)) : 0;
      if (samples > best) {
        best = samples;
        out =
            new Learned(
                Double.NaN, Double.parseDouble(t.group(1)), Boolean.parseBoolean(w.group(1)));
      }
    }
    return out;
  }

  /** Events counted in 100 ms buckets, from second {@code from} (inclusive) to {@code to}. */
  static long sum(AtomicIntegerArray buckets, double from, double to) {
    long n = 0;
    int a = (int) Math.max(0, Math.round(from * 10));
    int b = (int) Math.min(buckets.length(), Math.round(to * 10));
    for (int i = a; i < b; i++) {
      n += buckets.get(i);
    }
    return n;
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

  static String fmt(double v) {
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.0f", v);
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
      if (r.spec().scope() == Scope.NONE) {
        continue;
      }
      v.add(
          new Verdict(
              r.spec().name() + ": goodput in the " + fmt(r.window()) + " s after >= 0.90 x before",
              String.format(
                  Locale.ROOT,
                  "%d / %d = %.2f",
                  r.completedAfter(),
                  r.completedBefore(),
                  r.ratio()),
              r.ratio() >= 0.90));
      boolean limitBack = true;
      boolean reserveBack = true;
      StringBuilder lm = new StringBuilder();
      StringBuilder rm = new StringBuilder();
      for (Replaced x : r.replaced()) {
        limitBack &= near(x.atReady().limitRequests(), x.before().limitRequests(), 0.25, 2);
        reserveBack &=
            x.atReady().reserveWarmed()
                && near(x.atReady().reserveTokens(), x.before().reserveTokens(), 0.25, 0);
        lm.append(lm.length() == 0 ? "" : "; ")
            .append(fmt(x.before().limitRequests()))
            .append(" -> ")
            .append(fmt(x.atReady().limitRequests()));
        rm.append(rm.length() == 0 ? "" : "; ")
            .append(fmt(x.before().reserveTokens()))
            .append(" -> ")
            .append(x.atReady().reserveWarmed() ? fmt(x.atReady().reserveTokens()) : "cold");
      }
      v.add(
          new Verdict(
              r.spec().name() + ": learned limit back at ready (within 25 % or 2 slots)",
              lm.toString(),
              limitBack && !r.replaced().isEmpty()));
      v.add(
          new Verdict(
              r.spec().name() + ": learned reserve back at ready (warmed, within 25 %)",
              rm.toString(),
              reserveBack && !r.replaced().isEmpty()));
    }
    return v;
  }

  static boolean near(double got, double want, double rel, double abs) {
    if (Double.isNaN(got) || Double.isNaN(want)) {
      return false;
    }
    return Math.abs(got - want) <= Math.max(abs, rel * Math.abs(want));
  }

  static String report(List<Result> results, double preStop, int grace) {
    StringBuilder b = new StringBuilder();
    b.append(
        "| run | goodput before (answers in the window) | after | after / before | errors after"
            + " (cut streams) | refused after | no replica ready | live shares whole again"
            + " (halt: after the restart began) |"
            + " upstream peak | goodput whole run /s |\n");
    b.append("|---|---|---|---|---|---|---|---|---|---|\n");
    for (Result r : results) {
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %d | %d | **%.2f** | %d | %d | %.2f s | %s | %d | %.2f |%n",
              r.spec().name(),
              r.completedBefore(),
              r.completedAfter(),
              r.ratio(),
              r.errorsAfter(),
              r.refusedAfter(),
              r.noReplicaSeconds(),
              r.spec().how() != How.HALT
                  ? "n/a"
                  : Double.isNaN(r.sharesWholeAfterSeconds())
                      ? "not within the run"
                      : String.format(Locale.ROOT, "%.1f s", r.sharesWholeAfterSeconds()),
              r.upstreamPeak(),
              r.report().goodputPerSecond()));
    }
    b.append('\n');
    b.append(
        "| run | replica | start (ms) | limit before → at ready → 1 s later | reserve before →"
            + " at ready → 1 s later (tokens; cold: not warmed) |\n");
    b.append("|---|---|---|---|---|\n");
    for (Result r : results) {
      for (Replaced x : r.replaced()) {
        b.append(
            String.format(
                Locale.ROOT,
                "| %s | %d | %.0f | %s → %s → %s | %s → %s → %s |%n",
                r.spec().name(),
                x.replica(),
                x.startMillis(),
                fmt(x.before().limitRequests()),
                fmt(x.atReady().limitRequests()),
                fmt(x.oneSecondLater().limitRequests()),
                reserve(x.before()),
                reserve(x.atReady()),
                reserve(x.oneSecondLater())));
      }
    }
    b.append('\n');
    b.append("Goodput per second around the restart (answers completed in each second):\n\n");
    b.append("| run |");
    int from = results.isEmpty() ? 0 : (int) Math.floor(results.get(0).restartAtSeconds() - 10);
    int to = results.isEmpty() ? 0 : (int) Math.ceil(results.get(0).restartAtSeconds() + 12);
    StringBuilder rule = new StringBuilder("|---|");
    for (int s = Math.max(0, from); s < to; s++) {
      b.append(' ').append(s).append(" |");
      rule.append("---|");
    }
    b.append('\n').append(rule).append('\n');
    for (Result r : results) {
      b.append("| ").append(r.spec().name()).append(" |");
      for (int s = Math.max(0, from); s < to; s++) {
        double v = s < r.completionsPerSecond().length ? r.completionsPerSecond()[s] : 0;
        b.append(' ').append(fmt(v)).append(" |");
      }
      b.append('\n');
    }
    b.append('\n');
    List<RunReport> reports = results.stream().map(Result::report).toList();
    b.append(Tables.rejections(reports)).append('\n');
    for (Result r : results) {
      if (!r.report().errors().isEmpty()) {
        b.append("Errors, ").append(r.spec().name()).append(": ").append(r.report().errors());
        b.append("\n\n");
      }
    }
    b.append(
        String.format(
            Locale.ROOT,
            "Goodput: answers completed before their deadline, counted by completion time in 100"
                + " ms buckets. Drain: replacement started at once, old replica kept in the"
                + " balancer %.0f s (preStop), then shutdown with a %d s grace. Halt: streams cut,"
                + " leases left; the new process binds the same port. Servers run in the bench's"
                + " JVM (no JVM start-up in the start times).%n%n",
            preStop,
            grace));
    for (Verdict v : verdicts(results)) {
      b.append("- ").append(v.line()).append('\n');
    }
    return b.toString();
  }

  private static String reserve(Learned l) {
    if (Double.isNaN(l.reserveTokens())) {
      return "none";
    }
    return l.reserveWarmed() ? fmt(l.reserveTokens()) : "cold (" + fmt(l.reserveTokens()) + ")";
  }

  static Path chart(List<Result> results, Path file) throws IOException {
    XYChart c =
        new XYChartBuilder()
            .width(900)
            .height(420)
            .title("Goodput per second (answers completed); restart at the dashed time")
            .xAxisTitle("time (s)")
            .yAxisTitle("answers / s")
            .build();
    for (Result r : results) {
      List<Double> x = new ArrayList<>();
      List<Double> y = new ArrayList<>();
      for (int s = 0; s < r.completionsPerSecond().length; s++) {
        x.add(s + 0.5);
        y.add(r.completionsPerSecond()[s]);
      }
      c.addSeries(r.spec().name(), x, y).setMarker(SeriesMarkers.NONE);
    }
    if (!results.isEmpty()) {
      double at = results.get(0).restartAtSeconds();
      c.addSeries("restart", List.of(at, at), List.of(0.0, 1.0 * maxOf(results)))
          .setMarker(SeriesMarkers.NONE);
    }
    return Charts.save(List.of(c), 1, 1, file);
  }

  private static double maxOf(List<Result> results) {
    double m = 1;
    for (Result r : results) {
      for (double v : r.completionsPerSecond()) {
        m = Math.max(m, v);
      }
    }
    return m;
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      s.setReuseAddress(true);
      return s.getLocalPort();
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
