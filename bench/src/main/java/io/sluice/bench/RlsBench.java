package io.sluice.bench;

import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.time.Ticker;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ShouldRateLimit} decisions per second and client-side p50/p99 with 1 and 10 descriptors
 * per request, in-memory and Redis backends, through Sluice's real gRPC server (closed loop,
 * loopback, one JVM). Every descriptor matches a limit that never trips, so every call counts in
 * the store (Redis: one pipelined INCRBY + EXPIRE per descriptor).
 *
 * <pre>java -jar bench/target/sluice-bench.jar rls [--backend memory,redis] [--descriptors 1,10]
 * </pre>
 */
@Command(
    name = "rls",
    description =
        "Rate limit service: decisions/s and p50/p99, 1 and 10 descriptors, memory and Redis.")
final class RlsBench implements Callable<Integer> {
  @Option(names = "--backend", split = ",", defaultValue = "memory,redis")
  List<String> backends = List.of("memory", "redis");

  @Option(names = "--descriptors", split = ",", defaultValue = "1,10")
  List<Integer> descriptorCounts = List.of(1, 10);

  @Option(names = "--duration", defaultValue = "10", description = "seconds measured")
  int durationSeconds = 10;

  @Option(names = "--warmup", defaultValue = "5", description = "seconds of warm-up")
  int warmupSeconds = 5;

  @Option(names = "--channels", defaultValue = "4")
  int channels = 4;

  @Option(names = "--concurrency", defaultValue = "32", description = "calls in flight per channel")
  int concurrency = 32;

  @Option(names = "--redis", defaultValue = "127.0.0.1:6379")
  String redisUrl = "127.0.0.1:6379";

  private final PrintStream out = System.out;

  @Override
  public Integer call() throws Exception {
    out.printf(
        Locale.ROOT,
        "Rate limit service, Java generator: %d channels x %d calls in flight, closed loop,"
            + " %d s warm-up, %d s measured; %d cores%n%n",
        channels,
        concurrency,
        warmupSeconds,
        durationSeconds,
        Runtime.getRuntime().availableProcessors());
    out.println(
        "| backend | descriptors | calls/s | descriptor checks/s | p50 | p99 | OVER_LIMIT | errors |");
    out.println("|---|---|---|---|---|---|---|---|");
    for (String backend : backends) {
      for (int n : descriptorCounts) {
        out.println(run(backend, n));
      }
    }
    return 0;
  }

  private String run(String backend, int descriptors) throws Exception {
    Path root = Files.createTempDirectory("sluice-rls-bench");
    Files.createDirectories(root.resolve("config"));
    StringBuilder yaml = new StringBuilder("domain: bench\ndescriptors:\n");
    for (int i = 0; i < 10; i++) {
      yaml.append("  - key: d").append(i).append('\n');
      yaml.append("    rate_limit: {unit: second, requests_per_unit: 1000000000}\n");
    }
    Files.writeString(root.resolve("config/bench.yaml"), yaml.toString());
    String prefix = "rlsbench_" + UUID.randomUUID().toString().substring(0, 8) + "_";
    String policy =
        """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
        pools: {p: {capacity: 1000}}
        classes: {c: {reservedShare: 1.0}}
        """;
    Map<String, String> env =
        Map.of(
            "RUNTIME_ROOT", root.toString(),
            "RUNTIME_WATCH_ROOT", "false",
            "BACKEND_TYPE", backend,
            "REDIS_URL", redisUrl,
            "CACHE_KEY_PREFIX", prefix);
    try (SluiceServer server =
        SluiceServer.start(
            ConfigLoader.parse(policy),
            new SluiceServer.Options(null, env, Ticker.system(), Clock.systemUTC()))) {
      if (!server.awaitRateLimitStore(Duration.ofSeconds(10))) {
        return "| " + backend + " | " + descriptors + " | store not reachable | | | | | |";
      }
      return drive(server.grpcPort(), backend, descriptors);
    }
  }

  private String drive(int port, String backend, int descriptors) throws InterruptedException {
    List<ManagedChannel> chans = new ArrayList<>();
    for (int i = 0; i < channels; i++) {
      chans.add(
          NettyChannelBuilder.forAddress("127.0.0.1", port)
              .usePlaintext()
              .directExecutor()
              .build());
    }
    List<RateLimitRequest> requests = new ArrayList<>();
    for (int t = 0; t < 100; t++) { // 100 tenants: 100 keys per descriptor
      RateLimitRequest.Builder b = RateLimitRequest.newBuilder().setDomain("bench");
      for (int i = 0; i < descriptors; i++) {
        b.addDescriptors(
            RateLimitDescriptor.newBuilder()
                .addEntries(
                    RateLimitDescriptor.Entry.newBuilder().setKey("d" + i).setValue("t" + t)));
      }
      requests.add(b.build());
    }
    AtomicLong overLimit = new AtomicLong();
    ClosedLoop.Result r =
        ClosedLoop.run(
            chans,
            concurrency,
            warmupSeconds,
            durationSeconds,
            (ch, finish) -> {
              ClientCall<RateLimitRequest, RateLimitResponse> call =
                  ch.newCall(RateLimitServiceGrpc.getShouldRateLimitMethod(), CallOptions.DEFAULT);
              call.start(
                  new ClientCall.Listener<>() {
                    @Override
                    public void onMessage(RateLimitResponse response) {
                      if (response.getOverallCode() == RateLimitResponse.Code.OVER_LIMIT) {
                        overLimit.incrementAndGet();
                      }
                    }

                    @Override
                    public void onClose(Status status, Metadata trailers) {
                      finish.accept(status.isOk());
                    }
                  },
                  new Metadata());
              call.request(1);
              call.sendMessage(requests.get(ThreadLocalRandom.current().nextInt(requests.size())));
              call.halfClose();
            });
    chans.forEach(ManagedChannel::shutdownNow);
    Histogram copy = r.latencyMicros();
    long errorsCount = r.errors();
    double rate = r.perSecond();
    return String.format(
        Locale.ROOT,
        "| %s | %d | %.0f | %.0f | %d µs | %d µs | %d | %d |",
        backend,
        descriptors,
        rate,
        rate * descriptors,
        copy.getValueAtPercentile(50),
        copy.getValueAtPercentile(99),
        overLimit.get(),
        errorsCount);
  }
}
