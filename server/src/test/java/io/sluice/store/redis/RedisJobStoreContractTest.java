package io.sluice.store.redis;

import io.sluice.core.intake.JobStore;
import io.sluice.store.JobStoreContractTest;
import io.sluice.store.LocalRedis;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Two replicas' connections to the Redis at 127.0.0.1:6379 (skipped when none answers). */
class RedisJobStoreContractTest extends JobStoreContractTest {
  @RegisterExtension final TwoRedisReplicas redis = new TwoRedisReplicas();
  private final String prefix = LocalRedis.uniquePrefix();

  @Override
  protected JobStore replicaA() {
    return new RedisJobStore(redis.a().connection());
  }

  @Override
  protected JobStore replicaB() {
    return new RedisJobStore(redis.b().connection());
  }

  @Override
  protected String prefix() {
    return prefix;
  }
}
