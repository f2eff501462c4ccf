package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** ShouldRateLimit through a real Netty server and channel (direct executor, as in production). */
class RateLimitServiceAdapterTest {
  final RlsFixture f =
      new RlsFixture(
          """
          domain: envoy
          descriptors:
            - key: user
              rate_limit: {name: per_user, unit: second, requests_per_unit: 1}
            - key: free
              rate_limit: {unlimited: true}
          """);
  Server server;
  ManagedChannel channel;
  RateLimitServiceGrpc.RateLimitServiceBlockingStub stub;

  @BeforeEach
  void start() throws Exception {
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .directExecutor()
            .addService(new RateLimitServiceAdapter(f.evaluator))
            .build()
            .start();
    channel =
        NettyChannelBuilder.forAddress("127.0.0.1", server.getPort())
            .usePlaintext()
            .directExecutor()
            .build();
    stub = RateLimitServiceGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS);
  }

  @AfterEach
  void stop() throws Exception {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  private static RateLimitDescriptor descriptor(String key, String value) {
    return RateLimitDescriptor.newBuilder()
        .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(key).setValue(value))
        .build();
  }

  @Test
  void shouldRateLimit_overRealChannel_statusesInOrder() {
    RateLimitRequest req =
        RateLimitRequest.newBuilder()
            .setDomain("envoy")
            .addDescriptors(descriptor("user", "alice"))
            .addDescriptors(descriptor("free", "x"))
            .addDescriptors(descriptor("none", "x"))
            .build();
    RateLimitResponse first = stub.shouldRateLimit(req);
    assertThat(first.getOverallCode()).isEqualTo(RateLimitResponse.Code.OK);
    assertThat(first.getStatuses(0).getCurrentLimit().getName()).isEqualTo("per_user");
    assertThat(first.getStatuses(0).getCurrentLimit().getUnit())
        .isEqualTo(RateLimitResponse.RateLimit.Unit.SECOND);
    assertThat(first.getStatuses(0).getDurationUntilReset().getSeconds()).isEqualTo(1);
    assertThat(Integer.toUnsignedLong(first.getStatuses(1).getLimitRemaining()))
        .isEqualTo(4294967295L);
    assertThat(first.getStatuses(1).hasCurrentLimit()).isFalse();
    assertThat(first.getStatuses(2).getLimitRemaining()).isZero();
    assertThat(first.getStatuses(2).hasDurationUntilReset()).isFalse();

    RateLimitResponse second = stub.shouldRateLimit(req);
    assertThat(second.getOverallCode()).isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
    assertThat(second.getStatuses(0).getCode()).isEqualTo(RateLimitResponse.Code.OVER_LIMIT);
    assertThat(second.getResponseHeadersToAddList())
        .anySatisfy(
            h -> {
              assertThat(h.getKey()).isEqualTo("retry-after");
              assertThat(h.getValue()).isEqualTo("1");
            });
  }

  @Test
  void shouldRateLimit_descriptorHitsAddendZero_checksOnly() {
    RateLimitDescriptor check =
        descriptor("user", "bob").toBuilder()
            .setHitsAddend(com.google.protobuf.UInt64Value.of(0))
            .build();
    RateLimitRequest req =
        RateLimitRequest.newBuilder().setDomain("envoy").addDescriptors(check).build();
    for (int i = 0; i < 3; i++) {
      assertThat(stub.shouldRateLimit(req).getStatuses(0).getLimitRemaining()).isEqualTo(1);
    }
  }

  @Test
  void shouldRateLimit_emptyDomain_unknownWithReferenceMessage() {
    RateLimitRequest req =
        RateLimitRequest.newBuilder().addDescriptors(descriptor("user", "a")).build();
    assertThatThrownBy(() -> stub.shouldRateLimit(req))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN);
              assertThat(e.getStatus().getDescription())
                  .isEqualTo("rate limit domain must not be empty");
            });
  }
}
