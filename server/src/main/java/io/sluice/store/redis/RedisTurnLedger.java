package io.sluice.store.redis;

import io.sluice.core.turn.TurnLedger;
import java.util.concurrent.CompletionStage;

/**
 * {@link TurnLedger} on a {@link RedisConnection}: one hash per run, turn and pool kept by {@code
 * turn_ledger.lua}, atomic per call, expiring its TTL after its last write. A call that failed may
 * still run late (a hung Redis): a late retry or shed counted errs toward refusing one more retry
 * in that turn, never toward letting one more through, and leaves with the key's TTL.
 */
public final class RedisTurnLedger implements TurnLedger {
  private static final RedisScript SCRIPT = RedisScript.load("turn_ledger.lua");

  private final RedisConnection redis;

  public RedisTurnLedger(RedisConnection redis) {
    this.redis = redis;
    redis.register(
        SCRIPT,
        (key, n) ->
            shed(key, "w" + n, "warmup", "t", 1000)
                .thenCompose(v -> call(key, "w" + n, "warmup", "t", 1, 1000)));
  }

  @Override
  public CompletionStage<Verdict> call(
      String namespace, String pool, String run, String turn, int maxRetries, long ttlMillis) {
    String[] keys = {TurnLedger.key(namespace, pool, run, turn)};
    String[] args = {
      "call", Long.toString(Math.max(1, ttlMillis)), Integer.toString(Math.max(0, maxRetries))
    };
    return redis.eval(
        SCRIPT,
        keys,
        args,
        r ->
            new Verdict(
                ((Number) r.get(0)).longValue() == 1,
                ((Number) r.get(1)).longValue(),
                ((Number) r.get(2)).longValue()));
  }

  @Override
  public CompletionStage<Void> shed(
      String namespace, String pool, String run, String turn, long ttlMillis) {
    String[] keys = {TurnLedger.key(namespace, pool, run, turn)};
    String[] args = {"shed", Long.toString(Math.max(1, ttlMillis))};
    return redis.eval(SCRIPT, keys, args, r -> (Void) null);
  }
}
