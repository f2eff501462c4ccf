package io.sluice.store.redis;

import io.sluice.core.estimate.ReserveStore;
import io.sluice.store.LocalRedis;
import io.sluice.store.ReserveStoreContractTest;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code reserve_publish.lua}: two replicas' connections to the Redis at 127.0.0.1:6379 (skipped
 * when none answers).
 */
class RedisReserveStoreContractTest extends ReserveStoreContractTest {
  @RegisterExtension final TwoRedisReplicas redis = new TwoRedisReplicas();
  private final String namespace = LocalRedis.uniquePrefix();

  @Override
  protected ReserveStore replicaA() {
    return redis.a().reserves();
  }

  @Override
  protected ReserveStore replicaB() {
    return redis.b().reserves();
  }

  @Override
  protected String namespace() {
    return namespace;
  }
}
