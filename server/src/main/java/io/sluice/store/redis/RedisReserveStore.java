package io.sluice.store.redis;

import io.sluice.core.estimate.ReserveSnapshot;
import io.sluice.core.estimate.ReserveStore;
import io.sluice.core.store.PoolKeys;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link ReserveStore} on Redis on a {@link RedisConnection}: each key's additions merged by {@code
 * reserve_publish.lua} (atomic per key; the key and its pool's index share the pool's hash tag),
 * then the pool's index read for the keys written since the last pull and those hashes read,
 * decayed by their age on Redis's clock ({@code TIME}).
 */
public final class RedisReserveStore implements ReserveStore {
  private static final RedisScript SCRIPT = RedisScript.load("reserve_publish.lua");

  private final RedisConnection redis;

  public RedisReserveStore(RedisConnection redis) {
    this.redis = redis;
    redis.register(SCRIPT, null);
  }

  @Override
  public CompletionStage<Pull> exchange(
      String namespace,
      Collection<String> pools,
      List<ReserveSnapshot> additions,
      long sinceMillis,
      long windowMillis,
      int maxKeys) {
    List<CompletableFuture<List<Object>>> writes = new ArrayList<>();
    for (ReserveSnapshot a : additions) {
      String[] keys = {
        PoolKeys.reserve(namespace, a.pool(), a.identity()),
        PoolKeys.reserveIndex(namespace, a.pool())
      };
      List<String> args = new ArrayList<>();
      args.add(Long.toString(Math.max(1, windowMillis)));
      args.add(Integer.toString(Math.max(1, maxKeys)));
      args.add(a.identity());
      a.fields()
          .forEach(
              (k, v) -> {
                if (Double.isFinite(v)) {
                  args.add(k);
                  args.add(Double.toString(v));
                }
              });
      writes.add(
          redis.eval(SCRIPT, keys, args.toArray(String[]::new), r -> r).toCompletableFuture());
    }
    return CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new))
        .thenCompose(v -> pull(namespace, pools, sinceMillis, windowMillis));
  }

  private CompletionStage<Pull> pull(
      String namespace, Collection<String> pools, long sinceMillis, long windowMillis) {
    return redis
        .call(cmds -> cmds.time())
        .thenCompose(
            time -> {
              long now = Long.parseLong(time.get(0)) * 1000 + Long.parseLong(time.get(1)) / 1000;
              List<CompletableFuture<List<ReserveSnapshot>>> perPool = new ArrayList<>();
              for (String pool : pools) {
                perPool.add(
                    redis
                        .call(
                            cmds ->
                                cmds.zrangebyscore(
                                    PoolKeys.reserveIndex(namespace, pool),
                                    io.lettuce.core.Range.create(
                                        (double) sinceMillis, Double.POSITIVE_INFINITY)))
                        .thenCompose(ids -> read(namespace, pool, ids, now, windowMillis))
                        .toCompletableFuture());
              }
              return CompletableFuture.allOf(perPool.toArray(CompletableFuture[]::new))
                  .thenApply(
                      x -> {
                        List<ReserveSnapshot> all = new ArrayList<>();
                        perPool.forEach(f -> all.addAll(f.join()));
                        return new Pull(now, all);
                      });
            });
  }

  private CompletionStage<List<ReserveSnapshot>> read(
      String namespace, String pool, List<String> ids, long now, long windowMillis) {
    List<CompletableFuture<ReserveSnapshot>> reads = new ArrayList<>();
    for (String id : ids) {
      reads.add(
          redis
              .call(cmds -> cmds.hgetall(PoolKeys.reserve(namespace, pool, id)))
              .thenApply(h -> snapshot(id, h, now, windowMillis))
              .toCompletableFuture());
    }
    return CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new))
        .thenApply(
            v -> {
              List<ReserveSnapshot> out = new ArrayList<>();
              for (CompletableFuture<ReserveSnapshot> r : reads) {
                ReserveSnapshot s = r.join();
                if (s != null) {
                  out.add(s);
                }
              }
              return out;
            });
  }

  private static @org.jspecify.annotations.Nullable ReserveSnapshot snapshot(
      String id, Map<String, String> h, long now, long windowMillis) {
    String t = h.get("t");
    if (t == null) {
      return null; // expired between the index and the read
    }
    double d;
    try {
      d = ReserveStore.decay(now - Long.parseLong(t), windowMillis);
    } catch (NumberFormatException e) {
      return null;
    }
    Map<String, Double> f = new HashMap<>();
    h.forEach(
        (k, v) -> {
          if (!k.equals("t")) {
            try {
              f.put(k, Double.parseDouble(v) * d);
            } catch (NumberFormatException e) {
              // a field of another version: skipped
            }
          }
        });
    return ReserveSnapshot.of(id, f);
  }
}
