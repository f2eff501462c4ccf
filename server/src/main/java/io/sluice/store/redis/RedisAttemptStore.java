package io.sluice.store.redis;

import io.sluice.core.retry.AttemptStore;
import java.util.concurrent.CompletionStage;

/**
 * {@link AttemptStore} on a {@link RedisConnection}: retry control's seen counters, in-flight
 * claims, remembered refusals and budget buckets, one {@code attempts.lua} call per request (every
 * key of a call in one pool's slot), on Redis's clock.
 */
public final class RedisAttemptStore implements AttemptStore {
  private static final RedisScript SCRIPT = RedisScript.load("attempts.lua");

  private final RedisConnection redis;

  public RedisAttemptStore(RedisConnection redis) {
    this.redis = redis;
    redis.register(SCRIPT, null);
  }

  /** A call per observe: retry control defers what it can ({@link AttemptStore#shared}). */
  @Override
  public boolean shared() {
    return true;
  }

  /** {@code attempts.lua observe}: seen count, in-flight claim (SET NX PX), refusal, budget. */
  @Override
  public CompletionStage<Observation> observe(Observe o) {
    String none = o.refusalKey(); // a key of the same pool stands in for an unused one
    String seen = o.seenKey();
    String op = o.operationKey();
    String budget = o.budgetKey();
    String[] keys = {
      seen == null ? none : seen, op == null ? none : op, none, budget == null ? none : budget
    };
    String[] args = {
      "observe",
      o.owner(),
      o.retryByHeaders() ? "1" : "0",
      o.refuseInFlight() ? "1" : "0",
      o.refuseReplay() ? "1" : "0",
      o.refuseEarly() ? "1" : "0",
      Long.toString(Math.max(1, o.seenWindowMillis())),
      Long.toString(Math.max(1, o.inFlightTtlMillis())),
      Double.toString(o.maxTokens()),
      Double.toString(o.tokenRatio()),
      Long.toString(Math.max(1, o.idleMillis())),
      seen == null ? "0" : "1",
      op == null || !o.claim() ? "0" : "1",
      budget == null ? "0" : "1",
      Long.toString(Math.max(0, o.deferredOriginals()))
    };
    return redis.eval(
        SCRIPT,
        keys,
        args,
        r -> {
          String tokens = String.valueOf(r.get(9));
          return new Observation(
              ((Number) r.get(0)).longValue(),
              (int) ((Number) r.get(1)).longValue(),
              ((Number) r.get(2)).longValue(),
              ((Number) r.get(3)).longValue() == 1,
              ((Number) r.get(4)).longValue() == 1
                  ? ((Number) r.get(5)).longValue()
                  : Long.MIN_VALUE,
              ((Number) r.get(6)).longValue(),
              String.valueOf(r.get(7)),
              ((Number) r.get(8)).longValue() == 1,
              tokens.isEmpty() ? Double.NaN : Double.parseDouble(tokens));
        });
  }

  /** {@code attempts.lua complete}: compare and delete (or mark done for the replay window). */
  @Override
  public CompletionStage<Void> complete(String operationKey, String owner, long replayMillis) {
    String[] keys = {operationKey};
    String[] args = {"complete", owner, Long.toString(Math.max(0, replayMillis))};
    return redis.eval(SCRIPT, keys, args, r -> (Void) null);
  }

  /** {@code attempts.lua remember}: a refusal's Retry-After end, kept {@code keepMillis}. */
  @Override
  public CompletionStage<Void> remember(
      String refusalKey, long retryAfterSeconds, String reason, long keepMillis) {
    String[] keys = {refusalKey};
    String[] args = {
      "remember",
      Long.toString(Math.max(0, retryAfterSeconds)),
      reason,
      Long.toString(Math.max(1, Math.max(keepMillis, retryAfterSeconds * 1000)))
    };
    return redis.eval(SCRIPT, keys, args, r -> (Void) null);
  }
}
