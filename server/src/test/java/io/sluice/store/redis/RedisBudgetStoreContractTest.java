package io.sluice.store.redis;

import io.sluice.core.budget.BudgetStore;
import io.sluice.store.BudgetStoreContractTest;
import io.sluice.store.LocalRedis;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** Two replicas' connections to the Redis at 127.0.0.1:6379 (skipped when none answers). */
class RedisBudgetStoreContractTest extends BudgetStoreContractTest {
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
  protected BudgetStore replicaA() {
    return new RedisBudgetStore(a.connection());
  }

  @Override
  protected BudgetStore replicaB() {
    return new RedisBudgetStore(b.connection());
  }

  @Override
  protected String prefix() {
    return prefix;
  }
}
