package io.sluice.store.redis;

import io.sluice.core.budget.BudgetStore;
import io.sluice.core.budget.Ledger;
import io.sluice.core.budget.Period;
import io.sluice.core.budget.Terms;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * {@link BudgetStore} on a {@link RedisConnection}: one hash per budget key (its hash tag keeps it
 * in one slot, standalone or Cluster), one {@code budgets.lua} call per operation applying the
 * {@link Ledger} rule atomically. The window comes from the caller's clock, so replicas count the
 * same window; a key lives until its window ends plus a day (a rolling one: its length plus a
 * slice). Reservation ids (deduplication, {@link BudgetStore.Hold}) are kept beside it, in a hash
 * per window ({@code <key>:ids:<window id>}, the same hash tag), expiring with the key: the units
 * each running reservation holds, and a mark for each settled whose reserve had timed out.
 */
public final class RedisBudgetStore implements BudgetStore {
  private static final RedisScript SCRIPT = RedisScript.load("budgets.lua");
  private static final long GRACE_MILLIS = Duration.ofDays(1).toMillis();

  private final RedisConnection redis;

  public RedisBudgetStore(RedisConnection redis) {
    this.redis = redis;
    redis.register(SCRIPT, null);
  }

  @Override
  public CompletionStage<Ledger.Outcome> reserve(
      String key, @Nullable String id, Period period, Terms terms, long cost, Instant now) {
    Period.Window w = period.at(now);
    String[] args = args("reserve", period, w, terms, now, 2);
    args[12] = Long.toString(cost);
    args[13] = id == null ? "" : id;
    return redis.eval(
        SCRIPT,
        keys(key, id, w.id()),
        args,
        r -> {
          String what = String.valueOf(r.get(0));
          return switch (what) {
            case "admit" ->
                new Ledger.Outcome.Admit(Ledger.State.FRESH, num(r, 1), num(r, 2), (int) num(r, 3));
            case "wait" -> new Ledger.Outcome.Wait(Ledger.State.FRESH, num(r, 1) == 1, num(r, 2));
            default -> new Ledger.Outcome.Exhausted(Ledger.State.FRESH, w.end());
          };
        });
  }

  @Override
  public CompletionStage<Integer> settle(
      String key, Period period, Terms terms, Hold hold, long actual, Instant now) {
    Period.Window w = period.at(now);
    String[] args = args("settle", period, w, terms, now, 6);
    args[12] = "";
    args[13] = hold.windowId();
    args[14] = Long.toString(hold.units());
    args[15] = Long.toString(actual);
    args[16] = hold.id() == null ? "" : hold.id();
    args[17] = hold.answered() ? "1" : "0";
    return redis.eval(SCRIPT, keys(key, hold.id(), hold.windowId()), args, r -> (int) num(r, 0));
  }

  @Override
  public CompletionStage<Long> shrink(
      String key, Period period, Terms terms, Hold hold, long units, Instant now) {
    String id = hold.id();
    if (id == null) {
      return java.util.concurrent.CompletableFuture.completedFuture(0L);
    }
    Period.Window w = period.at(now);
    String[] args = args("shrink", period, w, terms, now, 6);
    args[12] = "";
    args[13] = hold.windowId();
    args[14] = Long.toString(Math.max(0, units));
    args[15] = "0";
    args[16] = id;
    args[17] = "1";
    return redis.eval(SCRIPT, keys(key, id, hold.windowId()), args, r -> num(r, 0));
  }

  /** The budget's key, and with a reservation id the ids of {@code windowId} (one slot). */
  static String[] keys(String key, @Nullable String id, String windowId) {
    return id == null ? new String[] {key} : new String[] {key, key + ":ids:" + windowId};
  }

  @Override
  public CompletionStage<Ledger.State> read(String key, Period period, Terms terms, Instant now) {
    Period.Window w = period.at(now);
    String[] args = args("read", period, w, terms, now, 0);
    return redis.eval(
        SCRIPT,
        new String[] {key},
        args,
        r ->
            new Ledger.State(
                num(r, 0),
                num(r, 1),
                Double.parseDouble(String.valueOf(r.get(2))),
                num(r, 3),
                (int) num(r, 4)));
  }

  private static String[] args(
      String op, Period period, Period.Window w, Terms terms, Instant now, int extra) {
    String[] a = new String[12 + extra];
    long oldest = 0;
    long cur = 0;
    long ttl;
    if (period instanceof Period.Rolling r) {
      cur = r.sliceIndex(now);
      oldest = cur - r.slices() + 1;
      ttl = r.length().toMillis() + r.slice().toMillis();
    } else {
      ttl = Math.max(1, w.end().toEpochMilli() - now.toEpochMilli()) + GRACE_MILLIS;
    }
    StringBuilder th = new StringBuilder();
    for (double t : terms.thresholds()) {
      if (th.length() > 0) {
        th.append(',');
      }
      th.append((long) Math.ceil(t * terms.limit()));
    }
    a[0] = op;
    a[1] = w.id();
    a[2] = Long.toString(w.start().toEpochMilli());
    a[3] = w.rolling() ? "1" : "0";
    a[4] = Long.toString(Math.max(1, w.paceHorizon(now).toMillis()));
    a[5] = Long.toString(oldest);
    a[6] = Long.toString(cur);
    a[7] = Long.toString(terms.limit());
    a[8] = Long.toString(terms.burst());
    a[9] = th.toString();
    a[10] = Long.toString(now.toEpochMilli());
    a[11] = Long.toString(ttl);
    return a;
  }

  private static long num(List<Object> r, int i) {
    Object o = r.get(i);
    return o instanceof Number n ? n.longValue() : Long.parseLong(String.valueOf(o));
  }
}
