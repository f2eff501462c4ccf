package io.sluice.store.redis;

import io.sluice.core.estimate.ReserveStore;
import io.sluice.store.LocalRedis;
import io.sluice.store.ReserveStoreContractTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * {@code reserve_publish.lua}: two replicas' connections to the Redis at 127.0.0.1:6379 (skipped
 * when none answers).
 */
class RedisReserveStoreContractTest extends ReserveStoreContractTest {
  private RedisPorts a;
  private RedisPorts b;
  private final String namespace = LocalRedis.uniquePrefix();

  @BeforeEach
  void open() {
    a = LocalRedisStore.open();
    b = LocalRedisStore.open();
  }

  @AfterEach
  void close() {
    a.close();
    b.close();
  }

  @Override
  protected ReserveStore replicaA() {
    return a.reserves();
  }

  @Override
  protected ReserveStore replicaB() {
    return b.reserves();
  }

  @Override
  protected String namespace() {
    return namespace;
  }
}
