package io.sluice.store.redis;

import io.sluice.core.quota.LeasedPlaces;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@link LeasedPlaces} on a {@link RedisConnection}: one sorted set per owner kept by {@code
 * leased_places.lua}, atomic per call: a member per place held, named by the call that took it with
 * its work units ({@code <replica>|<id>|<work>}), scored by its lease expiry on Redis's clock. A
 * replica's contribution is the number of its holders; its renewals refresh each of them.
 *
 * <p>A write Sluice gave up on cannot outlive what it holds: an acquire that fails (a timeout: a
 * hung Redis may still run it) is followed by the removal of its holder ({@link LateWrites}, under
 * this instance's {@code store} tag), and a holder nobody renews leaves with its lease. A release
 * that fails is sent again until answered.
 *
 * <p>This class keeps the holder ids it granted, by key and replica, so that {@link #release} and
 * {@link #renew} name them; an entry leaves when its last place is given back, so the map is
 * bounded by the places held. Its warm-up round takes and gives back one place on a throwaway key.
 */
public final class RedisLeasedPlaces implements LeasedPlaces {
  private static final RedisScript SCRIPT = RedisScript.load("leased_places.lua");

  private final RedisConnection redis;
  private final String store;
  private final String incarnation =
      Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL);
  private final AtomicLong calls = new AtomicLong();
  // guarded by this: the holders granted and not given back, by key and replica
  private final Map<Holding, ArrayDeque<String>> holders = new HashMap<>();
  // guarded by this: renewals read and not answered; the holders given back while one was out
  private int renewing;
  private final ArrayList<Released> releasedWhileRenewing = new ArrayList<>();

  private record Holding(String key, String replica) {}

  private record Released(String key, String holder, long ttl) {}

  /**
   * At most this many holders given back during a renewal are removed again after it; past it the
   * lease takes the rest (a renewal is out for a round trip, so this is never reached in practice).
   */
  static final int MAX_RELEASED_WHILE_RENEWING = 4096;

  /**
   * @param store the {@code store} tag of this instance's late writes undone ({@code
   *     sluice_store_late_writes_undone_total})
   */
  public RedisLeasedPlaces(RedisConnection redis, String store) {
    this.redis = redis;
    this.store = store;
    redis.register(
        SCRIPT,
        (key, n) -> {
          Scope warm = new Scope(key, "w" + n, store);
          return acquire(warm, "o", "warmup", 1, 1, 0, 1000)
              .thenCompose(a -> release(warm, "o", "warmup", 1, 1000));
        });
  }

  /** The replica a holder id belongs to ({@code <replica>|<id>|<work>}). */
  public static String replicaOf(String holder) {
    int end = holder.lastIndexOf('|');
    int bar = end <= 0 ? -1 : holder.lastIndexOf('|', end - 1);
    return bar < 0 ? holder : holder.substring(0, bar);
  }

  @Override
  public CompletionStage<Answer> acquire(
      Scope scope,
      String owner,
      String replica,
      long work,
      int maxPlaces,
      long maxWork,
      long leaseTtlMillis) {
    String key = scope.key(owner);
    long w = Math.max(0, work);
    String holder = replica + "|" + incarnation + "." + calls.incrementAndGet() + "|" + w;
    long ttl = Math.max(1, leaseTtlMillis);
    String[] keys = {key};
    String[] args = {
      "acquire",
      Long.toString(ttl),
      holder,
      Long.toString(w),
      Integer.toString(Math.max(0, maxPlaces)),
      Long.toString(Math.max(0, maxWork))
    };
    return redis
        .eval(
            SCRIPT,
            keys,
            args,
            r ->
                new Answer(
                    ((Number) r.get(0)).longValue() == 1,
                    ((Number) r.get(1)).longValue(),
                    ((Number) r.get(2)).longValue()))
        .whenComplete(
            (a, e) -> {
              if (e != null) {
                if (LateWrites.mayHaveRun(e)) {
                  redis.lateWrites().undo(store, () -> remove(key, holder, ttl), ttl);
                }
              } else if (a.granted()) {
                synchronized (this) {
                  holders
                      .computeIfAbsent(new Holding(key, replica), h -> new ArrayDeque<>())
                      .push(holder);
                }
              }
            });
  }

  /**
   * Removes one of the holders granted to {@code replica}, one of {@code work} units when there is
   * one (none held: a no-op). A failed release is sent again until answered; the holder, no longer
   * renewed, leaves with its lease in any case.
   */
  @Override
  public CompletionStage<Void> release(
      Scope scope, String owner, String replica, long work, long leaseTtlMillis) {
    String key = scope.key(owner);
    String holder = null;
    synchronized (this) {
      Holding h = new Holding(key, replica);
      ArrayDeque<String> held = holders.get(h);
      if (held != null) {
        String suffix = "|" + Math.max(0, work);
        for (Iterator<String> it = held.iterator(); it.hasNext(); ) {
          String c = it.next();
          if (c.endsWith(suffix)) {
            holder = c;
            it.remove();
            break;
          }
        }
        if (holder == null) {
          holder = held.poll();
        }
        if (held.isEmpty()) {
          holders.remove(h);
        }
      }
      if (holder != null
          && renewing > 0
          && releasedWhileRenewing.size() < MAX_RELEASED_WHILE_RENEWING) {
        releasedWhileRenewing.add(new Released(key, holder, Math.max(1, leaseTtlMillis)));
      }
    }
    if (holder == null) {
      return CompletableFuture.completedFuture(null);
    }
    long ttl = Math.max(1, leaseTtlMillis);
    String taken = holder;
    return remove(key, taken, ttl)
        .handle(
            (v, e) -> {
              if (e != null) {
                redis.lateWrites().giveBack(() -> remove(key, taken, ttl), ttl);
                throw e instanceof CompletionException c ? c : new CompletionException(e);
              }
              return (Void) null;
            });
  }

  /** Removes {@code holder}: whether it was there. */
  private CompletionStage<Boolean> remove(String key, String holder, long ttl) {
    String[] keys = {key};
    String[] args = {"release", Long.toString(ttl), holder};
    return redis.eval(SCRIPT, keys, args, r -> ((Number) r.get(0)).longValue() == 1);
  }

  /**
   * One script call over the scope's owner keys (all in the pool's slot): every holder this class
   * granted to {@code replica} of an owner of {@code held} gets a fresh expiry, or is written back.
   *
   * <p>A holder given back between the renewal's read of the holders and its answer may have been
   * removed before the renewal wrote it back: once no renewal is out, each of those is removed
   * again, so a place given back is never counted until its lease runs out.
   */
  @Override
  public CompletionStage<Void> renew(
      Scope scope, String replica, Map<String, Integer> held, long leaseTtlMillis) {
    String[][] call;
    synchronized (this) {
      renewing++;
      call =
          LeaseRenewal.call(
              held, leaseTtlMillis, scope::key, key -> holders.get(new Holding(key, replica)));
      if (call == null) {
        renewing--;
      }
    }
    if (call == null) {
      return CompletableFuture.completedFuture(null);
    }
    return redis.eval(SCRIPT, call[0], call[1], r -> (Void) null).whenComplete((v, e) -> renewed());
  }

  /** A renewal answered (or failed): the holders given back meanwhile are removed again. */
  private void renewed() {
    Released[] again;
    synchronized (this) {
      renewing--;
      if (renewing > 0 || releasedWhileRenewing.isEmpty()) {
        return;
      }
      again = releasedWhileRenewing.toArray(Released[]::new);
      releasedWhileRenewing.clear();
    }
    for (Released r : again) {
      remove(r.key(), r.holder(), r.ttl());
    }
  }
}
