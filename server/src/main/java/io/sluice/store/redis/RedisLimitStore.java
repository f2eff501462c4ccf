package io.sluice.store.redis;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.adapt.LimitStore;
import io.sluice.core.store.PoolKeys;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletionStage;

/**
 * {@link LimitStore} on a {@link RedisConnection}: one hash per adaptive pool ({@link
 * PoolKeys#limit}) kept by {@code adaptive_limit.lua}, atomic per exchange, on Redis's clock.
 */
public final class RedisLimitStore implements LimitStore {
  private static final RedisScript SCRIPT = RedisScript.load("adaptive_limit.lua");

  private final RedisConnection redis;

  public RedisLimitStore(RedisConnection redis) {
    this.redis = redis;
    redis.register(SCRIPT, null);
  }

  /** {@code adaptive_limit.lua} on the pool's limit hash ({@link LimitStore}). */
  @Override
  public CompletionStage<Shared> exchange(String namespace, String pool, Exchange x) {
    var p = x.proposal();
    String[] keys = {PoolKeys.limit(namespace, pool)};
    String[] args = {
      p == null ? "" : p.shrink() ? "shrink" : "grow",
      p == null ? "0" : Double.toString(p.from()),
      p == null ? "0" : Double.toString(p.to()),
      p == null ? "" : p.cause().label(),
      Long.toString(Math.max(0, x.pauseMillis())),
      x.ttftBaselineNanos() > 0 ? Double.toString(x.ttftBaselineNanos()) : "0",
      x.tpotBaselineNanos() > 0 ? Double.toString(x.tpotBaselineNanos()) : "0",
      Long.toString(Math.max(0, x.minGapMillis())),
      Long.toString(Math.max(1, x.baselineWindowMillis()))
    };
    return redis.eval(SCRIPT, keys, args, RedisLimitStore::toShared);
  }

  private static Shared toShared(List<Object> r) {
    AdaptiveLimit.Cause cause;
    try {
      cause = AdaptiveLimit.Cause.valueOf(String.valueOf(r.get(1)).toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      cause = AdaptiveLimit.Cause.SHARED; // a cause of another version
    }
    return new Shared(
        number(r.get(0)), cause, (long) number(r.get(2)), number(r.get(3)), number(r.get(4)));
  }

  /** A number the script answered as a string ('' or garbage: NaN). */
  private static double number(Object o) {
    String s = o == null ? "" : String.valueOf(o);
    if (s.isEmpty()) {
      return Double.NaN;
    }
    try {
      return Double.parseDouble(s);
    } catch (NumberFormatException e) {
      return Double.NaN;
    }
  }
}
