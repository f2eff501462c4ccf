package io.sluice.core.share;

import io.sluice.store.memory.InMemoryShareStore;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;

/**
 * The lease rule of {@code share_lease.lua} in Java ({@link InMemoryShareStore}), on a clock the
 * test moves: the reference the Redis script is checked against ({@code RedisShareStoreTest}) and
 * the store of the simulations. {@link #down} makes every call fail, as a store outage.
 */
public final class ShareLeaseModel implements ShareStore {
  private final InMemoryShareStore store;
  volatile boolean down;

  public ShareLeaseModel(LongSupplier nowMillis) {
    this.store = new InMemoryShareStore(clock(nowMillis));
  }

  @Override
  public CompletionStage<Grant> exchange(Exchange x) {
    return down ? failed() : store.exchange(x);
  }

  @Override
  public CompletionStage<Integer> supersede(
      String namespace, String pool, String replica, String prefix) {
    return down ? failed() : store.supersede(namespace, pool, replica, prefix);
  }

  @Override
  public CompletionStage<Void> leave(String namespace, String pool, String replica) {
    return down ? failed() : store.leave(namespace, pool, replica);
  }

  /** The replicas holding a lease on {@code pool}, live or not yet dropped. */
  java.util.Set<String> replicas(String namespace, String pool) {
    return store.replicas(namespace, pool);
  }

  @Override
  public String toString() {
    return store.toString();
  }

  private static <T> CompletionStage<T> failed() {
    return CompletableFuture.failedFuture(new RuntimeException("store down"));
  }

  private static Clock clock(LongSupplier nowMillis) {
    return new Clock() {
      @Override
      public ZoneId getZone() {
        return ZoneOffset.UTC;
      }

      @Override
      public Clock withZone(ZoneId zone) {
        return this;
      }

      @Override
      public long millis() {
        return nowMillis.getAsLong();
      }

      @Override
      public Instant instant() {
        return Instant.ofEpochMilli(millis());
      }
    };
  }
}
