package io.sluice.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.TlsChannelCredentials;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.micrometer.core.instrument.Counter;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.testing.RawHttp2Client;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The premature-reset guard lands in front of grpc's codec with the grpc-netty version of the
 * parent pom, through its {@code InternalNettyServerCredentials}: on plaintext (the {@code
 * Http2AbuseLimitsTest}s) and here behind TLS, where it must sit after the TLS handler to read
 * frames. TLS, ALPN and grpc's own negotiation are untouched: a grpc client is served beside.
 */
class GuardedNegotiationTest {
  private static final String PROCESS = "/envoy.service.ext_proc.v3.ExternalProcessor/Process";

  @TempDir Path dir;

  private Path cert(String name) throws IOException {
    Path out = dir.resolve(name);
    try (InputStream in = getClass().getResourceAsStream("/certs/" + name)) {
      Files.copy(in, out);
    }
    return out;
  }

  private SSLSocket tlsSocket(int port) throws Exception {
    KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
    trust.load(null, null);
    try (InputStream in = Files.newInputStream(dir.resolve("ca.pem"))) {
      trust.setCertificateEntry(
          "ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
    }
    TrustManagerFactory tmf =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    SSLContext tls = SSLContext.getInstance("TLS");
    tls.init(null, tmf.getTrustManagers(), null);
    SSLSocket s = (SSLSocket) tls.getSocketFactory().createSocket("127.0.0.1", port);
    SSLParameters p = s.getSSLParameters();
    p.setApplicationProtocols(new String[] {"h2"});
    s.setSSLParameters(p);
    s.startHandshake();
    assertThat(s.getApplicationProtocol()).isEqualTo("h2");
    return s;
  }

  @Test
  void behindTls_theGuardReadsFrames_closesARapidReset_andGrpcServesBeside() throws Exception {
    String yaml =
        """
        server:
          grpc: {host: 127.0.0.1, port: 0, tls: {certFile: %s, keyFile: %s}}
          admin: {host: 127.0.0.1, port: 0}
          warmup: {enabled: false}
        pools: {gpu: {capacity: 100}}
        classes: {interactive: {reservedShare: 1.0}}
        """
            .formatted(cert("server1.pem"), cert("server1.key"));
    cert("ca.pem");
    try (SluiceServer s = SluiceServer.start(ConfigLoader.parse(yaml))) {
      ChannelCredentials creds =
          TlsChannelCredentials.newBuilder().trustManager(dir.resolve("ca.pem").toFile()).build();
      ManagedChannel ch =
          Grpc.newChannelBuilderForAddress("localhost", s.grpcPort(), creds)
              .overrideAuthority("foo.test.google.fr")
              .build();
      try {
        assertThat(health(ch)).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
        int sent = 0;
        try (RawHttp2Client abuser = new RawHttp2Client(tlsSocket(s.grpcPort()))) {
          try {
            while (sent < 20_000 && !abuser.isClosed()) {
              int id = abuser.headers(RawHttp2Client.grpcHeaders(PROCESS, Map.of()));
              abuser.reset(id);
              if (++sent % 50 == 0) {
                abuser.flush();
              }
            }
            abuser.flush();
          } catch (IOException closedUnderUs) {
            // the point
          }
          assertThat(abuser.awaitClosed(10_000)).as("abuser's connection closed").isTrue();
          assertThat(abuser.goAwayError()).as("GOAWAY ENHANCE_YOUR_CALM").isEqualTo(0xb);
        }
        Counter refused =
            s.registry()
                .find("sluice.grpc.transport.refusals")
                .tag("reason", "premature_resets")
                .counter();
        assertThat(refused).isNotNull();
        await().atMost(Duration.ofSeconds(5)).until(() -> refused.count() == 1);
        assertThat(
                s.registry()
                    .find("sluice.grpc.transport.refusals")
                    .tag("reason", "too_many_resets")
                    .counter()
                    .count())
            .as("grpc's own limit")
            .isZero();
        assertThat(health(ch))
            .as("the grpc client, served on")
            .isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
      } finally {
        ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  private static HealthCheckResponse.ServingStatus health(ManagedChannel ch) {
    return HealthGrpc.newBlockingStub(ch)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .check(HealthCheckRequest.newBuilder().setService("sluice").build())
        .getStatus();
  }
}
