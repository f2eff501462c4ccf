package io.sluice.store.redis;

import io.sluice.core.share.ClassDemand;
import io.sluice.core.share.ShareStore;
import io.sluice.core.store.PoolKeys;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link ShareStore} on a {@link RedisConnection}: one hash per pool ({@link PoolKeys#shares}),
 * replica → lease record, kept by {@code share_lease.lua} (renew, expire the dead on Redis's clock,
 * grant within the pool), atomic per exchange.
 */
public final class RedisShareStore implements ShareStore {
  private static final RedisScript SCRIPT = RedisScript.load("share_lease.lua");

  private final RedisConnection redis;

  public RedisShareStore(RedisConnection redis) {
    this.redis = redis;
    redis.register(SCRIPT, null);
  }

  /** {@link PoolKeys#shares}: one hash per pool, hash-tagged on the pool. */
  public static String shareKey(String namespace, String pool) {
    return PoolKeys.shares(namespace, pool);
  }

  /** {@code share_lease.lua} on the pool's hash: renew, expire the dead, grant within the pool. */
  @Override
  public CompletionStage<ShareStore.Grant> exchange(ShareStore.Exchange x) {
    String[] keys = {shareKey(x.namespace(), x.pool())};
    String[] args = {
      x.replica(),
      Long.toString(Math.max(1, x.leaseTtlMillis())),
      Long.toString(clamp(x.capacityWork())),
      Long.toString(Math.max(0, x.capacityRequests())),
      Long.toString(clamp(x.targetWork())),
      Long.toString(Math.max(0, x.targetRequests())),
      Long.toString(clamp(x.inUseWork())),
      Long.toString(Math.max(0, x.inUseRequests())),
      Long.toString(clamp(x.demandWork())),
      Long.toString(Math.max(0, x.demandRequests())),
      encodeClasses(x.classes())
    };
    return redis.eval(SCRIPT, keys, args, RedisShareStore::toGrant);
  }

  @Override
  public CompletionStage<Void> leave(String namespace, String pool, String replica) {
    return redis
        .call(cmds -> cmds.hdel(shareKey(namespace, pool), replica))
        .thenApply(n -> (Void) null);
  }

  /**
   * {@link ShareStore#supersede}: {@code HKEYS} then {@code HDEL} of the matching fields on the
   * pool's share hash. Not atomic, and need not be: the fields matched belong to dead incarnations,
   * which write nothing any more.
   */
  @Override
  public CompletionStage<Integer> supersede(
      String namespace, String pool, String replica, String prefix) {
    String key = shareKey(namespace, pool);
    return redis.calls(
        cmds ->
            cmds.hkeys(key)
                .toCompletableFuture()
                .thenCompose(
                    ids -> {
                      String[] dead =
                          ids.stream()
                              .filter(id -> id.startsWith(prefix) && !id.equals(replica))
                              .toArray(String[]::new);
                      if (dead.length == 0) {
                        return CompletableFuture.completedFuture(0);
                      }
                      return cmds.hdel(key, dead).toCompletableFuture().thenApply(Long::intValue);
                    }));
  }

  /** Lua numbers are doubles: integers above 2^53 would lose units, so values stop there. */
  private static long clamp(long v) {
    return Math.max(0, Math.min(v, 1L << 53));
  }

  /**
   * A replica's class loads as one token of the lease record: {@code
   * name:demandWork:demandRequests:inFlightWork:inFlightRequests:headWork} by class,
   * comma-separated, the name URL-encoded (no space, colon or comma left in it).
   */
  static String encodeClasses(List<ClassDemand> classes) {
    StringBuilder b = new StringBuilder();
    for (ClassDemand c : classes) {
      if (b.length() > 0) {
        b.append(',');
      }
      b.append(URLEncoder.encode(c.name(), StandardCharsets.UTF_8))
          .append(':')
          .append(clamp(c.demandWork()))
          .append(':')
          .append(Math.max(0, c.demandRequests()))
          .append(':')
          .append(clamp(c.inFlightWork()))
          .append(':')
          .append(Math.max(0, c.inFlightRequests()))
          .append(':')
          .append(clamp(c.headWork()));
    }
    return b.toString();
  }

  /** {@link #encodeClasses} read back; a malformed part (another version's) is skipped. */
  static List<ClassDemand> decodeClasses(String token) {
    List<ClassDemand> out = new ArrayList<>();
    if (token.isEmpty()) {
      return out;
    }
    for (String part : token.split(",", -1)) {
      String[] f = part.split(":", -1);
      if (f.length != 6) {
        continue;
      }
      try {
        out.add(
            new ClassDemand(
                URLDecoder.decode(f[0], StandardCharsets.UTF_8),
                Long.parseLong(f[1]),
                Integer.parseInt(f[2]),
                Long.parseLong(f[3]),
                Integer.parseInt(f[4]),
                Long.parseLong(f[5])));
      } catch (IllegalArgumentException e) {
        // skipped: a peer of another version, or a damaged record; its totals still count
      }
    }
    return out;
  }

  private static ShareStore.Grant toGrant(List<Object> r) {
    List<ShareStore.Peer> peers = new ArrayList<>();
    for (int i = 3; i + 5 < r.size(); i += 6) {
      peers.add(
          new ShareStore.Peer(
              String.valueOf(r.get(i)),
              ((Number) r.get(i + 1)).longValue(),
              (int) ((Number) r.get(i + 2)).longValue(),
              ((Number) r.get(i + 3)).longValue(),
              (int) ((Number) r.get(i + 4)).longValue(),
              decodeClasses(String.valueOf(r.get(i + 5)))));
    }
    return new ShareStore.Grant(
        ((Number) r.get(0)).longValue(), (int) ((Number) r.get(1)).longValue(), peers);
  }
}
