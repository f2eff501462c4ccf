package io.sluice.store.redis;

import io.sluice.core.quota.WorkflowPlaces;
import io.sluice.core.store.PoolKeys;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@link WorkflowPlaces} on a {@link RedisConnection}: one sorted set per workflow and pool kept by
 * {@code workflow_places.lua}, atomic per call: a member per place held, named by the call that
 * took it with its work units ({@code <replica>|<id>|<work>}), scored by its lease expiry on
 * Redis's clock.
 *
 * <p>A write Sluice gave up on cannot outlive what it holds: an acquire that fails (a timeout: a
 * hung Redis may still run it) is followed by the removal of its holder ({@link LateWrites}), and a
 * holder nobody renews leaves with its lease. A release that fails is sent again until answered.
 *
 * <p>This class keeps the holder ids it granted, by key and replica, so that {@link #release} and
 * {@link #renew} name them; an entry leaves when its last place is given back, so the map is
 * bounded by the places held (the caller's in-flight and queued requests with a workflow id).
 */
public final class RedisWorkflowPlaces implements WorkflowPlaces {
  /** The {@code store} tag of this port's late writes undone. */
  public static final String STORE = "workflow_places";

  private static final RedisScript SCRIPT = RedisScript.load("workflow_places.lua");

  private final RedisConnection redis;
  private final String incarnation =
      Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL);
  private final AtomicLong calls = new AtomicLong();
  // guarded by this: the holders granted and not given back, by key and replica
  private final Map<Holding, ArrayDeque<String>> holders = new HashMap<>();

  private record Holding(String key, String replica) {}

  public RedisWorkflowPlaces(RedisConnection redis) {
    this.redis = redis;
    redis.register(
        SCRIPT,
        (key, n) ->
            acquire(key, "w" + n, "wf", "warmup", 1, 1, 0, 1000)
                .thenCompose(a -> release(key, "w" + n, "wf", "warmup", 1, 1000)));
  }

  /** {@code <namespace>{<pool>}:workflow:<id>}, hash-tagged on the pool ({@link PoolKeys#key}). */
  public static String workflowKey(String namespace, String pool, String workflow) {
    return PoolKeys.key(namespace, pool, "workflow:" + workflow);
  }

  /** The replica a holder id belongs to ({@code <replica>|<id>|<work>}). */
  public static String replicaOf(String holder) {
    int end = holder.lastIndexOf('|');
    int bar = end <= 0 ? -1 : holder.lastIndexOf('|', end - 1);
    return bar < 0 ? holder : holder.substring(0, bar);
  }

  @Override
  public CompletionStage<PlaceAnswer> acquire(
      String namespace,
      String pool,
      String workflow,
      String replica,
      long work,
      int maxRequests,
      long maxWork,
      long leaseTtlMillis) {
    String key = workflowKey(namespace, pool, workflow);
    long w = Math.max(0, work);
    String holder = replica + "|" + incarnation + "." + calls.incrementAndGet() + "|" + w;
    long ttl = Math.max(1, leaseTtlMillis);
    String[] keys = {key};
    String[] args = {
      "acquire",
      Long.toString(ttl),
      holder,
      Long.toString(w),
      Integer.toString(Math.max(0, maxRequests)),
      Long.toString(Math.max(0, maxWork))
    };
    return redis
        .eval(
            SCRIPT,
            keys,
            args,
            r ->
                new PlaceAnswer(
                    ((Number) r.get(0)).longValue() == 1,
                    ((Number) r.get(1)).longValue(),
                    ((Number) r.get(2)).longValue()))
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
   * Removes one of the holders granted to {@code replica}, one of {@code work} units when there is
   * one (none held: a no-op). A failed release is sent again until answered; the holder, no longer
   * renewed, leaves with its lease in any case.
   */
  @Override
  public CompletionStage<Void> release(
      String namespace,
      String pool,
      String workflow,
      String replica,
      long work,
      long leaseTtlMillis) {
    String key = workflowKey(namespace, pool, workflow);
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

  private CompletionStage<Boolean> remove(String key, String holder, long ttl) {
    String[] keys = {key};
    String[] args = {"release", Long.toString(ttl), holder};
    return redis.eval(SCRIPT, keys, args, r -> ((Number) r.get(0)).longValue() == 1);
  }

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
              owner -> workflowKey(namespace, pool, owner),
              key -> holders.get(new Holding(key, replica)));
    }
    if (call == null) {
      return CompletableFuture.completedFuture(null);
    }
    return redis.eval(SCRIPT, call[0], call[1], r -> (Void) null);
  }
}
