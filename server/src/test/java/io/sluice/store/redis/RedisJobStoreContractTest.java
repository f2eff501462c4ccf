package io.sluice.store.redis;

import io.sluice.core.intake.JobStore;
import io.sluice.store.JobStoreContractTest;
import io.sluice.store.LocalRedis;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** Two replicas' connections to the Redis at 127.0.0.1:6379 (skipped when none answers). */
class RedisJobStoreContractTest extends JobStoreContractTest {
  private RedisPorts a;
  private RedisPorts b;
  private final String prefix = LocalRedis.uniquePrefix();

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
  protected JobStore replicaA() {
    return new RedisJobStore(a.connection());
  }

  @Override
  protected JobStore replicaB() {
    return new RedisJobStore(b.connection());
  }

  @Override
  protected String prefix() {
    return prefix;
  }
}
