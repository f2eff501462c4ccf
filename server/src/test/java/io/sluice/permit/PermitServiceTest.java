package io.sluice.permit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.sluice.api.v1.AcquireResponse;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.permit.PermitDesk;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.time.Ticker;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code sluice.v1.Permits} over a real gRPC server (direct executor) and the Java client: granted
 * then released once, refused with the pool's reason and a retry-after, bad input as typed gRPC
 * statuses.
 */
class PermitServiceTest {
  private Server server;
  private ManagedChannel channel;
  private PermitClient client;

  @BeforeEach
  void start() throws Exception {
    ClassPolicy db =
        ClassPolicy.builder("db")
            .rank(0)
            .shares(1.0, 0.0)
            .borrow(true)
            .deadline(Duration.ofSeconds(30))
            .maxQueueWait(Duration.ofSeconds(5))
            .outputTokens(100, 1000)
            .build();
    AdmissionController controller =
        new AdmissionController(
            List.of(PoolPolicy.builder("pg", 1000).maxRequests(1).build()),
            List.of(db),
            Duration.ofSeconds(10),
            (p, pm, o, n) -> {},
            Math::random);
    PermitDesk desk =
        new PermitDesk(
            controller,
            id -> new Tenant(id, TierPolicy.builder("t").build()),
            Ticker.system(),
            Duration.ofSeconds(30).toNanos(),
            100,
            new PermitDesk.Shared(
                new io.sluice.store.memory.InMemoryPermitLeases(Ticker.system()),
                "t_",
                () -> null,
                io.sluice.core.permit.PermitEvents.NONE));
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .directExecutor()
            .addService(new PermitService(desk))
            .build()
            .start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();
    client = new PermitClient(channel);
  }

  @AfterEach
  void stop() throws Exception {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  @Test
  void grantedRefusedReleasedOnce() {
    AcquireResponse a = client.acquire("pg", "acme", "db", 1, 0, "");
    assertThat(a.getOutcome()).isEqualTo(AcquireResponse.Outcome.GRANTED);
    assertThat(a.getLeaseMs()).isEqualTo(30_000);
    assertThat(client.renew(a.getPermitId())).isEqualTo(30_000);
    AcquireResponse full = client.acquire("pg", "acme", "db", 1, 0, "");
    assertThat(full.getOutcome()).isEqualTo(AcquireResponse.Outcome.REFUSED);
    assertThat(full.getReason()).isNotEmpty();
    assertThat(full.getRetryAfterMs()).isPositive();
    assertThat(client.release(a.getPermitId(), 1)).isTrue();
    assertThat(client.release(a.getPermitId(), 1)).as("once").isFalse();
    assertThat(client.acquire("pg", "acme", "db", 1, 0, "").getOutcome())
        .isEqualTo(AcquireResponse.Outcome.GRANTED);
  }

  @Test
  void badInput_typedStatuses() {
    assertThatThrownBy(() -> client.acquire("pg", "acme", "db", -1, 0, ""))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessageStartingWith("INVALID_ARGUMENT")
        .hasMessageContaining("work");
    assertThatThrownBy(() -> client.acquire("nope", "acme", "db", 1, 0, ""))
        .hasMessageStartingWith("NOT_FOUND");
    assertThatThrownBy(() -> client.acquire("pg", "acme", "db", 1, 0, "x".repeat(100_000)))
        .hasMessageStartingWith("INVALID_ARGUMENT");
    assertThatThrownBy(() -> client.renew("nope")).hasMessageStartingWith("NOT_FOUND");
    assertThatThrownBy(() -> client.release("nope", -3)).hasMessageStartingWith("INVALID_ARGUMENT");
  }
}
