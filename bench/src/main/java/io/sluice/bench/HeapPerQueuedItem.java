package io.sluice.bench;

import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Holds N requests in Sluice's queue and reports the server's heap per held request. Sluice runs in
 * a child JVM (same classpath) so the client's own stream state is not counted; heap is read from
 * Sluice's {@code /metrics} ({@code jvm_memory_used_bytes{area="heap"}}) after {@code jcmd GC.run},
 * before and after the streams are held. The figure includes everything a held request costs the
 * server: the HTTP/2 stream, the gRPC call, the ext_proc stream state, the queue item.
 */
@Command(name = "heap", description = "Heap per queued request (10,000 held in Sluice).")
final class HeapPerQueuedItem implements Callable<Integer> {
  @Option(names = "--items", defaultValue = "10000")
  int items = 10_000;

  @Option(names = "--tenants", defaultValue = "500")
  int tenants = 500;

  @Option(
      names = "--heap",
      description = "child -Xmx (default: ${DEFAULT-VALUE})",
      defaultValue = "512m")
  String heap = "512m";

  @Option(
      names = "--admit",
      description =
          "admit every request instead (open streams holding permits, nothing queued): the"
              + " baseline cost of an open ext_proc stream")
  boolean admit;

  @Option(
      names = "--idle",
      description =
          "open streams that send nothing (no request_headers): what an idle-stream flood costs;"
              + " the first-message timeout is turned off for the run")
  boolean idle;

  @Override
  public Integer call() throws Exception {
    PrintStream out = System.out;
    int grpcPort = BenchNet.freePort();
    int adminPort = BenchNet.freePort();
    String policy =
        Policies.policy(
                admit ? 100_000_000 : 20_000,
                admit ? 1_000_000 : 1,
                60_000,
                """
                  interactive: {rank: 0, reservedShare: 1.0, borrow: true, deadline: 600s,
                                maxQueueWait: 50s, defaultOutputTokens: 1,
                                queue: {maxItems: 1000000, workShare: 2.0, tenantShare: 1.0}}
                """,
                "interactive")
            .replace(
                "grpc: {host: 127.0.0.1, port: 0}",
                "grpc: {host: 127.0.0.1, port: "
                    + grpcPort
                    + ", maxStreams: 10000000, maxStreamsPerConnection: 10000000"
                    + (idle ? ", firstMessageTimeout: 0s" : "")
                    + "}")
            .replace(
                "admin: {host: 127.0.0.1, port: 0}",
                "admin: {host: 127.0.0.1, port: " + adminPort + "}");
    Path file = Files.createTempFile("sluice-heap", ".yaml");
    Files.writeString(file, policy);
    String java = ProcessHandle.current().info().command().orElse("java");
    Path jcmd = Path.of(java).resolveSibling("jcmd");
    Process child =
        new ProcessBuilder(
                java,
                "-Xmx" + heap,
                "-XX:+UseG1GC",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                System.getProperty("java.class.path"),
                "io.sluice.bootstrap.Main",
                "serve",
                "--config",
                file.toString())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    List<ManagedChannel> chans = new ArrayList<>();
    try {
      HttpClient http = HttpClient.newHttpClient();
      String metricsUrl = "http://127.0.0.1:" + adminPort + "/metrics";
      waitUntilUp(http, metricsUrl);
      for (int i = 0; i < 8; i++) {
        chans.add(
            NettyChannelBuilder.forAddress("127.0.0.1", grpcPort)
                .usePlaintext()
                .directExecutor()
                .build());
      }
      AtomicLong continued = new AtomicLong();
      AtomicLong overrides = new AtomicLong();
      AtomicLong closed = new AtomicLong();
      List<ClientCall<ProcessingRequest, ProcessingResponse>> calls = new ArrayList<>();
      // the one request that takes the only permit (maxRequests 1), held open
      calls.add(open(chans.get(0), "warm", continued, overrides, closed, true));
      awaitCount(continued, 1);
      long before = heapAfterGc(http, metricsUrl, jcmd, child.pid());
      for (int i = 0; i < items; i++) {
        calls.add(
            open(
                chans.get(i % chans.size()),
                "t" + (i % tenants),
                continued,
                overrides,
                closed,
                !idle));
      }
      if (idle) {
        awaitOpenStreams(http, metricsUrl, items + 1);
      } else {
        awaitCount(admit ? continued : overrides, admit ? items + 1 : items);
      }
      String scrape = get(http, metricsUrl);
      long depth = (long) sum(scrape, "sluice_queue_depth\\{[^}]*\\} ([0-9.eE+-]+)");
      long after = heapAfterGc(http, metricsUrl, jcmd, child.pid());
      double perItem = (after - before) / (double) items;
      out.printf(
          Locale.ROOT,
          "%s %d requests (queue depth %d, %d overrides, %d closed early) from %d tenants%n"
              + "Sluice heap after GC: %.1f MB before, %.1f MB held -> %.1f MB for %d held"
              + " requests = %.0f bytes per request%n",
          idle
              ? "idle (streams open, nothing sent)"
              : admit ? "admitted (streams open, permits held)" : "held in the queue",
          items,
          depth,
          overrides.get(),
          closed.get(),
          tenants,
          before / 1e6,
          after / 1e6,
          (after - before) / 1e6,
          items,
          perItem);
      calls.forEach(c -> c.cancel("done", null));
      return 0;
    } finally {
      chans.forEach(ManagedChannel::shutdownNow);
      child.destroy();
      child.waitFor(10, TimeUnit.SECONDS);
      Files.deleteIfExists(file);
    }
  }

  private static ClientCall<ProcessingRequest, ProcessingResponse> open(
      ManagedChannel ch,
      String tenant,
      AtomicLong continued,
      AtomicLong overrides,
      AtomicLong closed,
      boolean send) {
    Metadata md = new Metadata();
    md.put(Metadata.Key.of("x-sluice-tenant", Metadata.ASCII_STRING_MARSHALLER), tenant);
    md.put(
        Metadata.Key.of("x-sluice-max-message-timeout-ms", Metadata.ASCII_STRING_MARSHALLER),
        "60000");
    ClientCall<ProcessingRequest, ProcessingResponse> call =
        ch.newCall(ExternalProcessorGrpc.getProcessMethod(), CallOptions.DEFAULT);
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onMessage(ProcessingResponse message) {
            if (message.hasOverrideMessageTimeout()) {
              overrides.incrementAndGet();
            } else {
              continued.incrementAndGet();
            }
          }

          @Override
          public void onClose(Status status, Metadata trailers) {
            closed.incrementAndGet();
          }
        },
        md);
    call.request(4);
    if (send) { // else: start() alone opened the HTTP/2 stream (headers only), no message
      call.sendMessage(FloorMessages.request());
    }
    return call;
  }

  private static void awaitOpenStreams(HttpClient http, String url, long target) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    double open = 0;
    while (System.nanoTime() - deadline < 0) {
      open = sum(get(http, url), "(?m)^sluice_extproc_streams_open ([0-9.eE+-]+)");
      if (open >= target) {
        return;
      }
      Thread.sleep(50);
    }
    throw new IllegalStateException("only " + open + " of " + target + " streams opened");
  }

  private static void awaitCount(AtomicLong n, long target) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (n.get() < target && System.nanoTime() - deadline < 0) {
      Thread.sleep(20);
    }
    if (n.get() < target) {
      throw new IllegalStateException("only " + n.get() + " of " + target + " answers arrived");
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
        sum(get(http, url), "jvm_memory_used_bytes\\{area=\"heap\"[^}]*\\} ([0-9.eE+-]+)");
  }

  static double sum(String scrape, String regex) {
    Matcher m = Pattern.compile(regex).matcher(scrape);
    double s = 0;
    while (m.find()) {
      s += Double.parseDouble(m.group(1));
    }
    return s;
  }

  private static String get(HttpClient http, String url) throws Exception {
    return http.send(
            java.net.http.HttpRequest.newBuilder(URI.create(url)).GET().build(),
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
}
