package io.sluice.store.redis;

import io.sluice.core.retry.AttemptStore;
import io.sluice.store.AttemptStoreContractTest;
import io.sluice.store.LocalRedis;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** Two replicas' connections to the Redis at 127.0.0.1:6379 (skipped when none answers). */
class RedisAttemptStoreContractTest extends AttemptStoreContractTest {
  private RedisPorts a;
  private RedisPorts b;
  private final String prefix = LocalRedis.uniquePrefix() + "{gpu}:";

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
  protected AttemptStore replicaA() {
    return a.attempts();
  }

  @Override
  protected AttemptStore replicaB() {
    return b.attempts();
  }

  @Override
  protected String prefix() {
    return prefix;
  }
}
