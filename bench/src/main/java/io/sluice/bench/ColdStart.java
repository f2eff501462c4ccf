package io.sluice.bench;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.bootstrap.SyntheticStreams;
import io.sluice.config.ConfigLoader;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * First-stream latency after start: launches a fresh server JVM ({@code sluice serve} on the
 * embedded default, loopback ports) {@code --runs} times per mode, warm-up off and on alternating,
 * waits for {@code /readyz} 200, then times the first {@code --streams} ext_proc streams (headers,
 * buffered body, response headers, response body; as Envoy sends them) and, for reference, the same
 * request once the JVM is warm. The client runs in this (already warm) JVM, so the figures are the
 * server's.
 *
 * <pre>java -jar bench/target/sluice-bench.jar coldstart [--runs 10] [--streams 5] [--heap 512m]
 * </pre>
 */
@Command(
    name = "coldstart",
    description =
        "First ext_proc stream latency of a fresh server JVM, warm-up before readiness off vs on.")
final class ColdStart implements Callable<Integer> {
  @Option(names = "--runs", defaultValue = "10", description = "server starts per mode")
  int runs = 10;

  @Option(names = "--streams", defaultValue = "5", description = "first streams timed per start")
  int streams = 5;

  @Option(names = "--heap", defaultValue = "512m", description = "server -Xmx")
  String heap = "512m";

  @Option(names = "--modes", split = ",", defaultValue = "off,on", description = "warm-up modes")
  List<String> modes = List.of("off", "on");

  /** Streams the client runs against an in-process server first (its own JIT, untimed). */
  int clientWarmStreams = 300;

  /** Streams each started server serves before the "warm JVM" reference stream. */
  int warmReferenceAfter = 300;

  /** One server start. */
  record Run(
      String mode,
      long readyNanos,
      long firstDecisionNanos,
      long firstMaxMessageNanos,
      long firstKMaxMessageNanos,
      long warmMaxMessageNanos,
      int admitted) {}

  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofMillis(200)).build();

  /** A request unlike the warm-up's: ~2 KB of prompt the server has never tokenized. */
  static SyntheticStreams.Exchange request(int i) {
    StringBuilder prompt = new StringBuilder("Summarise the following notes, run ").append(i);
    for (int w = 0; w < 300; w++) {
      prompt.append(' ').append(Integer.toString(w * 7919 + i, 36));
    }
    String body =
        "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\""
            + prompt
            + "\"}],\"max_tokens\":256}";
    String answer =
        "{\"id\":\"c\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":"
            + "{\"role\":\"assistant\",\"content\":\"ok\"},\"finish_reason\":\"stop\"}],"
            + "\"usage\":{\"prompt_tokens\":900,\"completion_tokens\":1,\"total_tokens\":901}}";
    return new SyntheticStreams.Exchange(
        "chat " + i, "/v1/chat/completions", body, 200, "application/json", List.of(answer));
  }

  @Override
  public Integer call() throws Exception {
    PrintStream out = System.out;
    List<Run> all = run(out);
    out.println();
    out.print(table(all, runs, streams, heap));
    return 0;
  }

  List<Run> run(PrintStream out) throws Exception {
    warmClient();
    List<Run> all = new ArrayList<>();
    Path tmp = Files.createTempDirectory("sluice-coldstart");
    for (int i = 0; i < runs; i++) {
      for (String mode : modes) {
        Run r = onFreePorts(tmp, mode.equals("on"), i);
        all.add(r);
        out.printf(
            Locale.ROOT,
            "run %d warm-up %-3s ready %5d ms  first stream decided in %6.1f ms, slowest message"
                + " %6.1f ms; first %d: slowest %6.1f ms; warm: %5.2f ms%n",
            i,
            mode,
            r.readyNanos() / 1_000_000,
            r.firstDecisionNanos() / 1e6,
            r.firstMaxMessageNanos() / 1e6,
            streams,
            r.firstKMaxMessageNanos() / 1e6,
            r.warmMaxMessageNanos() / 1e6);
      }
    }
    return all;
  }

  /** The client's own class loading and JIT happen here, against an in-process server. */
  private void warmClient() throws Exception {
    var cfg =
        ConfigLoader.parse(
            ConfigLoader.embeddedDefaultYaml()
                .replace("port: 8081", "port: 0")
                .replace("port: 8080", "port: 0")
                .replace("host: 0.0.0.0", "host: 127.0.0.1")
                .replace("shutdownGrace: 30s", "shutdownGrace: 0s"));
    try (SluiceServer s = SluiceServer.start(cfg)) {
      ManagedChannel ch =
          NettyChannelBuilder.forAddress("127.0.0.1", s.grpcPort()).usePlaintext().build();
      try {
        for (int i = 0; i < clientWarmStreams; i++) {
          SyntheticStreams.run(
              ch, SyntheticStreams.warmupMetadata(), request(1000 + i), Duration.ofSeconds(5));
        }
      } finally {
        ch.shutdownNow();
      }
    }
  }

  /**
   * One start on ports found free; a port another process took between the probe and the child's
   * bind (the server exits with its port code, 3) is a new pair of ports, at most three times.
   */
  private Run onFreePorts(Path tmp, boolean warmup, int index) throws Exception {
    for (int attempt = 1; ; attempt++) {
      try {
        return once(tmp, warmup, index);
      } catch (PortTaken e) {
        if (attempt == 3) {
          throw e;
        }
      }
    }
  }

  /**
   * The server's exit code for a port it cannot bind ({@code sluice serve}, docs/operations.md).
   */
  private static final int EXIT_PORT = 3;

  /** The child server could not bind a port it was given. */
  static final class PortTaken extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    PortTaken(String message) {
      super(message);
    }
  }

  private Run once(Path tmp, boolean warmup, int index) throws Exception {
    int grpc = BenchNet.freePort();
    int admin = BenchNet.freePort();
    Path policy = tmp.resolve("policy-" + index + "-" + warmup + ".yaml");
    Files.writeString(
        policy,
        ConfigLoader.embeddedDefaultYaml()
            .replace(
                "shutdownGrace: 30s", "shutdownGrace: 0s\n  warmup: {enabled: " + warmup + "}"),
        StandardCharsets.UTF_8);
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder pb =
        new ProcessBuilder(
            java,
            "-Xmx" + heap,
            "-XX:+ExitOnOutOfMemoryError",
            "-cp",
            System.getProperty("java.class.path"),
            "io.sluice.bootstrap.Main",
            "serve",
            "--config",
            policy.toString());
    pb.environment().put("GRPC_HOST", "127.0.0.1");
    pb.environment().put("HOST", "127.0.0.1");
    pb.environment().put("GRPC_PORT", Integer.toString(grpc));
    pb.environment().put("PORT", Integer.toString(admin));
    pb.redirectErrorStream(true);
    pb.redirectOutput(tmp.resolve("server-" + index + "-" + warmup + ".log").toFile());
    long t0 = System.nanoTime();
    Process p = pb.start();
    try {
      long ready = awaitReady(admin, t0, p);
      ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", grpc).usePlaintext().build();
      try {
        // the connection first, untimed: Envoy holds its connections open long before requests
        ch.getState(true);
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (ch.getState(true) != io.grpc.ConnectivityState.READY && System.nanoTime() < until) {
          Thread.sleep(1);
        }
        long firstDecision = 0;
        long firstMax = 0;
        long firstKMax = 0;
        int admitted = 0;
        for (int i = 0; i < streams; i++) {
          SyntheticStreams.Result r =
              SyntheticStreams.run(
                  ch, SyntheticStreams.warmupMetadata(), request(i), Duration.ofSeconds(10));
          if (i == 0) {
            firstDecision = r.firstDecisionNanos();
            firstMax = r.maxMessageNanos();
          }
          firstKMax = Math.max(firstKMax, r.maxMessageNanos());
          admitted += r.admitted() ? 1 : 0;
        }
        // the same request once this JVM has served a few hundred
        for (int i = 0; i < warmReferenceAfter; i++) {
          SyntheticStreams.run(
              ch, SyntheticStreams.warmupMetadata(), request(500 + i), Duration.ofSeconds(10));
        }
        SyntheticStreams.Result warm =
            SyntheticStreams.run(
                ch, SyntheticStreams.warmupMetadata(), request(999), Duration.ofSeconds(10));
        return new Run(
            warmup ? "on" : "off",
            ready,
            firstDecision,
            firstMax,
            firstKMax,
            warm.maxMessageNanos(),
            admitted);
      } finally {
        ch.shutdownNow();
      }
    } finally {
      p.destroy();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        p.waitFor(5, TimeUnit.SECONDS);
      }
    }
  }

  private static long awaitReady(int admin, long t0, Process p) throws Exception {
    URI uri = URI.create("http://127.0.0.1:" + admin + "/readyz");
    long deadline = t0 + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      if (!p.isAlive()) {
        int code = p.exitValue();
        String message = "server exited with " + code;
        throw code == EXIT_PORT ? new PortTaken(message) : new IllegalStateException(message);
      }
      try {
        HttpResponse<String> r =
            HTTP.send(
                HttpRequest.newBuilder(uri).timeout(Duration.ofMillis(500)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200) {
          return System.nanoTime() - t0;
        }
      } catch (IOException e) {
        // not listening yet
      }
      Thread.sleep(5);
    }
    throw new IllegalStateException("server not ready within 60 s");
  }

  static String table(List<Run> all, int runs, int streams, String heap) {
    StringBuilder sb = new StringBuilder();
    sb.append(
        String.format(
            Locale.ROOT,
            "%d starts per mode, -Xmx%s, first %d streams timed per start%n%n",
            runs,
            heap,
            streams));
    sb.append(
        "| warm-up | time to ready, median / max | 1st stream: decision, median / max |"
            + " 1st stream: slowest message, median / max | first "
            + streams
            + ": slowest message, median / max | warm JVM: slowest message, median |\n");
    sb.append("|---|---|---|---|---|---|\n");
    for (String mode : List.of("off", "on")) {
      List<Run> rs = all.stream().filter(r -> r.mode().equals(mode)).toList();
      if (rs.isEmpty()) {
        continue;
      }
      sb.append(
          String.format(
              Locale.ROOT,
              "| %s | %s | %s | %s | %s | %.1f ms |%n",
              mode,
              medMax(rs.stream().mapToLong(Run::readyNanos).toArray()),
              medMax(rs.stream().mapToLong(Run::firstDecisionNanos).toArray()),
              medMax(rs.stream().mapToLong(Run::firstMaxMessageNanos).toArray()),
              medMax(rs.stream().mapToLong(Run::firstKMaxMessageNanos).toArray()),
              median(rs.stream().mapToLong(Run::warmMaxMessageNanos).toArray()) / 1e6));
    }
    return sb.toString();
  }

  private static String medMax(long[] v) {
    return String.format(
        Locale.ROOT, "%.1f / %.1f ms", median(v) / 1e6, Arrays.stream(v).max().orElse(0) / 1e6);
  }

  static double median(long[] v) {
    long[] s = v.clone();
    Arrays.sort(s);
    if (s.length == 0) {
      return 0;
    }
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2.0;
  }
}
