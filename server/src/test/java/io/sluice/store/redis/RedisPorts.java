package io.sluice.store.redis;

import io.sluice.bootstrap.StoreEnv;
import io.sluice.core.time.Ticker;
import io.sluice.store.RedisProcess;
import java.util.Map;

/**
 * Every Redis port class on one connection, in the order the bootstrap builds them (warm-up rounds
 * run in that order): for tests that use several ports of one store.
 */
public record RedisPorts(
    RedisConnection connection,
    RedisKeyValueStore keyValue,
    RedisShareStore shares,
    RedisLimitStore limits,
    RedisTenantSlots slots,
    RedisAttemptStore attempts,
    RedisReserveStore reserves)
    implements AutoCloseable {

  public static RedisPorts open(RedisSettings settings, Ticker ticker) {
    return of(new RedisConnection(settings, ticker));
  }

  /**
   * The ports on a test's own {@code redis-server}, failing fast (200 ms command timeout, 100 ms
   * reconnect): for tests that stop or kill it and read what each store answers meanwhile.
   */
  public static RedisPorts failingFast(RedisProcess redis) {
    return open(
        StoreEnv.redis(
            Map.of(
                "REDIS_URL", "127.0.0.1:" + redis.port(),
                "REDIS_COMMAND_TIMEOUT", "200ms",
                "REDIS_RECONNECT_INTERVAL", "100ms")),
        Ticker.system());
  }

  public static RedisPorts of(RedisConnection c) {
    return new RedisPorts(
        c,
        new RedisKeyValueStore(c),
        new RedisShareStore(c),
        new RedisLimitStore(c),
        new RedisTenantSlots(c),
        new RedisAttemptStore(c),
        new RedisReserveStore(c));
  }

  @Override
  public void close() {
    connection.close();
  }
}
