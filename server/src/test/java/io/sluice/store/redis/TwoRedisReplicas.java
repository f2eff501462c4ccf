package io.sluice.store.redis;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Two replicas' connections to the Redis at 127.0.0.1:6379 ({@link LocalRedisStore}), opened before
 * each test and closed after it; the test is skipped when nothing answers there. A store contract
 * test registers it ({@code @RegisterExtension}) and builds each replica's store on {@link #a} and
 * {@link #b}.
 */
final class TwoRedisReplicas implements BeforeEachCallback, AfterEachCallback {
  private RedisPorts a;
  private RedisPorts b;

  @Override
  public void beforeEach(ExtensionContext context) {
    a = LocalRedisStore.open();
    b = LocalRedisStore.open();
  }

  @Override
  public void afterEach(ExtensionContext context) {
    if (a != null) {
      a.close();
    }
    if (b != null) {
      b.close();
    }
    a = null;
    b = null;
  }

  RedisPorts a() {
    return a;
  }

  RedisPorts b() {
    return b;
  }
}
