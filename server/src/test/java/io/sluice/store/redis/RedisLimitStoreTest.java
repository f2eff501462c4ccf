package io.sluice.store.redis;

import io.sluice.core.adapt.LimitStore;
import io.sluice.store.LimitStoreContractTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** {@code adaptive_limit.lua} on the Redis at 127.0.0.1:6379 (skipped when none answers). */
class RedisLimitStoreTest extends LimitStoreContractTest {
  private static RedisPorts store;

  @BeforeAll
  static void connect() {
    store = LocalRedisStore.open();
  }

  @AfterAll
  static void close() {
    if (store != null) {
      store.close();
    }
  }

  @Override
  protected LimitStore store() {
    return store.limits();
  }
}
