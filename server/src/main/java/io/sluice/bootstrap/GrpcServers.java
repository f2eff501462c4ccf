package io.sluice.bootstrap;

import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.ServerCredentials;
import io.grpc.TlsServerCredentials;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.grpc.util.AdvancedTlsX509KeyManager;
import io.grpc.util.AdvancedTlsX509TrustManager;
import io.sluice.config.SluiceConfig;
import io.sluice.extproc.ExtProcService;
import io.sluice.rls.RlsModule;
import io.sluice.transport.CoarseTransportClock;
import io.sluice.transport.GuardedNegotiation;
import io.sluice.transport.LeakSampling;
import io.sluice.transport.PrematureResetGuard;
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.security.GeneralSecurityException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The process's gRPC server (not started): ext_proc, the rate limit service, health and reflection
 * on Netty with the direct executor, optional TLS/mTLS, and the HTTP/2 abuse limits of {@code
 * server.grpc} (grpc's own, and the premature-reset guard in front of grpc's codec).
 */
final class GrpcServers {
  /**
   * Opened streams without a DATA frame yet that one connection's premature-reset guard remembers
   * (4 bytes each): Envoy sends a stream's first message with its HEADERS, so few are ever bare.
   */
  static final int TRACKED_STREAMS = 1024;

  private GrpcServers() {}

  static Server build(
      SluiceConfig.Server s,
      ExtProcService extProc,
      HealthStatusManager health,
      @Nullable RlsModule rls,
      java.util.List<io.grpc.BindableService> more,
      java.util.function.LongSupplier wallMillis)
      throws IOException {
    // Netty's leak sampling costs ~2 µs per LLM-shaped stream; on only when the operator sets it
    var unusedLevel = LeakSampling.apply();
    InetSocketAddress bind = new InetSocketAddress(s.grpcHost(), s.grpcPort());
    SluiceConfig.Http2 h2 = s.http2();
    ServerCredentials creds =
        s.tls() == null ? InsecureServerCredentials.create() : tlsCredentials(s.tls());
    if (h2.maxPrematureResets() > 0) {
      // rapid reset, before grpc's codec: past the bound the rest of the read is never decoded
      creds =
          GuardedNegotiation.wrap(
              creds,
              () ->
                  new PrematureResetGuard(
                      h2.maxPrematureResets(),
                      h2.prematureResetRatio(),
                      TRACKED_STREAMS,
                      detail ->
                          GrpcTransportLog.refused(GrpcTransportLog.PREMATURE_RESETS, detail)));
    }
    NettyServerBuilder b = NettyServerBuilder.forAddress(bind, creds);
    // grpc's channelz stamps (not served) on the coarse wall clock: no Instant.now() per message
    var unusedCoarse = CoarseTransportClock.install(b, wallMillis);
    if (h2.maxResetsPerWindow() > 0) {
      // rapid reset: past the limit the connection gets GOAWAY ENHANCE_YOUR_CALM and is closed
      b.maxRstFramesPerWindow(h2.maxResetsPerWindow(), (int) h2.resetWindow().toSeconds());
    }
    if (!h2.maxConnectionIdle().isZero()) {
      b.maxConnectionIdle(h2.maxConnectionIdle().toNanos(), TimeUnit.NANOSECONDS);
    }
    b.directExecutor()
        .maxInboundMessageSize((int) Math.min(Integer.MAX_VALUE, s.maxInboundMessageBytes()))
        // HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: Envoy opens another connection beyond it; the
        // total (server.grpc.maxStreams) and the silence bounds are enforced by ExtProcService.
        .maxConcurrentCallsPerConnection(s.streams().maxStreamsPerConnection())
        // Envoy's HTTP/2 keepalive pings must not earn a GOAWAY too_many_pings.
        .permitKeepAliveTime(h2.permitKeepAliveTime().toNanos(), TimeUnit.NANOSECONDS)
        .permitKeepAliveWithoutCalls(true)
        // a larger header list is refused with HTTP 431 on that stream (counted, one log line:
        // GrpcTransportLog), never passed to a call
        .maxInboundMetadataSize(h2.maxHeaderListBytes())
        .addService(extProc.definition())
        .addService(health.getHealthService())
        .addService(ProtoReflectionServiceV1.newInstance());
    if (rls != null) {
      b.addService(rls.service());
    }
    more.forEach(b::addService);
    return b.build();
  }

  /** Starts {@code grpc}; a port taken is a {@link PortBindException} naming the settings. */
  static void start(Server grpc, SluiceConfig.Server s) throws IOException {
    try {
      grpc.start();
    } catch (IOException e) {
      throw PortBindException.of(
          "gRPC",
          s.grpcHost(),
          s.grpcPort(),
          "GRPC_HOST / GRPC_PORT",
          "server.grpc.host / .port",
          e);
    }
  }

  private static ServerCredentials tlsCredentials(SluiceConfig.Tls tls) throws IOException {
    try {
      AdvancedTlsX509KeyManager km = new AdvancedTlsX509KeyManager();
      ScheduledExecutorService tlsRefresh =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "sluice-tls-refresh");
                t.setDaemon(true);
                return t;
              });
      long every = Math.max(1, tls.refreshInterval().toSeconds());
      km.updateIdentityCredentials(
          new File(tls.certFile()), new File(tls.keyFile()), every, TimeUnit.SECONDS, tlsRefresh);
      TlsServerCredentials.Builder creds = TlsServerCredentials.newBuilder().keyManager(km);
      if (tls.clientCaFile() != null) {
        AdvancedTlsX509TrustManager tm =
            AdvancedTlsX509TrustManager.newBuilder()
                .setVerification(
                    AdvancedTlsX509TrustManager.Verification.CERTIFICATE_ONLY_VERIFICATION)
                .build();
        tm.updateTrustCredentials(
            new File(tls.clientCaFile()), every, TimeUnit.SECONDS, tlsRefresh);
        creds.trustManager(tm).clientAuth(TlsServerCredentials.ClientAuth.REQUIRE);
      }
      return creds.build();
    } catch (GeneralSecurityException e) {
      throw new IOException(
          "server.grpc.tls: cannot load " + tls.certFile() + ": " + e.getMessage(), e);
    }
  }
}
