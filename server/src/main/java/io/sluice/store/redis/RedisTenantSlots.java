package io.sluice.store.redis;

import io.sluice.core.quota.TenantSlots;
import io.sluice.core.store.PoolKeys;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@link TenantSlots} on a {@link RedisConnection}: one sorted set per capped tenant and pool kept
 * by {@code tenant_slots.lua}, atomic per call: a member per slot held, named by the call that took
 * it (its holder id, {@code <replica>|<id>}), scored by its lease expiry on Redis's clock. A
 * replica's contribution is the number of its holders; its renewals refresh each of them.
 *
 * <p>A write Sluice gave up on cannot outlive what it holds: an acquire that fails (a timeout: a
 * hung Redis may still run it) is followed by the removal of its holder ({@link LateWrites}), and a
 * holder nobody renews leaves with its lease. A release that fails is sent again until answered.
 *
 * <p>This class keeps the holder ids it granted, by key and replica, so that {@link #release} and
 * {@link #renew} name them; an entry leaves when its last slot is given back, so the map is bounded
 * by the slots held (the caller's in-flight and queued requests of capped tenants). Its warm-up
 * round takes and gives back one slot on a throwaway key.
 */
public final class RedisTenantSlots implements TenantSlots {
  /** The {@code store} tag of this port's late writes undone. */
  public static final String STORE = "tenant_slots";

  private static final RedisScript SCRIPT = RedisScript.load("tenant_slots.lua");

  private final RedisConnection redis;
  private final String incarnation =
      Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL);
  private final AtomicLong calls = new AtomicLong();
  // guarded by this: the holders granted and not given back, by key and replica
  private final Map<Holding, ArrayDeque<String>> holders = new HashMap<>();

  private record Holding(String key, String replica) {}

  public RedisTenantSlots(RedisConnection redis) {
    this.redis = redis;
    redis.register(
        SCRIPT,
        (key, n) ->
            acquire(key, "w" + n, "t", "warmup", 1, 1000)
                .thenCompose(a -> release(key, "w" + n, "t", "warmup", 1000)));
  }

  /**
   * {@code <namespace>{<pool>}:tenant:<tenantId>}: one sorted set per capped tenant and pool,
   * hash-tagged on the pool ({@link PoolKeys#key}).
   */
  public static String tenantKey(String namespace, String pool, String tenant) {
    return PoolKeys.key(namespace, pool, "tenant:" + tenant);
  }

  /** The replica a holder id belongs to ({@code <replica>|<id>}). */
  public static String replicaOf(String holder) {
    int bar = holder.lastIndexOf('|');
    return bar < 0 ? holder : holder.substring(0, bar);
  }

  /**
   * {@code tenant_slots.lua acquire}: drop the expired holders, add this call's if fewer than the
   * cap are left. A failed call's holder is removed after it ({@link LateWrites#undo}).
   */
  @Override
  public CompletionStage<SlotAnswer> acquire(
      String namespace, String pool, String tenant, String replica, int cap, long leaseTtlMillis) {
    String key = tenantKey(namespace, pool, tenant);
    String holder = replica + "|" + incarnation + "." + calls.incrementAndGet();
    long ttl = Math.max(1, leaseTtlMillis);
    String[] keys = {key};
    String[] args = {"acquire", Long.toString(ttl), holder, Integer.toString(cap)};
    return redis
        .eval(
            SCRIPT,
            keys,
            args,
            r ->
                new SlotAnswer(
                    ((Number) r.get(0)).longValue() == 1, ((Number) r.get(1)).longValue()))
        .whenComplete(
            (a, e) -> {
              if (e != null) {
                if (LateWrites.mayHaveRun(e)) {
                  redis.lateWrites().undo(STORE, () -> remove(key, holder, ttl), ttl);
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
   * {@code tenant_slots.lua release} of one of the holders granted to {@code replica} (none held: a
   * no-op). A failed release is sent again until answered; the holder, no longer renewed, leaves
   * with its lease in any case.
   */
  @Override
  public CompletionStage<Void> release(
      String namespace, String pool, String tenant, String replica, long leaseTtlMillis) {
    String key = tenantKey(namespace, pool, tenant);
    String holder;
    synchronized (this) {
      Holding h = new Holding(key, replica);
      ArrayDeque<String> held = holders.get(h);
      holder = held == null ? null : held.poll();
      if (held != null && held.isEmpty()) {
        holders.remove(h);
      }
    }
    if (holder == null) {
      return CompletableFuture.completedFuture(null);
    }
    long ttl = Math.max(1, leaseTtlMillis);
    return remove(key, holder, ttl)
        .handle(
            (v, e) -> {
              if (e != null) {
                redis.lateWrites().giveBack(() -> remove(key, holder, ttl), ttl);
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
   * One script call over the pool's tenant keys (all in the pool's slot): every holder this class
   * granted to {@code replica} of a tenant of {@code held} gets a fresh expiry, or is written back.
   */
  @Override
  public CompletionStage<Void> renew(
      String namespace,
      String pool,
      String replica,
      Map<String, Integer> held,
      long leaseTtlMillis) {
    String[][] call;
    synchronized (this) {
      call =
          LeaseRenewal.call(
              held,
              leaseTtlMillis,
              owner -> tenantKey(namespace, pool, owner),
              key -> holders.get(new Holding(key, replica)));
    }
    if (call == null) {
      return CompletableFuture.completedFuture(null);
    }
    return redis.eval(SCRIPT, call[0], call[1], r -> (Void) null);
  }
}
