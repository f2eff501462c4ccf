package io.sluice.store.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.sluice.core.quota.WorkflowPlaces;
import io.sluice.store.LocalRedis;
import io.sluice.store.WorkflowPlacesContractTest;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@code workflow_places.lua} on the Redis at 127.0.0.1:6379: the port's contract, each place a
 * holder of the workflow's sorted set (read back by replica).
 */
class RedisWorkflowPlacesContractTest extends WorkflowPlacesContractTest {
  private static RedisPorts ports;
  private static RedisWorkflowPlaces store;
  private static RedisClient raw;
  private static StatefulRedisConnection<String, String> conn;

  @BeforeAll
  static void connect() {
    ports = LocalRedisStore.open();
    store = new RedisWorkflowPlaces(ports.connection());
    raw = RedisClient.create("redis://127.0.0.1:" + LocalRedis.PORT);
    conn = raw.connect();
  }

  @AfterAll
  static void close() {
    if (ports != null) {
      ports.close();
    }
    if (conn != null) {
      conn.close();
      raw.shutdown();
    }
  }

  @Override
  protected WorkflowPlaces store() {
    return store;
  }

  @Override
  protected Map<String, Long> contributions(String ns) {
    Map<String, Long> out = new HashMap<>();
    for (String holder :
        conn.sync().zrange(RedisWorkflowPlaces.workflowKey(ns, "p", "run-1"), 0, -1)) {
      out.merge(RedisWorkflowPlaces.replicaOf(holder), 1L, Long::sum);
    }
    return out;
  }
}
