package io.sluice.bench;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sluice.bench.FloodLoad.Kind;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Floods a Sluice server (a child JVM with {@code -Xmx768m}, like a 768 MiB pod's heap bound plus
 * headroom, {@code -XX:+ExitOnOutOfMemoryError} as in the image) from outside, one mode at a time,
 * while a legitimate load runs alongside: (a) idle ext_proc streams that never send a message, (b)
 * malformed ext_proc frames after a valid request-headers message, (c) RLS calls whose descriptor
 * value is unique and large (as Envoy copies request headers into descriptors). Each mode runs in a
 * fresh server: warm-up, then a baseline phase (legitimate load only) and a flood phase (the same
 * load plus the flood) of the same length, side by side. Reported per mode: heap used after GC and
 * the heap's max, the highest heap seen during the flood, whether gRPC health and {@code /healthz}
 * kept answering, and the legitimate requests' goodput in both phases with their ratio. Loopback
 * only; every loop is bounded by its duration and its outstanding-call cap.
 *
 * <pre>java -jar bench/target/sluice-bench.jar flood [--modes rls-keys,idle-streams,malformed]
 * </pre>
 */
@Command(
    name = "flood",
    description =
        "Flood a Sluice child JVM (-Xmx768m): idle ext_proc streams, malformed frames, unique large"
            + " RLS keys; heap, health and legitimate goodput vs a baseline.")
final class Flood implements Callable<Integer> {
  @Option(
      names = "--modes",
      split = ",",
      defaultValue = "rls-keys,idle-streams,malformed",
      description = "rls-keys, idle-streams, malformed (default: ${DEFAULT-VALUE})")
  List<String> modes = List.of("rls-keys", "idle-streams", "malformed");

  @Option(names = "--duration", defaultValue = "20", description = "seconds per phase")
  int durationSeconds = 20;

  @Option(names = "--warmup", defaultValue = "5", description = "seconds of legitimate warm-up")
  int warmupSeconds = 5;

  @Option(names = "--rls-rate", defaultValue = "2000", description = "unique RLS keys per second")
  int rlsRate = 2000;

  @Option(names = "--value-bytes", defaultValue = "8192", description = "RLS descriptor value size")
  int valueBytes = 8192;

  @Option(names = "--idle-rate", defaultValue = "1000", description = "idle streams opened per s")
  int idleRate = 1000;

  @Option(names = "--malformed-rate", defaultValue = "2000", description = "malformed frames per s")
  int malformedRate = 2000;

  @Option(
      names = "--flood-connections",
      defaultValue = "1",
      description =
          "connections the flood is spread over (each is held to the server's"
              + " maxStreamsPerConnection by HTTP/2; more reach server.grpc.maxStreams)")
  int floodConnections = 1;

  @Option(names = "--heap", defaultValue = "768m", description = "child -Xmx")
  String heap = "768m";

  @Option(names = "--legit-concurrency", defaultValue = "4", description = "per legit load kind")
  int legitConcurrency = 4;

  @Option(
      names = "--memory-max-bytes",
      description =
          "SLUICE_RLS_MEMORY_MAX_BYTES of the server (default: the server's own, 64MiB); e.g."
              + " 1024GiB to see the flood without the bound")
  @Nullable String memoryMaxBytes;

  @Option(names = "--server-arg", description = "extra JVM/system args for the child")
  List<String> serverArgs = new ArrayList<>();

  private final PrintStream out = System.out;

  /** One mode's figures. */
  record Result(
      String mode,
      String flood,
      String floodOutcome,
      double heapBaselineMiB,
      double heapFloodMiB,
      double heapPeakMiB,
      double heapMaxMiB,
      String storeBytes,
      String grpcHealth,
      String httpHealth,
      double extprocBaseline,
      double extprocFlood,
      double rlsBaseline,
      double rlsFlood,
      boolean serverAlive) {}

  @Override
  public Integer call() throws Exception {
    out.printf(
        Locale.ROOT,
        "Flood: Sluice in a child JVM (-Xmx%s, G1, ExitOnOutOfMemoryError); per mode %d s"
            + " warm-up, %d s baseline, %d s flood; legitimate load: %d ext_proc streams and %d"
            + " RLS calls in flight (closed loops, 1 s deadline); %d cores%n%n",
        heap,
        warmupSeconds,
        durationSeconds,
        durationSeconds,
        legitConcurrency,
        legitConcurrency,
        Runtime.getRuntime().availableProcessors());
    List<Result> results = new ArrayList<>();
    for (String m : modes) {
      results.add(runMode(m));
    }
    out.println(
        "| mode | flood | flood answers | heap after GC: baseline → flood (MiB) | heap peak /"
            + " max (MiB) | RLS store bytes | gRPC health ok | /healthz ok | ext_proc goodput/s:"
            + " baseline → flood (ratio) | RLS goodput/s: baseline → flood (ratio) |");
    out.println("|---|---|---|---|---|---|---|---|---|---|");
    for (Result r : results) {
      out.printf(
          Locale.ROOT,
          "| %s | %s | %s | %.0f → %.0f | %.0f / %.0f | %s | %s | %s | %.0f → %.0f (%.2f) |"
              + " %.0f → %.0f (%.2f) |%n",
          r.mode()
              + (memoryMaxBytes == null ? "" : " (bound " + memoryMaxBytes + ")")
              + (r.serverAlive() ? "" : " (server died)"),
          r.flood(),
          r.floodOutcome(),
          r.heapBaselineMiB(),
          r.heapFloodMiB(),
          r.heapPeakMiB(),
          r.heapMaxMiB(),
          r.storeBytes(),
          r.grpcHealth(),
          r.httpHealth(),
          r.extprocBaseline(),
          r.extprocFlood(),
          ratio(r.extprocFlood(), r.extprocBaseline()),
          r.rlsBaseline(),
          r.rlsFlood(),
          ratio(r.rlsFlood(), r.rlsBaseline()));
    }
    return 0;
  }

  private static double ratio(double a, double b) {
    return b == 0 ? 0 : a / b;
  }

  private Result runMode(String mode) throws Exception {
    int grpcPort = BenchNet.freePort();
    int adminPort = BenchNet.freePort();
    Path dir = Files.createTempDirectory("sluice-flood");
    Files.createDirectories(dir.resolve("rls/config"));
    Files.writeString(
        dir.resolve("rls/config/flood.yaml"),
        """
        domain: flood
        descriptors:
          - key: user
            rate_limit: {unit: minute, requests_per_unit: 1000000000}
          - key: header
            rate_limit: {unit: minute, requests_per_unit: 100}
        """);
    String policy =
        Policies.policy(
                1_000_000_000L,
                1_000_000,
                1000,
                "  interactive: {rank: 0, reservedShare: 1.0, borrow: true, defaultOutputTokens:"
                    + " 1}\n",
                "interactive")
            .replace("grpc: {host: 127.0.0.1, port: 0}", "grpc: {host: 127.0.0.1, port: %d}")
            .replace("admin: {host: 127.0.0.1, port: 0}", "admin: {host: 127.0.0.1, port: %d}")
            .replace(
                "rateLimit: {enabled: false}",
                "rateLimit:\n  env: {RUNTIME_ROOT: %s, RUNTIME_WATCH_ROOT: \"false\","
                    + " BACKEND_TYPE: memory"
                    + (memoryMaxBytes == null
                        ? ""
                        : ", SLUICE_RLS_MEMORY_MAX_BYTES: \"" + memoryMaxBytes + "\"")
                    + "}")
            .formatted(grpcPort, adminPort, dir.resolve("rls"));
    Path file = dir.resolve("policy.yaml");
    Files.writeString(file, policy);
    String java = ProcessHandle.current().info().command().orElse("java");
    Path jcmd = Path.of(java).resolveSibling("jcmd");
    List<String> cmd = new ArrayList<>();
    cmd.add(java);
    cmd.add("-Xmx" + heap);
    cmd.add("-XX:+UseG1GC");
    cmd.add("-XX:+ExitOnOutOfMemoryError");
    cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
    cmd.addAll(serverArgs);
    cmd.addAll(
        List.of(
            "-cp",
            System.getProperty("java.class.path"),
            "io.sluice.bootstrap.Main",
            "serve",
            "--config",
            file.toString()));
    Process child =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("server.log").toFile())
            .start();
    List<ManagedChannel> chans = new ArrayList<>();
    try {
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
      String admin = "http://127.0.0.1:" + adminPort;
      waitUntilUp(http, admin + "/metrics");
      for (int i = 0; i < 4; i++) {
        chans.add(
            NettyChannelBuilder.forAddress("127.0.0.1", grpcPort)
                .usePlaintext()
                .maxInboundMessageSize(16 << 20)
                .build());
      }
      ManagedChannel healthChan =
          NettyChannelBuilder.forAddress("127.0.0.1", grpcPort).usePlaintext().build();
      List<ManagedChannel> floodChans = new ArrayList<>();
      for (int i = 0; i < Math.max(1, floodConnections); i++) {
        floodChans.add(
            NettyChannelBuilder.forAddress("127.0.0.1", grpcPort).usePlaintext().build());
      }
      chans.add(healthChan);
      chans.addAll(floodChans);

      LegitLoad legit = new LegitLoad(chans.subList(0, 4), legitConcurrency);
      legit.start();
      sleepSeconds(warmupSeconds);
      legit.reset();
      sleepSeconds(durationSeconds);
      double[] base = legit.rates();
      double heapBase = heapAfterGc(http, admin + "/metrics", jcmd, child.pid());

      legit.reset();
      HealthProbe probe = new HealthProbe(healthChan, http, admin + "/healthz");
      probe.start();
      HeapSampler sampler = new HeapSampler(http, admin + "/metrics");
      sampler.start();
      FloodLoad flood =
          switch (mode) {
            case "rls-keys" -> new FloodLoad(floodChans, rlsRate, durationSeconds, Kind.RLS);
            case "idle-streams" -> new FloodLoad(floodChans, idleRate, durationSeconds, Kind.IDLE);
            case "malformed" ->
                new FloodLoad(floodChans, malformedRate, durationSeconds, Kind.MALFORMED);
            default -> throw new IllegalArgumentException("mode: " + mode);
          };
      flood.valueBytes = valueBytes;
      flood.run(); // blocks for the phase
      double[] during = legit.rates();
      probe.stop();
      sampler.stop();
      boolean alive = child.isAlive();
      double heapFlood = alive ? heapAfterGc(http, admin + "/metrics", jcmd, child.pid()) : 0;
      String scrape = alive ? get(http, admin + "/metrics") : "";
      double heapMax =
          HeapPerQueuedItem.sum(
              scrape, "jvm_memory_max_bytes\\{area=\"heap\"[^}]*\\} ([0-9.eE+-]+)");
      double storeBytes =
          HeapPerQueuedItem.sum(scrape, "sluice_rls_store_memory_bytes\\{[^}]*\\} ([0-9.eE+-]+)");
      double evictions =
          HeapPerQueuedItem.sum(
              scrape,
              "sluice_rls_store_memory_evictions_total\\{[^}]*state=\"live\"[^}]*\\}"
                  + " ([0-9.eE+-]+)");
      legit.stop();
      String outcome = flood.outcome(); // before the client cancels what is still open
      if (flood.kind == Kind.IDLE && alive) {
        outcome +=
            String.format(
                Locale.ROOT,
                "; server: %.0f refused max_streams, %.0f ended first_message_timeout",
                HeapPerQueuedItem.sum(
                    scrape,
                    "sluice_extproc_streams_refused_total\\{[^}]*reason=\"max_streams\"[^}]*\\}"
                        + " ([0-9.eE+-]+)"),
                HeapPerQueuedItem.sum(
                    scrape,
                    "sluice_extproc_stream_errors_total\\{[^}]*cause=\"first_message_timeout\"[^}]*\\}"
                        + " ([0-9.eE+-]+)"));
      }
      flood.closeAll();
      return new Result(
          mode,
          flood.describe(),
          outcome,
          heapBase / (1 << 20),
          heapFlood / (1 << 20),
          sampler.peak() / (1 << 20),
          heapMax / (1 << 20),
          scrape.contains("sluice_rls_store_memory_bytes")
              ? String.format(
                  Locale.ROOT, "%.1f MiB, %.0f live evictions", storeBytes / (1 << 20), evictions)
              : "n/a",
          probe.grpc(),
          probe.http(),
          base[0],
          during[0],
          base[1],
          during[1],
          alive);
    } finally {
      chans.forEach(ManagedChannel::shutdownNow);
      child.destroy();
      if (!child.waitFor(10, TimeUnit.SECONDS)) {
        child.destroyForcibly();
      }
    }
  }

  private static long heapAfterGc(HttpClient http, String url, Path jcmd, long pid)
      throws Exception {
    for (int i = 0; i < 2; i++) {
      new ProcessBuilder(jcmd.toString(), Long.toString(pid), "GC.run")
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.DISCARD)
          .start()
          .waitFor(30, TimeUnit.SECONDS);
      Thread.sleep(500);
    }
    return (long)
        HeapPerQueuedItem.sum(
            get(http, url), "jvm_memory_used_bytes\\{area=\"heap\"[^}]*\\} ([0-9.eE+-]+)");
  }

  static String get(HttpClient http, String url) throws Exception {
    return http.send(
            HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).GET().build(),
            HttpResponse.BodyHandlers.ofString())
        .body();
  }

  private static void waitUntilUp(HttpClient http, String url) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() - deadline < 0) {
      try {
        get(http, url);
        return;
      } catch (Exception e) {
        Thread.sleep(100);
      }
    }
    throw new IllegalStateException("Sluice did not start within 30 s");
  }

  private static void sleepSeconds(int s) throws InterruptedException {
    Thread.sleep(s * 1000L);
  }
}
