package io.sluice.store.redis;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.core.time.Ticker;
import io.sluice.store.LocalRedis;
import java.time.Duration;

/** The store on the Redis CI runs at 127.0.0.1:6379, for tests of the store's own contract. */
final class LocalRedisStore {
  private LocalRedisStore() {}

  /**
   * Every port on one connection to 127.0.0.1:6379 with a 2 s command timeout (the contract under
   * test, not timeouts: a loaded 2-core CI box can stall a 50 ms command, the default); the calling
   * test is skipped when nothing answers there.
   */
  static RedisPorts open() {
    assumeTrue(LocalRedis.reachable(LocalRedis.PORT), "redis-server on 127.0.0.1:6379");
    return RedisPorts.open(
        RedisSettings.local(LocalRedis.PORT).withCommandTimeout(Duration.ofSeconds(2)),
        Ticker.system());
  }
}
