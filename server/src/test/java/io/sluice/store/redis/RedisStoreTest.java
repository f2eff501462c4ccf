package io.sluice.store.redis;

import io.sluice.core.store.CounterStore;
import io.sluice.core.store.TokenBucketStore;
import io.sluice.store.LocalRedis;
import io.sluice.store.StoreContractTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The store contract against the Redis on 127.0.0.1:6379 (started by CI). */
class RedisStoreTest extends StoreContractTest {
  private static final String PREFIX = LocalRedis.uniquePrefix();
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
  protected CounterStore counters() {
    return store.keyValue();
  }

  @Override
  protected TokenBucketStore buckets() {
    return store.keyValue();
  }

  @Override
  protected String prefix() {
    return PREFIX;
  }
}
