package io.sluice.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sluice.config.ConfigLoader;
import io.sluice.core.quota.QuotaCheck;
import io.sluice.core.time.Ticker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two Sluice servers (separate ports) on one real Redis (127.0.0.1:6379, started by .ci/run):
 * requests sent to both alternately meet one global limit, for the rate limit service and for the
 * ext_proc tenant budgets, also with the rate limit service off.
 */
class TwoReplicasOneRedisTest {
  @TempDir Path dir;

  @Test
  void alternatingReplicas_enforceOneGlobalLimit() throws Exception {
    Path root = dir.resolve("runtime");
    Files.createDirectories(root.resolve("config"));
    Files.writeString(
        root.resolve("config/ratelimit.yaml"),
        """
        domain: sluice
        descriptors:
          - key: tenant
            rate_limit: {unit: hour, requests_per_unit: 10}
        """);
    String prefix = "sluice_test_" + UUID.randomUUID().toString().substring(0, 8) + "_";
    String policy =
        """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
        pools: {gpu: {capacity: 100000}}
        classes: {interactive: {reservedShare: 1.0}}
        tiers: {limited: {weight: 1, rpm: 6}}
        tenants: {anonymousTier: limited, unknownTier: limited}
        quotas: {keyPrefix: %s}
        rateLimit:
          env: {RUNTIME_ROOT: %s, RUNTIME_WATCH_ROOT: "false", BACKEND_TYPE: redis,
                REDIS_URL: "127.0.0.1:6379", CACHE_KEY_PREFIX: %s}
        """
            .formatted(prefix, root, prefix);
    SluiceServer.Options opts =
        new SluiceServer.Options(null, Map.of(), Ticker.system(), Clock.systemUTC());
    try (SluiceServer a = SluiceServer.start(ConfigLoader.parse(policy), opts);
        SluiceServer b = SluiceServer.start(ConfigLoader.parse(policy), opts)) {
      assertThat(a.awaitRateLimitStore(Duration.ofSeconds(10))).isTrue();
      assertThat(b.awaitRateLimitStore(Duration.ofSeconds(10))).isTrue();
      assertThat(a.grpcPort()).isNotEqualTo(b.grpcPort());

      // the rate limit service: 10 per hour for tenant=acme across both replicas
      List<ManagedChannel> channels =
          List.of(
              NettyChannelBuilder.forAddress("127.0.0.1", a.grpcPort()).usePlaintext().build(),
              NettyChannelBuilder.forAddress("127.0.0.1", b.grpcPort()).usePlaintext().build());
      try {
        RateLimitRequest req =
            RateLimitRequest.newBuilder()
                .setDomain("sluice")
                .addDescriptors(
                    RateLimitDescriptor.newBuilder()
                        .addEntries(
                            RateLimitDescriptor.Entry.newBuilder()
                                .setKey("tenant")
                                .setValue("acme")))
                .build();
        int ok = 0;
        for (int i = 0; i < 16; i++) {
          RateLimitResponse r =
              RateLimitServiceGrpc.newBlockingStub(channels.get(i % 2))
                  .withDeadlineAfter(5, TimeUnit.SECONDS)
                  .shouldRateLimit(req);
          if (r.getOverallCode() == RateLimitResponse.Code.OK) {
            ok++;
          }
        }
        assertThat(ok).isEqualTo(10);
      } finally {
        channels.forEach(ManagedChannel::shutdownNow);
      }

      // the ext_proc tenant budget (rpm 6) is shared too
      var tenant = a.runtime().resolver().resolve(new NoSignals(), 0).tenant();
      int allowed = 0;
      for (int i = 0; i < 10; i++) {
        SluiceServer s = i % 2 == 0 ? a : b;
        QuotaCheck c =
            s.runtime()
                .quotas()
                .takeRequest(tenant, System.currentTimeMillis())
                .toCompletableFuture()
                .get(5, TimeUnit.SECONDS);
        assertThat(c.storeFailed()).isFalse();
        if (c.allowed()) {
          allowed++;
        }
      }
      assertThat(allowed).isEqualTo(6);
    }
  }

  /**
   * With the rate limit service off, the bootstrap still builds the store from the store settings
   * ({@code BACKEND_TYPE=redis}): the tenant request and token budgets of both replicas are one.
   */
  @Test
  void rateLimitServiceOff_tenantBudgetsAreStillSharedOnRedis() throws Exception {
    String prefix = "sluice_test_" + UUID.randomUUID().toString().substring(0, 8) + "_";
    String policy =
        """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
        pools: {gpu: {capacity: 100000}}
        classes: {interactive: {reservedShare: 1.0}}
        tiers: {limited: {weight: 1, rpm: 6, outputTpm: 500}}
        tenants: {anonymousTier: limited, unknownTier: limited}
        quotas: {keyPrefix: %s}
        rateLimit:
          enabled: false
          env: {BACKEND_TYPE: redis, REDIS_URL: "127.0.0.1:6379"}
        """
            .formatted(prefix);
    SluiceServer.Options opts =
        new SluiceServer.Options(null, Map.of(), Ticker.system(), Clock.systemUTC());
    try (SluiceServer a = SluiceServer.start(ConfigLoader.parse(policy), opts);
        SluiceServer b = SluiceServer.start(ConfigLoader.parse(policy), opts)) {
      assertThat(a.awaitRateLimitStore(Duration.ofSeconds(10))).isTrue();
      assertThat(b.awaitRateLimitStore(Duration.ofSeconds(10))).isTrue();
      assertThat(a.rlsState()).isEqualTo("rate limit service off (rateLimit.enabled: false)");

      // no rate limit service on the gRPC port
      ManagedChannel ch =
          NettyChannelBuilder.forAddress("127.0.0.1", a.grpcPort()).usePlaintext().build();
      try {
        assertThatThrownBy(
                () ->
                    RateLimitServiceGrpc.newBlockingStub(ch)
                        .withDeadlineAfter(5, TimeUnit.SECONDS)
                        .shouldRateLimit(RateLimitRequest.newBuilder().setDomain("d").build()))
            .isInstanceOf(StatusRuntimeException.class)
            .hasMessageContaining("UNIMPLEMENTED");
      } finally {
        ch.shutdownNow();
      }

      var tenant = a.runtime().resolver().resolve(new NoSignals(), 0).tenant();
      int requests = 0;
      int reservations = 0;
      for (int i = 0; i < 10; i++) {
        SluiceServer s = i % 2 == 0 ? a : b;
        QuotaCheck r =
            s.runtime()
                .quotas()
                .takeRequest(tenant, System.currentTimeMillis())
                .toCompletableFuture()
                .get(5, TimeUnit.SECONDS);
        // 100 output tokens a request: 5 fit the 500 a minute of both replicas together
        QuotaCheck t =
            s.runtime()
                .quotas()
                .reserveTokens(tenant, 0, 100, System.currentTimeMillis())
                .toCompletableFuture()
                .get(5, TimeUnit.SECONDS);
        assertThat(r.storeFailed()).isFalse();
        assertThat(t.storeFailed()).isFalse();
        requests += r.allowed() ? 1 : 0;
        reservations += t.allowed() ? 1 : 0;
      }
      assertThat(requests).isEqualTo(6);
      assertThat(reservations).isEqualTo(5);
    }
  }

  /** A request with no signals at all (the anonymous tenant). */
  private static final class NoSignals implements io.sluice.routing.SignalSource {
    @Override
    public String metadata(String key) {
      return null;
    }

    @Override
    public String header(String name) {
      return null;
    }

    @Override
    public String dynamicMetadata(String namespace, List<String> path) {
      return null;
    }

    @Override
    public String attribute(String expression) {
      return null;
    }

    @Override
    public String path() {
      return "/v1/chat/completions";
    }
  }
}
