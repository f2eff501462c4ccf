package io.sluice.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.share.ShareStore;
import io.sluice.store.ShareStoreContractTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** {@code share_lease.lua} on the Redis at 127.0.0.1:6379 (skipped when none answers). */
class RedisShareStoreTest extends ShareStoreContractTest {
  private static RedisPorts store;

  @BeforeAll
  static void connect() {
    store = LocalRedisStore.open();
  }

  @AfterAll
  static void close() {
    if (store != null) {
      store.close();
    }
  }

  @Override
  protected ShareStore store() {
    return store.shares();
  }

  @Test
  void theKeyIsHashTaggedOnThePool() {
    assertThat(RedisShareStore.shareKey("sluice_", "gpu-a")).isEqualTo("sluice_{gpu-a}:shares");
  }
}
