package io.sluice.store.redis;

import io.sluice.core.time.Ticker;

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
