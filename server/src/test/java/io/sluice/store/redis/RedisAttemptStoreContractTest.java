package io.sluice.store.redis;

import io.sluice.core.retry.AttemptStore;
import io.sluice.store.AttemptStoreContractTest;
import io.sluice.store.LocalRedis;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Two replicas' connections to the Redis at 127.0.0.1:6379 (skipped when none answers). */
class RedisAttemptStoreContractTest extends AttemptStoreContractTest {
  @RegisterExtension final TwoRedisReplicas redis = new TwoRedisReplicas();
  private final String prefix = LocalRedis.uniquePrefix() + "{gpu}:";

  @Override
  protected AttemptStore replicaA() {
    return redis.a().attempts();
  }

  @Override
  protected AttemptStore replicaB() {
    return redis.b().attempts();
  }

  @Override
  protected String prefix() {
    return prefix;
  }
}
