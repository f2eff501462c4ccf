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
  private RedisStore a;
  private RedisStore b;
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
    return new RedisReserveStore(a);
  }

  @Override
  protected ReserveStore replicaB() {
    return new RedisReserveStore(b);
  }

  @Override
  protected String namespace() {
    return namespace;
  }
}
