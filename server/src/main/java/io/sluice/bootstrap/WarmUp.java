package io.sluice.bootstrap;

import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.sluice.extproc.ExtProcService;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Warms the request path before readiness. Class loading, static initialisation (the BPE encodings
 * alone take about half a second), Netty's HTTP/2 codec and the interpreter make the first streams
 * of a fresh JVM answer in about a second, longer than Envoy's message_timeout. So before health
 * reports SERVING, synthetic ext_proc streams ({@link SyntheticStreams}) and rate limit calls run
 * through the real handler classes, over real gRPC on Netty, on a private loopback port.
 *
 * <p>What they never touch: the live admission state. The warm-up's {@link ExtProcService} and rate
 * limit service are separate instances built by the bootstrap on an isolated runtime: their own
 * pools and classes (same policy), their own in-memory quota and rate-limit store, their own meter
 * registry, a decision log that discards its lines, their own token-count cache. So no tenant
 * budget is spent, no permit can be left, no decision counter or decision log line of the live
 * server moves; only {@code sluice_warmup_*} metrics tell that it ran.
 *
 * <p>Runs on the caller's thread (the start-up thread), bounded by the configured timeout.
 */
final class WarmUp {
  /** What the warm-up did. */
  record Result(
      int streams,
      int streamsFailed,
      int rlsCalls,
      int rlsFailed,
      long nanos,
      long slowestFirstMessageNanos,
      @Nullable String firstError) {
    boolean ok() {
      return streamsFailed == 0 && rlsFailed == 0;
    }
  }

  private WarmUp() {}

  /**
   * @param extProc the warm-up's own ext_proc service (isolated runtime)
   * @param rls the warm-up's own rate limit service, or null
   * @param rlsDomains domains to send rate limit calls for (empty: "sluice")
   */
  static Result run(
      ExtProcService extProc,
      @Nullable BindableService rls,
      List<String> rlsDomains,
      List<SyntheticStreams.Exchange> exchanges,
      int streams,
      int rlsCalls,
      long maxInboundMessageBytes,
      Duration timeout)
      throws IOException {
    long start = System.nanoTime();
    long deadline = start + timeout.toNanos();
    NettyServerBuilder b =
        NettyServerBuilder.forAddress(
                new InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0))
            .directExecutor()
            .maxInboundMessageSize((int) Math.min(Integer.MAX_VALUE, maxInboundMessageBytes))
            .addService(extProc.definition());
    if (rls != null) {
      b.addService(rls);
    }
    Server server = b.build().start();
    ManagedChannel ch =
        NettyChannelBuilder.forAddress("127.0.0.1", server.getPort())
            .usePlaintext()
            .maxInboundMessageSize((int) Math.min(Integer.MAX_VALUE, maxInboundMessageBytes))
            .build();
    int done = 0;
    int failed = 0;
    int rlsDone = 0;
    int rlsFailed = 0;
    long slowest = 0;
    String firstError = null;
    try {
      Metadata md = SyntheticStreams.warmupMetadata();
      Duration perMessage = Duration.ofSeconds(5);
      for (int i = 0; i < streams && System.nanoTime() - deadline < 0; i++) {
        SyntheticStreams.Exchange ex = exchanges.get(i % exchanges.size());
        SyntheticStreams.Result r = SyntheticStreams.run(ch, md, ex, perMessage);
        done++;
        slowest = Math.max(slowest, r.firstDecisionNanos());
        if (!r.ok()) {
          failed++;
          if (firstError == null) {
            firstError = ex.name() + ": " + r.error();
          }
        }
      }
      if (rls != null) {
        List<String> domains = rlsDomains.isEmpty() ? List.of("sluice") : rlsDomains;
        for (int i = 0; i < rlsCalls && System.nanoTime() - deadline < 0; i++) {
          rlsDone++;
          try {
            RateLimitServiceGrpc.newBlockingStub(ch)
                .withDeadlineAfter(5, TimeUnit.SECONDS)
                .shouldRateLimit(rlsRequest(domains.get(i % domains.size()), i));
          } catch (io.grpc.StatusRuntimeException e) {
            // An error answer is still an answer: the handler ran (e.g. no rate limit config
            // loaded yet, as a real call would be told). Only no answer is a failure.
            io.grpc.Status.Code c = e.getStatus().getCode();
            if (c == io.grpc.Status.Code.DEADLINE_EXCEEDED
                || c == io.grpc.Status.Code.UNAVAILABLE
                || c == io.grpc.Status.Code.CANCELLED) {
              rlsFailed++;
              if (firstError == null) {
                firstError = "rate limit call: " + e;
              }
            }
          } catch (RuntimeException e) {
            rlsFailed++;
            if (firstError == null) {
              firstError = "rate limit call: " + e;
            }
          }
        }
      }
    } finally {
      ch.shutdownNow();
      server.shutdownNow();
      try {
        ch.awaitTermination(2, TimeUnit.SECONDS);
        server.awaitTermination(2, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return new Result(
        done, failed, rlsDone, rlsFailed, System.nanoTime() - start, slowest, firstError);
  }

  /** (tenant) and (tenant, model) descriptors, as the shipped Envoy configs send them. */
  static RateLimitRequest rlsRequest(String domain, int i) {
    List<RateLimitDescriptor> ds = new ArrayList<>();
    ds.add(descriptor("tenant", SyntheticStreams.WARMUP_TENANT));
    ds.add(
        RateLimitDescriptor.newBuilder()
            .addEntries(entry("tenant", SyntheticStreams.WARMUP_TENANT))
            .addEntries(entry("model", i % 2 == 0 ? "gpt-4o" : "warmup"))
            .build());
    return RateLimitRequest.newBuilder()
        .setDomain(domain)
        .addAllDescriptors(ds)
        .setHitsAddend(1)
        .build();
  }

  private static RateLimitDescriptor descriptor(String k, String v) {
    return RateLimitDescriptor.newBuilder().addEntries(entry(k, v)).build();
  }

  private static RateLimitDescriptor.Entry entry(String k, String v) {
    return RateLimitDescriptor.Entry.newBuilder().setKey(k).setValue(v).build();
  }
}
