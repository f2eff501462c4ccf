package io.sluice.store.redis;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.core.store.CounterStore;
import io.sluice.core.store.TokenBucketStore;
import io.sluice.core.time.Ticker;
import io.sluice.store.LocalRedis;
import io.sluice.store.StoreContractTest;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The store contract against the Redis on 127.0.0.1:6379 (started by CI). */
class RedisStoreTest extends StoreContractTest {
  private static final String PREFIX = LocalRedis.uniquePrefix();
  private static RedisStore store;

  @BeforeAll
  static void connect() {
    assumeTrue(LocalRedis.reachable(LocalRedis.PORT), "redis-server on 127.0.0.1:6379");
    // The contract, not timeouts: a loaded 2-core CI box can stall a 50 ms command (the default).
    store =
        new RedisStore(
            RedisSettings.local(LocalRedis.PORT).withCommandTimeout(Duration.ofSeconds(2)),
            Ticker.system());
  }

  @AfterAll
  static void close() {
    if (store != null) {
      store.close();
    }
  }

  @Override
  protected CounterStore counters() {
    return store;
  }

  @Override
  protected TokenBucketStore buckets() {
    return store;
  }

  @Override
  protected String prefix() {
    return PREFIX;
  }
}
