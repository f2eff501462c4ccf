package io.sluice.store.redis;

import io.sluice.core.permit.PermitLeases;
import io.sluice.store.LocalRedis;
import io.sluice.store.PermitLeasesContractTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The leases in {@code leased_places.lua} on the Redis at 127.0.0.1:6379 (skipped when none
 * answers), two replicas on two connections; expiry on Redis's clock with short leases.
 */
class RedisPermitLeasesContractTest extends PermitLeasesContractTest {
  private static RedisPorts a;
  private static RedisPorts b;
  private static RedisPermitLeases storeA;
  private static RedisPermitLeases storeB;
  private final String namespace = LocalRedis.uniquePrefix();

  @BeforeAll
  static void connect() {
    a = LocalRedisStore.open();
    b = LocalRedisStore.open();
    storeA = new RedisPermitLeases(a.connection());
    storeB = new RedisPermitLeases(b.connection());
  }

  @AfterAll
  static void close() {
    if (a != null) {
      a.close();
      b.close();
    }
  }

  @Override
  protected PermitLeases store() {
    return storeA;
  }

  @Override
  protected PermitLeases otherReplica() {
    return storeB;
  }

  @Override
  protected String namespace() {
    return namespace;
  }

  @Override
  protected void pass(long millis) throws Exception {
    Thread.sleep(millis); // Redis's own clock: the holders' scores
  }
}
