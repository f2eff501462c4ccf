package io.sluice.store.redis;

import io.sluice.core.permit.PermitLeases;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link PermitLeases} on a {@link RedisConnection}: per pool one sorted set of {@code
 * leased_places.lua} (the script of {@link RedisLeasedPlaces}, its {@code grant}, {@code extend},
 * {@code end} and {@code states} ops), a member per permit id scored by its lease expiry on Redis's
 * clock; every call one script call, so a release at any replica is answered true once. Keeps
 * nothing per permit in this process.
 *
 * <p>A grant that fails (a timeout: a hung Redis may still run it) is followed by the removal of
 * its record ({@link LateWrites}, under {@link #STORE}); a record nobody renews ends with its lease
 * in any case. Its warm-up round grants and releases one lease on a throwaway key.
 */
public final class RedisPermitLeases implements PermitLeases {
  /** The {@code store} tag of this port's late writes undone. */
  public static final String STORE = "permit_leases";

  private static final RedisScript SCRIPT = RedisScript.load("leased_places.lua");

  private final RedisConnection redis;

  public RedisPermitLeases(RedisConnection redis) {
    this.redis = redis;
    redis.register(
        SCRIPT,
        (key, n) -> {
          Scope warm = new Scope(key, "p" + n);
          return grant(warm, "warmup", 1, 1000).thenCompose(g -> release(warm, "warmup"));
        });
  }

  @Override
  public CompletionStage<Boolean> grant(
      Scope scope, String permitId, int maxLeases, long leaseTtlMillis) {
    String key = scope.key();
    long ttl = Math.max(1, leaseTtlMillis);
    String[] args = {
      "grant", Long.toString(ttl), permitId, Integer.toString(Math.max(1, maxLeases))
    };
    CompletionStage<Boolean> granted =
        redis.eval(SCRIPT, new String[] {key}, args, r -> ((Number) r.get(0)).longValue() == 1);
    return granted.whenComplete(
        (g, e) -> {
          if (e != null && LateWrites.mayHaveRun(e)) {
            redis.lateWrites().undo(STORE, () -> remove(key, permitId, ttl), ttl);
          }
        });
  }

  /** Removes {@code permitId}'s record, live or not (a late grant undone): whether it was there. */
  private CompletionStage<Boolean> remove(String key, String permitId, long ttl) {
    String[] args = {"release", Long.toString(ttl), permitId};
    return redis.eval(SCRIPT, new String[] {key}, args, r -> ((Number) r.get(0)).longValue() == 1);
  }

  @Override
  public CompletionStage<Boolean> renew(Scope scope, String permitId, long leaseTtlMillis) {
    return one(scope, "extend", permitId, Math.max(1, leaseTtlMillis));
  }

  @Override
  public CompletionStage<Ended> end(Scope scope, String permitId) {
    String[] args = {"end", "1", permitId};
    return redis.eval(
        SCRIPT,
        new String[] {scope.key()},
        args,
        r -> {
          long e = ((Number) r.get(0)).longValue();
          return e == 2 ? Ended.RELEASED : e == 1 ? Ended.AFTER_EXPIRY : Ended.GONE;
        });
  }

  private CompletionStage<Boolean> one(Scope scope, String op, String permitId, long ttl) {
    String[] args = {op, Long.toString(ttl), permitId};
    return redis.eval(
        SCRIPT, new String[] {scope.key()}, args, r -> ((Number) r.get(0)).longValue() == 1);
  }

  @Override
  public CompletionStage<Map<String, State>> states(Scope scope, Collection<String> permitIds) {
    if (permitIds.isEmpty()) {
      return CompletableFuture.completedFuture(Map.of());
    }
    List<String> ids = List.copyOf(permitIds);
    String[] args = new String[ids.size() + 2];
    args[0] = "states";
    args[1] = "1";
    for (int i = 0; i < ids.size(); i++) {
      args[i + 2] = ids.get(i);
    }
    return redis.eval(
        SCRIPT,
        new String[] {scope.key()},
        args,
        r -> {
          Map<String, State> out = new HashMap<>();
          for (int i = 0; i < ids.size(); i++) {
            long s = ((Number) r.get(i)).longValue();
            out.put(
                ids.get(i),
                s == 2
                    ? State.LIVE
                    : s == 1 ? State.EXPIRED : s == 3 ? State.RELEASED_AFTER_EXPIRY : State.GONE);
          }
          return out;
        });
  }
}
