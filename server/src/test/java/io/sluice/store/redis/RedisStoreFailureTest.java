package io.sluice.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.bootstrap.StoreEnv;
import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.StoreException;
import io.sluice.core.time.Ticker;
import io.sluice.store.LocalRedis;
import io.sluice.store.RedisProcess;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Kills a redis-server this test owns and checks fast failure, health and self-recovery. */
class RedisStoreFailureTest {
  RedisProcess redis;
  RedisPorts store;

  @AfterEach
  void cleanUp() throws Exception {
    if (store != null) {
      store.close();
    }
    if (redis != null) {
      redis.close();
    }
  }

  private long[] incr(String key) throws Exception {
    return store
        .keyValue()
        .increment(List.of(new CounterIncrement(key, 1, 60, 0)))
        .toCompletableFuture()
        .get(5, TimeUnit.SECONDS);
  }

  @Test
  void redisKilled_failsFastUnhealthy_thenRecoversByItself() throws Exception {
    assumeTrue(RedisProcess.available(), "redis-server binary");
    redis = new RedisProcess(LocalRedis.freePort()).start();
    store =
        RedisPorts.open(
            StoreEnv.redis(
                java.util.Map.of(
                    "REDIS_URL", "127.0.0.1:" + redis.port(),
                    "REDIS_COMMAND_TIMEOUT", "50ms",
                    "REDIS_RECONNECT_INTERVAL", "100ms")),
            Ticker.system());
    // warm first (as the service does before ready): a cold first command may overrun 2 x 50 ms
    store.keyValue().warmUp("t_", 3).toCompletableFuture().get(20, TimeUnit.SECONDS);
    assertThat(incr("k")).containsExactly(1);
    assertThat(store.connection().health().healthy()).isTrue();

    redis.kill();
    // fails fast: the store itself answers (Lettuce rejects the command on the lost connection, or
    // its 50 ms command timeout / the store's 2 x timeout bound fires) well within the caller's 5 s
    // liveness bound, which would end the wait with a TimeoutException instead; the failure names
    // its cause. No wall-clock time is asserted.
    assertThatThrownBy(() -> incr("k"))
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOf(StoreException.class)
        .hasMessageStartingWith("redis: ")
        .satisfies(
            e ->
                assertThat(e.getCause())
                    .isInstanceOfAny(
                        io.lettuce.core.RedisException.class,
                        java.util.concurrent.TimeoutException.class));
    assertThat(store.connection().health().healthy()).isFalse();
    assertThat(store.connection().health().failures()).isGreaterThanOrEqualTo(1);
    assertThat(store.connection().health().lastError()).isNotEmpty();

    redis.start();
    Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .pollInterval(Duration.ofMillis(100))
        .ignoreExceptions()
        .until(() -> incr("k2")[0] == 1);
    assertThat(store.connection().health().healthy()).isTrue();
  }

  @Test
  void redisDownAtStart_failsFast_thenConnectsWhenItAppears() throws Exception {
    assumeTrue(RedisProcess.available(), "redis-server binary");
    int port = LocalRedis.freePort();
    store =
        RedisPorts.open(
            StoreEnv.redis(
                java.util.Map.of(
                    "REDIS_URL", "127.0.0.1:" + port,
                    "REDIS_TIMEOUT", "200ms",
                    "REDIS_RECONNECT_INTERVAL", "100ms")),
            Ticker.system());
    assertThatThrownBy(() -> incr("k")).hasCauseInstanceOf(StoreException.class);
    assertThat(store.connection().health().healthy()).isFalse();
    redis = new RedisProcess(port).start();
    Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .pollInterval(Duration.ofMillis(100))
        .ignoreExceptions()
        .until(() -> incr("k")[0] >= 1);
    assertThat(store.connection().health().healthy()).isTrue();
  }
}
