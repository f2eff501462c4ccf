package io.sluice.store.redis;

import io.lettuce.core.RedisCommandExecutionException;
import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.KeyValueStore;
import io.sluice.core.store.StoreHealth;
import io.sluice.core.store.TokenBucketResult;
import io.sluice.core.store.TokenBucketSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/**
 * {@link KeyValueStore} on a {@link RedisConnection}: fixed-window counters and token buckets.
 *
 * <p>Counters use envoyproxy/ratelimit's commands: for every key {@code INCRBY key hits} then
 * {@code EXPIRE key seconds}, all commands of a batch written back to back on one connection
 * without waiting for replies (a pipeline; not a MULTI transaction, same as the reference). Token
 * buckets run {@code token_bucket.lua} with EVALSHA (EVAL on NOSCRIPT), atomic per key.
 *
 * <p>{@link #warmUp} warms the whole connection: every script registered on it and every port's
 * warm-up round; this store's round is two increments and a bucket take.
 */
public final class RedisKeyValueStore implements KeyValueStore {
  private static final RedisScript SCRIPT = RedisScript.load("token_bucket.lua");

  private final RedisConnection redis;

  public RedisKeyValueStore(RedisConnection redis) {
    this.redis = redis;
    redis.register(
        SCRIPT,
        (key, n) ->
            increment(
                    List.of(
                        new CounterIncrement(key + "c" + n, 1, 2, 0),
                        new CounterIncrement(key + "c" + n, 0, 2, 0)))
                .thenCompose(
                    c ->
                        take(
                            key + "b" + n,
                            new TokenBucketSpec(10, 10, 1000),
                            1,
                            System.currentTimeMillis())));
  }

  @Override
  public CompletionStage<Void> warmUp(String keyPrefix, int rounds) {
    return redis.warmUp(keyPrefix, rounds);
  }

  @Override
  public CompletionStage<long[]> increment(List<CounterIncrement> batch) {
    if (batch.isEmpty()) {
      return CompletableFuture.completedFuture(new long[0]);
    }
    return redis.calls(
        cmds -> {
          List<CompletableFuture<Long>> incr = new ArrayList<>(batch.size());
          List<CompletableFuture<?>> all = new ArrayList<>(batch.size() * 2);
          for (CounterIncrement inc : batch) {
            CompletableFuture<Long> f =
                cmds.incrby(inc.key(), inc.hits())
                    .toCompletableFuture()
                    .exceptionallyCompose(RedisKeyValueStore::saturateOnOverflow);
            incr.add(f);
            all.add(f);
            all.add(cmds.expire(inc.key(), inc.expirySeconds()).toCompletableFuture());
          }
          return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
              .thenApply(
                  v -> {
                    long[] after = new long[incr.size()];
                    for (int i = 0; i < after.length; i++) {
                      after[i] = incr.get(i).join();
                    }
                    return after;
                  });
        });
  }

  /**
   * Redis refuses an INCRBY that would pass 2^63 − 1 ("increment or decrement would overflow"): the
   * counter is then at least that high, so it is answered as saturated (far over any limit) instead
   * of failing the call into its failure mode (which could let it through).
   */
  private static CompletionStage<Long> saturateOnOverflow(Throwable e) {
    Throwable c = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    if (c instanceof RedisCommandExecutionException
        && String.valueOf(c.getMessage()).contains("overflow")) {
      return CompletableFuture.completedFuture(Long.MAX_VALUE);
    }
    return CompletableFuture.failedFuture(c);
  }

  @Override
  public CompletionStage<TokenBucketResult> take(
      String key, TokenBucketSpec spec, long tokens, long nowMillis) {
    return bucket(key, spec, tokens, nowMillis, false);
  }

  @Override
  public CompletionStage<TokenBucketResult> charge(
      String key, TokenBucketSpec spec, long tokens, long nowMillis) {
    return bucket(key, spec, tokens, nowMillis, true);
  }

  private CompletionStage<TokenBucketResult> bucket(
      String key, TokenBucketSpec spec, long tokens, long nowMillis, boolean force) {
    String[] keys = {key};
    String[] args = {
      Long.toString(spec.capacity()),
      Long.toString(spec.refillTokens()),
      Long.toString(spec.refillPeriodMillis()),
      Long.toString(tokens),
      Long.toString(nowMillis),
      force ? "1" : "0"
    };
    return redis.eval(SCRIPT, keys, args, RedisKeyValueStore::toResult);
  }

  private static TokenBucketResult toResult(List<Object> r) {
    return new TokenBucketResult(
        ((Number) r.get(0)).longValue() == 1,
        Double.parseDouble(String.valueOf(r.get(1))),
        ((Number) r.get(2)).longValue(),
        ((Number) r.get(3)).longValue());
  }

  @Override
  public boolean inProcess() {
    return false; // a round trip to Redis: timed
  }

  /** {@code REDIS_COMMAND_TIMEOUT}. */
  @Override
  public Duration commandTimeout() {
    return redis.commandTimeout();
  }

  /** {@code REDIS_RECONNECT_INTERVAL}. */
  @Override
  public Duration retryInterval() {
    return redis.retryInterval();
  }

  @Override
  public StoreHealth health() {
    return redis.health();
  }
}
