package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sluice.api.v1.AcquireResponse;
import io.sluice.config.ConfigLoader;
import io.sluice.permit.PermitClient;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 37: a permit is refused by the same tenant caps a request is: the tier's request rate
 * ({@code rpm}: the snapshot's pre-decision checks, {@code tenant_rate}) and its in-flight cap
 * ({@code maxInFlight}, {@code tenant_concurrency}), while another tenant still gets permits.
 */
class PermitChecksTest {
  private static final String POLICY =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      pools: {pg: {capacity: 100, maxRequests: 50}}
      classes: {db: {rank: 0}}
      tiers: {default: {}, metered: {rpm: 2}, capped: {maxInFlight: 1}}
      tenants: {known: {slowco: {tier: metered}, oneco: {tier: capped}}}
      permits: {enabled: true, lease: 5s}
      """;

  private SluiceServer server;
  private ManagedChannel channel;

  private PermitClient start() throws Exception {
    server = SluiceServer.start(ConfigLoader.parse(POLICY));
    channel = NettyChannelBuilder.forAddress("127.0.0.1", server.grpcPort()).usePlaintext().build();
    return new PermitClient(channel);
  }

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (server != null) {
      server.shutdown(Duration.ZERO);
    }
  }

  @Test
  void aTiersRequestRate_refusesAPermit_asItRefusesARequest() throws Exception {
    PermitClient c = start();
    for (int i = 0; i < 2; i++) {
      AcquireResponse ok = c.acquire("pg", "slowco", "db", 1, 0, "");
      assertThat(ok.getOutcome()).isEqualTo(AcquireResponse.Outcome.GRANTED);
      assertThat(c.release(ok.getPermitId(), 1)).isTrue();
    }
    AcquireResponse third = c.acquire("pg", "slowco", "db", 1, 0, "");
    assertThat(third.getOutcome()).isEqualTo(AcquireResponse.Outcome.REFUSED);
    assertThat(third.getReason()).isEqualTo("tenant_rate");
    assertThat(third.getRetryAfterMs()).isPositive();
    assertThat(c.acquire("pg", "someone", "db", 1, 0, "").getOutcome())
        .as("another tenant")
        .isEqualTo(AcquireResponse.Outcome.GRANTED);
  }

  @Test
  void aTiersInFlightCap_refusesASecondPermit_untilTheFirstIsReleased() throws Exception {
    PermitClient c = start();
    AcquireResponse first = c.acquire("pg", "oneco", "db", 1, 0, "");
    assertThat(first.getOutcome()).isEqualTo(AcquireResponse.Outcome.GRANTED);
    AcquireResponse second = c.acquire("pg", "oneco", "db", 1, 0, "");
    assertThat(second.getOutcome()).isEqualTo(AcquireResponse.Outcome.REFUSED);
    assertThat(second.getReason()).isEqualTo("tenant_concurrency");
    assertThat(c.release(first.getPermitId(), 1)).isTrue();
    assertThat(c.acquire("pg", "oneco", "db", 1, 0, "").getOutcome())
        .isEqualTo(AcquireResponse.Outcome.GRANTED);
  }
}
