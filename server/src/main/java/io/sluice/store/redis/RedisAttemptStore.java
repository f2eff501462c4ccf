package io.sluice.store.redis;

import io.sluice.core.retry.AttemptStore;
import java.util.concurrent.CompletionStage;

/**
 * {@link AttemptStore} on a {@link RedisConnection}: retry control's seen counters, in-flight
 * claims, remembered refusals and budget buckets, one {@code attempts.lua} call per request (every
 * key of a call in one pool's slot), on Redis's clock.
 *
 * <p>A claim is written with its owner (a holder id of that request only) and goes by compare and
 * delete. An {@link #observe} that fails may still run (a hung Redis runs it when it resumes) and
 * leave a claim nobody gives back, for {@code duplicates.maxInFlight}: it is followed by the
 * compare-and-delete of that owner's claim ({@link LateWrites}). A {@link #complete} that fails is
 * sent again until answered.
 */
public final class RedisAttemptStore implements AttemptStore {
  /** The {@code store} tag of this port's late writes undone. */
  public static final String STORE = "attempts";

  /**
   * How long a failed {@link #complete} is sent again at most: the default {@code
   * duplicates.maxInFlight}, past which a claim has expired by itself (the call does not say the
   * claim's own TTL).
   */
  static final long GIVE_BACK_MILLIS = 600_000;

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
    CompletionStage<Observation> answer =
        redis.eval(
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
    if (op == null || !o.claim()) {
      return answer;
    }
    String owner = o.owner();
    long ttl = Math.max(1, o.inFlightTtlMillis());
    return answer.whenComplete(
        (obs, e) -> {
          if (e != null && LateWrites.mayHaveRun(e)) {
            redis.lateWrites().undo(STORE, () -> release(op, owner), ttl);
          }
        });
  }

  /** {@code attempts.lua complete} with no replay: the owner's claim goes; whether it was there. */
  private CompletionStage<Boolean> release(String operationKey, String owner) {
    String[] keys = {operationKey};
    String[] args = {"complete", owner, "0"};
    return redis.eval(SCRIPT, keys, args, r -> ((Number) r.get(0)).longValue() == 1);
  }

  /**
   * {@code attempts.lua complete}: compare and delete (or mark done for the replay window); sent
   * again until answered when it fails.
   */
  @Override
  public CompletionStage<Void> complete(String operationKey, String owner, long replayMillis) {
    String[] keys = {operationKey};
    String[] args = {"complete", owner, Long.toString(Math.max(0, replayMillis))};
    return redis
        .eval(SCRIPT, keys, args, r -> (Void) null)
        .whenComplete(
            (v, e) -> {
              if (e != null) {
                redis
                    .lateWrites()
                    .giveBack(
                        () ->
                            redis.eval(
                                SCRIPT, keys, args, r -> ((Number) r.get(0)).longValue() == 1),
                        GIVE_BACK_MILLIS);
              }
            });
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
