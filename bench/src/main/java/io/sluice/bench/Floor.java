package io.sluice.bench;

import static io.sluice.bench.FloorMessages.envoyShapedMessages;
import static io.sluice.bench.FloorMessages.grpcFrame;
import static io.sluice.bench.FloorMessages.request;
import static io.sluice.bench.FloorMessages.rlsRequest;
import static io.sluice.bench.FloorReport.median;
import static io.sluice.bench.FloorReport.quantile;
import static io.sluice.bench.FloorReport.table;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import io.sluice.bench.FloorServers.NoOp;
import io.sluice.bench.FloorServers.Sluice;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The transport floor: the same closed-loop Java generator (one-shot ext_proc streams: request
 * headers with end_of_stream, then half-close) against a no-op ext_proc server (CONTINUE at once,
 * direct executor) and against Sluice's full admission path (admit, and reject), in one process.
 * All three servers run at once; after a warm-up that visits each in turn (the JIT takes about 25 s
 * to settle here), measured windows alternate between them, round after round, so drift in the
 * machine's speed hits every target alike. A target's ratio is the median over rounds of its
 * window's streams/s ÷ the no-op's window of the same round.
 */
@Command(name = "floor", description = "Transport floor: no-op ext_proc vs Sluice, streams/s.")
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
      description = "seconds of warm-up, visiting the targets in turn (default: ${DEFAULT-VALUE})",
      defaultValue = "24")
  int warmupSeconds = 24;

  @Option(
      names = "--duration",
      description = "seconds per measured window (default: ${DEFAULT-VALUE})",
      defaultValue = "5")
  int durationSeconds = 5;

  @Option(
      names = "--rounds",
      description = "measured windows per target, alternating targets (default: ${DEFAULT-VALUE})",
      defaultValue = "4")
  int rounds = 4;

  static final List<String> TARGETS = List.of("noop", "sluice", "sluice-reject");

  /** Warm-up windows, and the settling time of each measured window, in seconds. */
  private static final int WARM_WINDOW_SECONDS = 2;

  private static final int SETTLE_SECONDS = 1;

  @Option(
      names = "--serve",
      description =
          "only serve (noop, sluice or sluice-reject) on --port until killed (for h2load)")
  String serve;

  @Option(
      names = "--shape",
      description =
          "oneshot: request_headers + half-close (the transport floor); envoy: request"
              + " headers, buffered body, response headers, response body, then a reset, as"
              + " Envoy drives a BUFFERED/STREAMED LLM request (default: ${DEFAULT-VALUE})",
      defaultValue = "oneshot")
  String shape = "oneshot";

  @Option(names = "--port", defaultValue = "50051")
  int port = 50051;

  @Option(
      names = "--redis",
      description =
          "with --serve sluice: the store is the Redis at host:port (BACKEND_TYPE=redis), so the"
              + " rate limit service counts there and the pool is leased as a replica share")
  String redis;

  @Option(
      names = "--dump-dir",
      description =
          "write pre-encoded gRPC request frames for h2load (extproc_request_headers.grpc,"
              + " rls_request.grpc) to this directory")
  Path dumpDir;

  @Option(
      names = "--deadline-header",
      description =
          "with --serve sluice: the admit answer sets x-sluice-deadline-ms on the upstream request"
              + " (the product's default); without it the floor's admit carries no header"
              + " mutation, as with decisionHeader off")
  boolean deadlineHeader;

  private static final String ANSWER_DECORATIONS =
      "responses: {decisionHeader: false, estimateHeader: false}";

  /** {@code policy} with no deadline header on the admitted request. */
  static String withoutDeadlineHeader(String policy) {
    String out =
        policy.replace(
            ANSWER_DECORATIONS,
            "responses: {decisionHeader: false, estimateHeader: false, deadlineHeader: \"\"}");
    if (out.equals(policy)) {
      throw new IllegalStateException("bench policy changed shape; update Floor");
    }
    return out;
  }

  static final String ADMIT_POLICY_WITH_DEADLINE_HEADER =
      Policies.policy(
          1_000_000_000_000L,
          0,
          0,
          """
            interactive: {rank: 0, reservedShare: 1.0, borrow: true, deadline: 8s,
                          defaultOutputTokens: 256}
          """,
          "interactive");

  /**
   * The floor's admit: no header mutation (decision, estimate and deadline headers off), so the
   * answer is the transport's and the admission path's, not the answer's optional decorations.
   */
  static final String ADMIT_POLICY = withoutDeadlineHeader(ADMIT_POLICY_WITH_DEADLINE_HEADER);

  static final String REJECT_POLICY =
      Policies.policy(
          1_000_000_000_000L,
          0,
          0,
          """
            interactive: {rank: 0, reservedShare: 0.0, borrow: false, deadline: 8s,
                          defaultOutputTokens: 256}
          """,
          "interactive");

  /**
   * Result of one target over all rounds.
   *
   * @param streamsPerSecond median over rounds
   * @param ratio median over rounds of this target's streams/s ÷ the no-op's in the same round
   * @param minRatio smallest per-round ratio
   * @param maxRatio largest per-round ratio
   * @param latencyMicros client latency, all measured windows
   * @param cpuCores mean process CPU over the measured windows
   */
  record Row(
      String target,
      double streamsPerSecond,
      double ratio,
      double minRatio,
      double maxRatio,
      Histogram latencyMicros,
      double cpuCores,
      String serverDecisionP50,
      String serverDecisionP99,
      long errors) {}

  @Override
  public Integer call() throws Exception {
    PrintStream out = System.out;
    if (dumpDir != null) {
      Files.createDirectories(dumpDir);
      Path ext = dumpDir.resolve("extproc_request_headers.grpc");
      Path rls = dumpDir.resolve("rls_request.grpc");
      Files.write(ext, grpcFrame(request().toByteArray()));
      Files.write(rls, grpcFrame(rlsRequest().toByteArray()));
      out.println("wrote " + ext + " and " + rls);
      return 0;
    }
    if (serve != null) {
      AutoCloseable s = start(serve, port);
      out.println("serving " + serve + " on 127.0.0.1:" + port + "; Ctrl-C to stop");
      Runtime.getRuntime().addShutdownHook(new Thread(() -> closeQuietly(s)));
      new CountDownLatch(1).await();
      return 0;
    }
    Map<String, AutoCloseable> servers = new LinkedHashMap<>();
    Map<String, List<ManagedChannel>> channelsOf = new LinkedHashMap<>();
    // The generator's own event loops: on grpc's shared group the client and server ends of a
    // connection could land on one thread, which then bounds that target's rate while the other
    // threads idle (some JVM runs measured Sluice at 0.6 with the process below 1.7 cores).
    clientLoops = newClientLoops();
    try {
      for (String target : TARGETS) {
        AutoCloseable server = start(target, 0);
        servers.put(target, server);
        channelsOf.put(target, channels(portOf(server)));
      }
      out.printf(
          Locale.ROOT,
          "warming up %d s, then %d rounds of %d s per target (%d cores)...%n",
          warmupSeconds,
          rounds,
          durationSeconds,
          Runtime.getRuntime().availableProcessors());
      long warmEnd = System.nanoTime() + warmupSeconds * 1_000_000_000L;
      while (System.nanoTime() - warmEnd < 0) {
        for (String target : TARGETS) {
          drive(channelsOf.get(target), 0, WARM_WINDOW_SECONDS);
        }
      }
      Map<String, List<ClosedLoop.Result>> windows = new LinkedHashMap<>();
      TARGETS.forEach(t -> windows.put(t, new ArrayList<>()));
      for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < TARGETS.size(); i++) {
          String target = TARGETS.get((i + round) % TARGETS.size()); // rotate who goes first
          windows.get(target).add(drive(channelsOf.get(target), SETTLE_SECONDS, durationSeconds));
        }
      }
      List<Row> rows = new ArrayList<>();
      for (String target : TARGETS) {
        rows.add(row(target, windows.get(target), windows.get("noop"), servers.get(target)));
      }
      out.println(table(rows, channels, concurrency, shape, rounds, durationSeconds));
    } finally {
      channelsOf.values().forEach(l -> l.forEach(ManagedChannel::shutdownNow));
      servers.values().forEach(Floor::closeQuietly);
      clientLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
    return 0;
  }

  private static int portOf(AutoCloseable server) {
    return server instanceof Sluice s ? s.server.grpcPort() : ((NoOp) server).server.getPort();
  }

  private Row row(
      String target,
      List<ClosedLoop.Result> mine,
      List<ClosedLoop.Result> noop,
      AutoCloseable server) {
    double[] rates = new double[mine.size()];
    double[] ratios = new double[mine.size()];
    Histogram latency = new Histogram(60_000_000L, 3);
    double cpu = 0;
    long errors = 0;
    for (int i = 0; i < mine.size(); i++) {
      rates[i] = mine.get(i).perSecond();
      ratios[i] = mine.get(i).perSecond() / noop.get(i).perSecond();
      latency.add(mine.get(i).latencyMicros());
      cpu += mine.get(i).cpuCores() / mine.size();
      errors += mine.get(i).errors();
    }
    String p50 = "-";
    String p99 = "-";
    if (server instanceof Sluice s) {
      String scrape = s.server.registry().scrape();
      String decision = target.equals("sluice") ? "admit" : "reject";
      String phase = shape.equals("envoy") ? "body" : "headers";
      p50 = quantile(scrape, decision, phase, "0.5");
      p99 = quantile(scrape, decision, phase, "0.99");
    }
    return new Row(
        target,
        median(rates),
        median(ratios),
        Arrays.stream(ratios).min().orElse(Double.NaN),
        Arrays.stream(ratios).max().orElse(Double.NaN),
        latency,
        cpu,
        p50,
        p99,
        errors);
  }

  AutoCloseable start(String target, int port) throws IOException {
    return switch (target) {
      case "noop" -> new NoOp(port);
      case "sluice" ->
          new Sluice(
              deadlineHeader ? ADMIT_POLICY_WITH_DEADLINE_HEADER : ADMIT_POLICY, port, redis);
      case "sluice-reject" -> new Sluice(REJECT_POLICY, port, redis);
      default ->
          throw new IllegalArgumentException(
              "target: " + target + " (expected: noop, sluice or sluice-reject)");
    };
  }

  private EventLoopGroup clientLoops;

  /** Two client event loops (epoll where available, as grpc's shared group uses). */
  private static EventLoopGroup newClientLoops() {
    return Epoll.isAvailable() ? new EpollEventLoopGroup(2) : new NioEventLoopGroup(2);
  }

  private List<ManagedChannel> channels(int port) {
    List<ManagedChannel> chans = new ArrayList<>();
    for (int i = 0; i < channels; i++) {
      chans.add(
          NettyChannelBuilder.forAddress("127.0.0.1", port)
              .eventLoopGroup(clientLoops)
              .channelType(
                  clientLoops instanceof EpollEventLoopGroup
                      ? EpollSocketChannel.class
                      : NioSocketChannel.class)
              .usePlaintext()
              .directExecutor()
              .flowControlWindow(1 << 20)
              .build());
    }
    return chans;
  }

  /** One closed-loop window on {@code chans}: {@code settle} s unmeasured, then {@code seconds}. */
  ClosedLoop.Result drive(List<ManagedChannel> chans, int settle, int seconds)
      throws InterruptedException {
    ProcessingRequest req = request();
    Metadata.Key<String> tenantKey =
        Metadata.Key.of("x-sluice-tenant", Metadata.ASCII_STRING_MARSHALLER);
    List<ProcessingRequest> envoyShape = envoyShapedMessages();
    return ClosedLoop.run(
        chans,
        concurrency,
        settle,
        seconds,
        shape.equals("envoy")
            ? (ch, finish) -> envoyLikeStream(ch, tenantKey, envoyShape, finish)
            : (ch, finish) -> {
              ClientCall<ProcessingRequest, ProcessingResponse> call =
                  ch.newCall(ExternalProcessorGrpc.getProcessMethod(), CallOptions.DEFAULT);
              call.start(
                  new ClientCall.Listener<>() {
                    @Override
                    public void onClose(Status status, Metadata trailers) {
                      finish.accept(status.isOk());
                    }
                  },
                  metadata(tenantKey));
              call.request(2);
              call.sendMessage(req);
              call.halfClose();
            });
  }

  /**
   * One Envoy-like stream: each message is sent when the previous one was answered; after the last
   * answer the client resets the stream (Envoy's close), which ends it CANCELLED.
   */
  private static void envoyLikeStream(
      io.grpc.Channel ch,
      Metadata.Key<String> tenantKey,
      List<ProcessingRequest> messages,
      java.util.function.Consumer<Boolean> finish) {
    ClientCall<ProcessingRequest, ProcessingResponse> call =
        ch.newCall(ExternalProcessorGrpc.getProcessMethod(), CallOptions.DEFAULT);
    int[] answered = {0};
    boolean[] refused = {false};
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onMessage(ProcessingResponse message) {
            answered[0]++;
            refused[0] = message.hasImmediateResponse();
            if (refused[0] || answered[0] == messages.size()) {
              call.cancel("end of request", null);
            } else {
              call.sendMessage(messages.get(answered[0]));
              call.request(1);
            }
          }

          @Override
          public void onClose(Status status, Metadata trailers) {
            finish.accept(refused[0] || answered[0] == messages.size()); // refused = answered
          }
        },
        metadata(tenantKey));
    call.request(1);
    call.sendMessage(messages.get(0));
  }

  /** A fresh Metadata per call: grpc takes ownership of the headers object. */
  private static Metadata metadata(Metadata.Key<String> tenantKey) {
    Metadata md = new Metadata();
    md.put(tenantKey, "acme");
    return md;
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception ignored) {
      // shutting down
    }
  }
}
