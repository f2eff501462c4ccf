package io.sluice.bench;

import static io.sluice.bench.FloorReport.table;

import io.grpc.ManagedChannel;
import io.sluice.bench.FloorServers.NoOp;
import io.sluice.bench.FloorServers.Sluice;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.HdrHistogram.Histogram;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The transport floor: the same closed-loop Java generator against a no-op ext_proc / RLS server
 * (CONTINUE or OK at once, direct executor) and against Sluice's full path (admitting, refusing;
 * with {@code --redis} also Sluice on the Redis store), for each workload of {@link FloorCalls}:
 * one-shot streams, LLM-shaped streams and RLS calls. After a warm-up that visits every workload
 * and target in turn until every server's JIT has settled ({@link FloorJit}), measured windows
 * alternate between them, round after round, in pairs of rounds whose second is the first reversed
 * ({@link FloorOrder}), so a drift in the machine's speed hits every target alike. A target's ratio
 * is the median over rounds of its window's calls/s ÷ the no-op's window of the same workload and
 * round. With {@code --separate} each server runs in a child JVM of its own, so the generator
 * shares the cores but not the JVM, each server's CPU per call is reported, and every server but
 * the one driven is stopped meanwhile ({@link FloorMethodOptions}).
 */
@Command(
    name = "floor",
    description = {
      "Transport floor: no-op ext_proc vs Sluice, streams/s.",
      "Method (docs/benchmarks.md, \"The floor's method: the twin\"): with --separate only the"
          + " server driven runs (the others SIGSTOPped), rounds come in pairs the second"
          + " reversed, each target has its own client event loops; sluice-twin and noop-twin"
          + " (--targets) are the controls and must read 1 of sluice / the no-op by rate."
    })
final class Floor implements Callable<Integer> {
  @Option(names = "--channels", defaultValue = "4")
  int channels = 4;

  @Option(
      names = "--concurrency",
      description = "streams in flight per channel",
      defaultValue = "32")
  int concurrency = 32;

  @Option(
      names = "--warmup",
      description =
          "least seconds of warm-up, visiting the targets in turn (then on until the JITs settle:"
              + " --jit-settle-share, --warmup-max) (default: ${DEFAULT-VALUE})",
      defaultValue = "24")
  int warmupSeconds = 24;

  @Option(
      names = "--duration",
      description = "seconds per measured window (default: ${DEFAULT-VALUE})",
      defaultValue = "3")
  int durationSeconds = 3;

  @Option(
      names = "--rounds",
      description = "measured windows per target, alternating targets (default: ${DEFAULT-VALUE})",
      defaultValue = "8")
  int rounds = 8;

  @Option(
      names = "--baseline-jar",
      description =
          "with --separate: also measure Sluice from this (older) sluice-bench jar, target"
              + " sluice-baseline, admitting as target sluice does (its floor --serve sluice)")
  @Nullable Path baselineJar;

  @Option(
      names = "--targets",
      split = ",",
      description =
          "measure only these targets (the no-op always), e.g. sluice,sluice-baseline;"
              + " sluice-twin (with --separate) is a second JVM of this jar's sluice: the control"
              + " whose difference to sluice is the CPU method's spread; noop-answers is the no-op"
              + " answering with the bytes target sluice answers (what the answers cost the"
              + " transport); noop-twin (with --separate) a second JVM of the no-op: it reads 1 by"
              + " rate and 0 by CPU when the method is sound")
  @Nullable List<String> only;

  @Option(
      names = "--parse-answers",
      description =
          "the generator parses every ext_proc and RLS answer with protobuf (as it did before: a"
              + " target's dynamic metadata or RLS statuses then cost the generator, on the same"
              + " cores); by default it reads only which answer it is (RLS: its overall code)")
  boolean parseAnswers;

  @Option(
      names = "--separate",
      description =
          "run each server in a child JVM of its own (floor --serve), not in the generator's")
  boolean separate;

  @Option(
      names = "--server-jvm-arg",
      description =
          "with --separate: one more JVM option for every server's child JVM (repeatable);"
              + " {target} is replaced by the target's name, e.g."
              + " -XX:StartFlightRecording=filename=/tmp/{target}.jfr,settings=profile")
  List<String> serverJvmArgs = new ArrayList<>();

  @Option(
      names = "--threads",
      description =
          "with --separate: also print each server's CPU per call by thread group (user, system)")
  boolean threads;

  @Mixin FloorMethodOptions method = new FloorMethodOptions();

  /** Warm-up windows, and the settling time of each measured window, in seconds. */
  private static final int WARM_WINDOW_SECONDS = 2;

  private static final int SETTLE_SECONDS = 1;

  @Option(
      names = "--serve",
      description =
          "only serve (noop, noop-answers, sluice, sluice-reject) on --port until killed (h2load)")
  @Nullable String serve;

  @Mixin FloorAnswerOptions answerOptions = new FloorAnswerOptions();

  @Option(
      names = "--shape",
      split = ",",
      description =
          "workloads, comma-separated: oneshot (request_headers + half-close), llm (request"
              + " headers, 1.9 KB buffered chat body, response headers, 0.5 KB JSON answer with"
              + " usage, then a reset, as Envoy drives an LLM request; 'envoy' is its old name),"
              + " headers-only (the same request decided at its headers from Envoy's native AI"
              + " metadata, request body NONE),"
              + " rls (unary ShouldRateLimit) (default: ${DEFAULT-VALUE})",
      defaultValue = "oneshot,llm,rls")
  List<String> shapes = List.of("oneshot", "llm", "rls");

  @Option(names = "--port", defaultValue = "50051")
  int port = 50051;

  @Option(
      names = "--redis",
      description =
          "with --serve sluice: the store is the Redis at host:port (BACKEND_TYPE=redis), so the"
              + " rate limit service counts there and the pool is leased as a replica share;"
              + " without --serve: adds the target sluice-redis, Sluice admitting on that store")
  @Nullable String redis;

  @Option(
      names = "--dump-dir",
      description =
          "write pre-encoded gRPC request frames for h2load (extproc_request_headers.grpc,"
              + " extproc_llm_stream.grpc: the LLM-shaped stream's four messages in one body,"
              + " rls_request.grpc) to this directory")
  @Nullable Path dumpDir;

  @Option(
      names = "--deadline-header",
      description =
          "with --serve sluice: the admit answer sets x-sluice-deadline-ms on the upstream request"
              + " (the product's default); without it the floor's admit carries no header"
              + " mutation, as with decisionHeader off")
  boolean deadlineHeader;

  @Option(
      names = "--otlp-endpoint",
      description =
          "target sluice-telemetry (OpenTelemetry on, 1 %% sampled) exports here; default: a"
              + " discarding OTLP receiver the floor serves (TelemetrySink)")
  @Nullable String otlpEndpoint;

  /** The floor's admit ({@link FloorPolicies#ADMIT}): no header mutation. */
  static final String ADMIT_POLICY = FloorPolicies.ADMIT;

  static final String REJECT_POLICY = FloorPolicies.REJECT;

  /**
   * Result of one target over all rounds.
   *
   * @param streamsPerSecond median over rounds
   * @param ratio median over rounds of this target's streams/s ÷ the no-op's in the same round
   * @param minRatio smallest per-round ratio
   * @param maxRatio largest per-round ratio
   * @param latencyMicros client latency, all measured windows
   * @param cpuCores mean process CPU over the measured windows (the generator's and, in one JVM,
   *     the servers')
   * @param serverMicrosPerCall with separate servers: the server's CPU per call, median over rounds
   */
  record Row(
      String workload,
      String target,
      double streamsPerSecond,
      double ratio,
      double minRatio,
      double maxRatio,
      Histogram latencyMicros,
      double cpuCores,
      double serverMicrosPerCall,
      String serverDecisionP50,
      String serverDecisionP99,
      long errors) {}

  @Override
  public Integer call() throws Exception {
    PrintStream out = System.out;
    if (dumpDir != null) {
      out.println("wrote " + String.join(", ", FloorMessages.writeFrames(dumpDir)));
      return 0;
    }
    Path captureAnswers = answerOptions.captureAnswers;
    if (captureAnswers != null) {
      FloorReplies.capture(admitPolicy()).write(captureAnswers);
      return 0;
    }
    if (serve != null) {
      AutoCloseable s = start(serve, port);
      out.println("serving " + serve + " on 127.0.0.1:" + port + "; Ctrl-C to stop");
      Runtime.getRuntime().addShutdownHook(new Thread(() -> closeQuietly(s)));
      new CountDownLatch(1).await();
      return 0;
    }
    List<FloorCalls> workloads = shapes.stream().map(FloorCalls::parse).distinct().toList();
    List<String> targets = new ArrayList<>();
    workloads.forEach(
        w -> targetsOf(w).stream().filter(t -> !targets.contains(t)).forEach(targets::add));
    if (method.runs < 1 || (method.runs > 1 && !separate)) {
      throw new IllegalArgumentException(
          "--runs: " + method.runs + " (expected 1, or more with --separate: fresh JVMs per run)");
    }
    FloorPool pooled = new FloorPool();
    for (int run = 1; run <= method.runs; run++) {
      if (method.runs > 1) {
        out.printf(Locale.ROOT, "%n== run %d of %d (fresh server JVMs)%n", run, method.runs);
      }
      measure(out, workloads, targets, pooled);
    }
    if (method.runs > 1) {
      workloads.forEach(c -> pooled.print(out, c.label(), targetsOf(c)));
    }
    return 0;
  }

  /** One run: the servers started, warmed until their JITs settle, then the rounds measured. */
  private void measure(
      PrintStream out, List<FloorCalls> workloads, List<String> targets, FloorPool pooled)
      throws Exception {
    FloorOrder roundOrder = FloorOrder.parse(method.order);
    boolean pause = separate && method.pauseIdle;
    Path logs = Files.createTempDirectory("sluice-floor");
    Map<String, Integer> ports = new LinkedHashMap<>();
    try (FloorTargets servers =
            separate
                ? FloorTargets.separate(targets, redis, baselineJar, serverJvmArgs, logs)
                : FloorTargets.inProcess(this, targets);
        FloorChannels channelsOf = channels(servers, targets, ports)) {
      List<Window> order = new ArrayList<>();
      workloads.forEach(w -> targetsOf(w).forEach(t -> order.add(new Window(w, t))));
      out.printf(
          Locale.ROOT,
          "warm-up %d–%d s, then %d rounds of %d s per workload and target (%s; %d cores)%s...%n",
          warmupSeconds,
          Math.max(warmupSeconds, method.warmupMaxSeconds),
          rounds,
          durationSeconds,
          workloads.stream().map(FloorCalls::label).toList(),
          Runtime.getRuntime().availableProcessors(),
          separate
              ? ", servers in child JVMs (logs in "
                  + logs
                  + (pause ? "; the idle ones paused" : "")
                  + ")"
              : "");
      FloorJit jit = new FloorJit(servers, targets); // warm cycles until the JITs settle
      long warmStart = System.nanoTime();
      while (!jit.settled(out, (System.nanoTime() - warmStart) / 1e9, warmupSeconds, method)) {
        jit.begin();
        for (Window w : order) {
          if (pause) {
            servers.runOnly(w.target());
          }
          drive(w.calls(), channelsOf.of(w.target()), 0, WARM_WINDOW_SECONDS);
        }
      }
      Map<Window, List<ClosedLoop.Result>> results = new LinkedHashMap<>();
      Map<Window, List<Double>> serverCpu = new LinkedHashMap<>();
      order.forEach(w -> results.put(w, new ArrayList<>()));
      order.forEach(w -> serverCpu.put(w, new ArrayList<>()));
      Map<Window, FloorThreads> byThread = new LinkedHashMap<>();
      FloorCpu cpuByRound = new FloorCpu();
      for (int round = 0; round < rounds; round++) {
        for (Window w : roundOrder.round(order, round)) {
          if (pause) {
            servers.runOnly(w.target());
          }
          long pid = threads ? servers.pid(w.target()) : -1;
          var threads0 = pid < 0 ? Map.<String, long[]>of() : FloorThreads.snapshot(pid);
          long cpu0 = servers.cpuNanos(w.target());
          long server = servers.pid(w.target());
          FloorCpu.Reading[] at = new FloorCpu.Reading[2]; // the measured window's ends
          long[] others = new long[2]; // the other servers' CPU at those ends
          long[] compiled = new long[2]; // the server's JIT compiler threads' CPU at those ends
          ClosedLoop.Result r =
              ClosedLoop.run(
                  channelsOf.of(w.target()),
                  concurrency,
                  SETTLE_SECONDS,
                  durationSeconds,
                  w.calls().call(parseAnswers)::accept,
                  () -> {
                    at[0] = FloorCpu.Reading.of(server);
                    others[0] = servers.othersCpuNanos(w.target());
                    compiled[0] = jit.compilerNanos(w.target());
                  },
                  () -> {
                    at[1] = FloorCpu.Reading.of(server);
                    others[1] = servers.othersCpuNanos(w.target());
                    compiled[1] = jit.compilerNanos(w.target());
                  });
          long cpu1 = servers.cpuNanos(w.target());
          cpuByRound.add(w.calls().label(), w.target(), at[0], at[1], r.done(), r.perSecond());
          cpuByRound.others(
              w.calls().label(), w.target(), (others[1] - others[0]) / 1e9 / r.seconds());
          jit.window(w.calls().label(), w.target(), compiled[1] - compiled[0], r.done());
          if (pid >= 0) {
            byThread
                .computeIfAbsent(w, k -> new FloorThreads())
                .add(
                    threads0,
                    FloorThreads.snapshot(pid),
                    r.seconds() / (SETTLE_SECONDS + r.seconds()),
                    r.done());
          }
          Objects.requireNonNull(results.get(w)).add(r);
          // the settle second's calls are not counted: scale the CPU to the measured window
          double secs = SETTLE_SECONDS + r.seconds();
          Objects.requireNonNull(serverCpu.get(w))
              .add(r.done() == 0 ? 0 : (cpu1 - cpu0) / 1e3 * r.seconds() / secs / r.done());
        }
      }
      for (FloorCalls calls : workloads) {
        List<Row> rows = new ArrayList<>();
        for (String target : targetsOf(calls)) {
          Window w = new Window(calls, target);
          pooled.add(
              calls.label(),
              target,
              Objects.requireNonNull(results.get(w)),
              Objects.requireNonNull(results.get(new Window(calls, "noop"))));
          rows.add(
              FloorReport.row(
                  w,
                  Objects.requireNonNull(results.get(w)),
                  Objects.requireNonNull(results.get(new Window(calls, "noop"))),
                  Objects.requireNonNull(serverCpu.get(w)),
                  servers.server(target)));
        }
        out.println(table(rows, channels, concurrency, calls, rounds, durationSeconds, separate));
      }
      if (separate) {
        workloads.forEach(c -> cpuByRound.print(out, c.label()));
      }
      workloads.forEach(c -> jit.print(out, c.label()));
      out.print(jit.verdict());
      byThread.forEach((w, t) -> t.print(out, w.calls().label() + ", " + w.target()));
    }
  }

  /** The generator's channels to each target's server (whose ports land in {@code ports}). */
  private FloorChannels channels(
      FloorTargets servers, List<String> targets, Map<String, Integer> ports) {
    targets.forEach(t -> ports.put(t, servers.port(t)));
    return new FloorChannels(ports, channels, method.sharedClientLoops);
  }

  /** The targets measured for {@code calls}: the workload's, filtered by --targets. */
  private List<String> targetsOf(FloorCalls calls) {
    if (baselineJar != null && !separate) {
      throw new IllegalArgumentException("--baseline-jar needs --separate");
    }
    List<String> all = new ArrayList<>(calls.targets(redis != null, baselineJar != null));
    if (only != null) { // the targets measured only when named
      OPT_IN.stream().filter(only::contains).filter(t -> !all.contains(t)).forEach(all::add);
    }
    return all.stream().filter(t -> t.equals("noop") || only == null || only.contains(t)).toList();
  }

  /** Targets measured only when {@code --targets} names them. */
  static final List<String> OPT_IN =
      List.of("sluice-telemetry", "sluice-unguarded", "sluice-twin", "noop-answers", "noop-twin");

  /** One workload against one target. */
  record Window(FloorCalls calls, String target) {}

  AutoCloseable start(String target, int port) throws IOException {
    // as a lone server (--serve, for h2load) every Sluice uses --redis; in a floor run only
    // sluice-redis does
    String store = serve != null ? redis : null;
    String admit = admitPolicy();
    return switch (target) {
      case "noop", "noop-twin" -> new NoOp(port);
      case "noop-answers" ->
          new FloorReplies.Server(
              answerOptions.answers != null
                  ? FloorReplies.Captured.read(answerOptions.answers)
                  : FloorReplies.capture(admit),
              port);
      case "sluice", "sluice-twin" -> new Sluice(admit, port, store);
      case "sluice-reject" -> new Sluice(REJECT_POLICY, port, store);
      case "sluice-redis" -> new Sluice(admit, port, requireRedis());
      case "sluice-telemetry" ->
          new Sluice(
              admit + TelemetrySink.policy(TelemetrySink.endpoint(otlpEndpoint)), port, store);
      case "sluice-unguarded" -> new Sluice(FloorPolicies.withoutHttp2Guards(admit), port, store);
      default ->
          throw new IllegalArgumentException(
              "target: "
                  + target
                  + " (expected: noop, noop-twin, noop-answers, sluice, sluice-twin, sluice-reject,"
                  + " sluice-redis, sluice-telemetry or sluice-unguarded)");
    };
  }

  private String admitPolicy() {
    return deadlineHeader ? FloorPolicies.ADMIT_WITH_DEADLINE_HEADER : ADMIT_POLICY;
  }

  private String requireRedis() {
    if (redis == null) {
      throw new IllegalArgumentException("sluice-redis needs --redis host:port");
    }
    return redis;
  }

  /** One closed-loop window on {@code chans}: {@code settle} s unmeasured, then {@code seconds}. */
  ClosedLoop.Result drive(FloorCalls calls, List<ManagedChannel> chans, int settle, int seconds)
      throws InterruptedException {
    var call = calls.call(parseAnswers);
    return ClosedLoop.run(chans, concurrency, settle, seconds, call::accept);
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception ignored) {
      // shutting down
    }
  }
}
