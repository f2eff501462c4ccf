package io.sluice.bench;

import io.sluice.bootstrap.SluiceServer;
import io.sluice.core.admission.PoolState;
import io.sluice.harness.LoadGenerator;
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
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code restart} bench: three Sluice replicas sharing one pool through Redis (a fresh key
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
            Workload.of(
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
    return Workload.of(
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
    if (!BenchNet.reachable(redis)) {
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
      results.add(new RestartRun(this).run(spec, w, o));
    }
    String md = RestartReport.report(results, preStopSeconds, graceSeconds);
    o.println();
    o.println(md);
    Files.createDirectories(out);
    Files.writeString(out.resolve("restart.md"), md, StandardCharsets.UTF_8);
    o.println("chart: " + RestartReport.chart(results, out.resolve("restart-goodput.png")));
    return RestartReport.verdicts(results).stream().allMatch(Verdict::pass) ? 0 : 1;
  }

  double restartAt() {
    return warmupSeconds + durationSeconds / 2.0;
  }

  /**
   * The pool's limit in effect on the replica now (request slots: the adaptive limit's, or before
   * its first step what the pool starts from).
   */
  static double limitOf(SluiceServer s) {
    try {
      PoolState p = s.runtime().controller().pool("llm");
      return Objects.requireNonNull(p, "pool llm").policy().maxRequests();
    } catch (RuntimeException e) {
      return Double.NaN;
    }
  }

  static Learned withLimit(Learned l, double limit) {
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

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      s.setReuseAddress(true);
      return s.getLocalPort();
    }
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
