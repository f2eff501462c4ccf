package io.sluice.store.redis;

import io.sluice.core.budget.BudgetStore;
import io.sluice.store.BudgetStoreContractTest;
import io.sluice.store.LocalRedis;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Two replicas' connections to the Redis at 127.0.0.1:6379 (skipped when none answers). */
class RedisBudgetStoreContractTest extends BudgetStoreContractTest {
  @RegisterExtension final TwoRedisReplicas redis = new TwoRedisReplicas();
  private final String prefix = LocalRedis.uniquePrefix();

  @Override
  protected BudgetStore replicaA() {
    return new RedisBudgetStore(redis.a().connection());
  }

  @Override
  protected BudgetStore replicaB() {
    return new RedisBudgetStore(redis.b().connection());
  }

  @Override
  protected String prefix() {
    return prefix;
  }
}
