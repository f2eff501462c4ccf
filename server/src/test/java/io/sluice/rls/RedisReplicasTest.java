package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.store.CounterIncrement;
import io.sluice.core.time.FakeTicker;
import io.sluice.core.time.Ticker;
import io.sluice.store.LocalRedis;
import io.sluice.store.MutableClock;
import io.sluice.store.RedisProcess;
import io.sluice.store.redis.RedisPorts;
import io.sluice.store.redis.RedisSettings;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Several replicas on one Redis, and the module's behaviour when its Redis dies. */
class RedisReplicasTest {
  @TempDir Path root;
  final List<AutoCloseable> closeables = new ArrayList<>();
  final MutableClock clock = new MutableClock(RlsFixture.START);

  @AfterEach
  void close() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private Map<String, String> env(String prefix, int redisPort, String... extra)
      throws IOException {
    Path dir = root.resolve("config");
    Files.createDirectories(dir);
    Files.writeString(
        dir.resolve("limits.yaml"),
        "domain: d\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 10}\n");
    Map<String, String> env = new HashMap<>();
    env.put("RUNTIME_ROOT", root.toString());
    env.put("RUNTIME_WATCH_ROOT", "false");
    env.put("SLUICE_RLS_CONFIG_POLL_INTERVAL", "0");
    env.put("BACKEND_TYPE", "redis");
    env.put("REDIS_URL", "127.0.0.1:" + redisPort);
    env.put("CACHE_KEY_PREFIX", prefix);
    for (int i = 0; i < extra.length; i += 2) {
      env.put(extra[i], extra[i + 1]);
    }
    return env;
  }

  private RateLimitServiceGrpc.RateLimitServiceBlockingStub serve(RlsModule module)
      throws IOException {
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .directExecutor()
            .addService(module.service())
            .build()
            .start();
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();
    closeables.add(module);
    closeables.add(() -> server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    closeables.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return RateLimitServiceGrpc.newBlockingStub(channel);
  }

  private static RateLimitRequest request(String user) {
    return RateLimitRequest.newBuilder()
        .setDomain("d")
        .addDescriptors(
            RateLimitDescriptor.newBuilder()
                .addEntries(RateLimitDescriptor.Entry.newBuilder().setKey("user").setValue(user)))
        .build();
  }

  @Test
  void twoServersOneRedis_alternateCalls_oneGlobalLimit() throws Exception {
    assumeTrue(LocalRedis.reachable(LocalRedis.PORT), "redis-server on 127.0.0.1:6379");
    String prefix = LocalRedis.uniquePrefix();
    List<RateLimitServiceGrpc.RateLimitServiceBlockingStub> replicas = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      RlsModule m =
          WiredRls.create(
              env(prefix, LocalRedis.PORT),
              new SimpleMeterRegistry(),
              clock,
              Ticker.system(),
              closeables);
      m.ready().toCompletableFuture().get(10, TimeUnit.SECONDS);
      replicas.add(serve(m).withDeadlineAfter(10, TimeUnit.SECONDS));
    }
    int ok = 0;
    for (int i = 0; i < 30; i++) {
      RateLimitResponse r = replicas.get(i % 2).shouldRateLimit(request("alice"));
      if (r.getOverallCode() == RateLimitResponse.Code.OK) {
        ok++;
      }
    }
    assertThat(ok).isEqualTo(10);
    // Same key layout as envoyproxy/ratelimit: prefix + domain_key_value_ + hour window start.
    long windowStart = Math.floorDiv(RlsFixture.START.getEpochSecond(), 3600) * 3600;
    try (RedisPorts direct =
        RedisPorts.open(RedisSettings.local(LocalRedis.PORT), Ticker.system())) {
      long[] v =
          direct
              .keyValue()
              .increment(
                  List.of(new CounterIncrement(prefix + "d_user_alice_" + windowStart, 0, 3600, 0)))
              .toCompletableFuture()
              .get(5, TimeUnit.SECONDS);
      assertThat(v).containsExactly(30);
    }
  }

  @Test
  void redisKilled_localFailureMode_keepsDecidingAndRecovers() throws Exception {
    assumeTrue(RedisProcess.available(), "redis-server binary");
    RedisProcess redis = new RedisProcess(LocalRedis.freePort()).start();
    closeables.add(redis);
    RlsModule m =
        WiredRls.create(
            env(
                "p-",
                redis.port(),
                "SLUICE_RLS_FAILURE_MODE",
                "local",
                "SLUICE_RLS_EXPECTED_REPLICAS",
                "2",
                "REDIS_RECONNECT_INTERVAL",
                "100ms"),
            new SimpleMeterRegistry(),
            clock,
            new FakeTicker(),
            closeables);
    m.ready().toCompletableFuture().get(10, TimeUnit.SECONDS);
    var stub = serve(m).withDeadlineAfter(10, TimeUnit.SECONDS);
    assertThat(stub.shouldRateLimit(request("a")).getStatuses(0).getLimitRemaining()).isEqualTo(9);
    redis.kill();
    int ok = 0;
    for (int i = 0; i < 8; i++) {
      if (stub.shouldRateLimit(request("b")).getOverallCode() == RateLimitResponse.Code.OK) {
        ok++;
      }
    }
    assertThat(ok).isEqualTo(5); // 10 / 2 expected replicas, counted in memory
    assertThat(m.health().store().healthy()).isFalse();
    assertThat(m.healthy()).isTrue();
    redis.start();
    Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .pollInterval(Duration.ofMillis(100))
        .until(
            () -> {
              stub.shouldRateLimit(request("c"));
              return m.health().store().healthy();
            });
  }
}
