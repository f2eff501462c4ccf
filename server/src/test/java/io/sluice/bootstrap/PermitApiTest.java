package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sluice.api.v1.AcquireResponse;
import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import io.sluice.permit.PermitClient;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The permit API on a real server's gRPC port: served only with {@code permits.enabled}, decided by
 * the pool's own limits (its {@code maxRequests}), a lease given back once, every lease back to its
 * pool at shutdown, the section's errors naming the field.
 */
class PermitApiTest {
  private static final String POLICY =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      pools: {pg: {capacity: 100, maxRequests: 2}}
      classes: {db: {rank: 0}}
      tiers: {default: {}, gold: {}}
      tenants: {known: {acme: {tier: gold}}}
      """;

  private SluiceServer server;
  private ManagedChannel channel;

  private PermitClient start(String permits) throws Exception {
    server = SluiceServer.start(ConfigLoader.parse(POLICY + permits));
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
  void enabled_grantsUpToThePoolsLimit_releasesOnce() throws Exception {
    PermitClient c = start("permits: {enabled: true, lease: 5s}\n");
    AcquireResponse a = c.acquire("pg", "acme", "db", 1, 0, "");
    AcquireResponse b = c.acquire("pg", "beta", "db", 1, 0, "");
    assertThat(a.getOutcome()).isEqualTo(AcquireResponse.Outcome.GRANTED);
    assertThat(b.getOutcome()).isEqualTo(AcquireResponse.Outcome.GRANTED);
    assertThat(a.getLeaseMs()).isEqualTo(5_000);
    AcquireResponse third = c.acquire("pg", "acme", "db", 1, 0, "");
    assertThat(third.getOutcome()).isEqualTo(AcquireResponse.Outcome.REFUSED);
    assertThat(third.getRetryAfterMs()).isPositive();
    assertThat(c.release(a.getPermitId(), 1)).isTrue();
    assertThat(c.release(a.getPermitId(), 1)).isFalse();
    assertThat(c.acquire("pg", "acme", "db", 1, 0, "").getOutcome())
        .isEqualTo(AcquireResponse.Outcome.GRANTED);
    assertThat(server.permitLeases()).isEqualTo(2);
  }

  @Test
  void off_byDefault_theServiceIsNotThere() throws Exception {
    PermitClient c = start("");
    assertThatThrownBy(() -> c.acquire("pg", "acme", "db", 1, 0, ""))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessageStartingWith("UNIMPLEMENTED");
  }

  @Test
  void section_errorsNameTheField() {
    assertThatThrownBy(
            () -> ConfigLoader.parse(POLICY + "permits: {lease: 50ms, maxLeases: 0, x: 1}\n"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("permits.lease: 50ms (expected: a duration in 1s..1h)")
        .hasMessageContaining("permits.maxLeases")
        .hasMessageContaining("permits.x");
  }

  @Test
  void aCallersTenant_getsItsTier_asARequestWould() {
    var config = ConfigLoader.parse(POLICY);
    assertThat(PermitApi.tenant(config, "acme").tier().name()).isEqualTo("gold");
    assertThat(PermitApi.tenant(config, "other").tier().name()).isEqualTo("default");
  }
}
