package io.sluice.store.redis;

import io.sluice.core.intake.JobStore;
import io.sluice.store.JobStoreContractTest;
import io.sluice.store.LocalRedis;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Two replicas' connections to the Redis at 127.0.0.1:6379 (skipped when none answers). */
class RedisJobStoreContractTest extends JobStoreContractTest {
  @RegisterExtension final TwoRedisReplicas redis = new TwoRedisReplicas();
  private final String prefix = LocalRedis.uniquePrefix();

  private JobStore a;
  private JobStore b;

  @Override
  protected JobStore replicaA() { // one store per replica: it keeps what its answers told
    if (a == null) {
      a = new RedisJobStore(redis.a().connection());
    }
    return a;
  }

  @Override
  protected JobStore replicaB() {
    if (b == null) {
      b = new RedisJobStore(redis.b().connection());
    }
    return b;
  }

  @Override
  protected String prefix() {
    return prefix;
  }
}
