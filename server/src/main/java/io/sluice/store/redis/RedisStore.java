package io.sluice.store.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import io.sluice.core.admission.PoolState;
import io.sluice.core.quota.TenantSlots;
import io.sluice.core.share.ShareStore;
import io.sluice.core.store.CounterIncrement;
import io.sluice.core.store.KeyValueStore;
import io.sluice.core.store.StoreException;
import io.sluice.core.store.StoreHealth;
import io.sluice.core.store.TokenBucketResult;
import io.sluice.core.store.TokenBucketSpec;
import io.sluice.core.time.Ticker;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * Redis store on Lettuce's async API (single, Sentinel or Cluster).
 *
 * <p>Counters use envoyproxy/ratelimit's commands: for every key {@code INCRBY key hits} then
 * {@code EXPIRE key seconds}, all commands of a batch written back to back on one connection
 * without waiting for replies (a pipeline; not a MULTI transaction, same as the reference). Token
 * buckets run {@code token_bucket.lua} with EVALSHA (EVAL on NOSCRIPT), atomic per key.
 *
 * <p>Failure: commands time out after {@link RedisSettings#commandTimeout()}; while disconnected
 * commands are rejected at once instead of queued; Lettuce reconnects in the background. A failed
 * initial connection is retried on use after {@link RedisSettings#reconnectInterval()}. Every
 * failure completes the stage with {@link StoreException} and marks {@link #health()} unhealthy
 * until the next success.
 *
 * <p>Concurrency: the connection is shared and thread-safe; the connection future is swapped under
 * {@code this} lock only on (re)connect.
 */
public final class RedisStore
    implements KeyValueStore,
        ShareStore,
        TenantSlots,
        io.sluice.core.adapt.LimitStore,
        io.sluice.core.retry.AttemptStore,
        AutoCloseable {
  private static final String SCRIPT = loadScript("token_bucket.lua");
  private static final String SCRIPT_SHA = sha1(SCRIPT);
  private static final String SHARE_SCRIPT = loadScript("share_lease.lua");
  private static final String SHARE_SCRIPT_SHA = sha1(SHARE_SCRIPT);
  private static final String LIMIT_SCRIPT = loadScript("adaptive_limit.lua");
  private static final String LIMIT_SCRIPT_SHA = sha1(LIMIT_SCRIPT);
  private static final String SLOTS_SCRIPT = loadScript("tenant_slots.lua");
  private static final String SLOTS_SCRIPT_SHA = sha1(SLOTS_SCRIPT);
  private static final String ATTEMPTS_SCRIPT = loadScript("attempts.lua");
  private static final String ATTEMPTS_SCRIPT_SHA = sha1(ATTEMPTS_SCRIPT);

  private final RedisSettings settings;
  private final Ticker ticker;
  private final AbstractRedisClientHolder client;
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong consecutiveFailures = new AtomicLong();
  private volatile String lastError = "";
  // null until the constructor starts the first connection attempt
  private volatile @Nullable CompletableFuture<RedisClusterAsyncCommands<String, String>> commands;
  private volatile long connectFailedAtNanos;
  private volatile @Nullable StatefulConnection<String, String> connection; // null until connected

  public RedisStore(RedisSettings settings, Ticker ticker) {
    this.settings = settings;
    this.ticker = ticker;
    this.client = new AbstractRedisClientHolder(settings);
    var unused = commands(); // start connecting now, so the first calls do not pay for it
  }

  /**
   * Completes when the connection is up (or fails when the current attempt failed); callers may
   * wait on it at start-up. Calls made before then wait at most twice the command timeout.
   */
  public CompletionStage<Void> connected() {
    return commands().thenApply(c -> null);
  }

  /**
   * Opens the connection, loads the scripts ({@code SCRIPT LOAD}, so the first EVALSHA does not pay
   * NOSCRIPT + EVAL) and runs {@code rounds} increments, bucket takes and tenant slot acquires and
   * releases on throwaway keys under {@code keyPrefix} (they expire within seconds), through the
   * same code paths as real calls, so the first real commands do not overrun {@link
   * RedisSettings#commandTimeout()} while classes load and the JIT compiles. Completes when all
   * succeeded; fails with the first error.
   */
  @Override
  public CompletionStage<Void> warmUp(String keyPrefix, int rounds) {
    String key = keyPrefix + "sluice_warmup_" + Long.toHexString(System.nanoTime()) + "_";
    return commands()
        .thenCompose(
            cmds ->
                cmds.scriptLoad(SCRIPT)
                    .toCompletableFuture()
                    .thenCompose(sha -> cmds.scriptLoad(SHARE_SCRIPT).toCompletableFuture())
                    .thenCompose(sha -> cmds.scriptLoad(LIMIT_SCRIPT).toCompletableFuture())
                    .thenCompose(sha -> cmds.scriptLoad(SLOTS_SCRIPT).toCompletableFuture())
                    .thenCompose(sha -> cmds.scriptLoad(ATTEMPTS_SCRIPT).toCompletableFuture()))
        .thenCompose(
            sha -> {
              CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
              for (int i = 0; i < rounds; i++) {
                int n = i;
                chain =
                    chain.thenCompose(
                        v ->
                            increment(
                                    List.of(
                                        new CounterIncrement(key + "c" + n, 1, 2, 0),
                                        new CounterIncrement(key + "c" + n, 0, 2, 0)))
                                .thenCompose(
                                    c ->
                                        take(
                                            key + "b" + n,
                                            new TokenBucketSpec(10, 10, 1000),
                                            1,
                                            System.currentTimeMillis()))
                                .thenCompose(r -> acquire(key, "w" + n, "t", "warmup", 1, 1000))
                                .thenCompose(a -> release(key, "w" + n, "t", "warmup", 1000))
                                .toCompletableFuture());
              }
              return chain;
            });
  }

  @Override
  public CompletionStage<long[]> increment(List<CounterIncrement> batch) {
    if (batch.isEmpty()) {
      return CompletableFuture.completedFuture(new long[0]);
    }
    return track(
        commands()
            .thenCompose(
                cmds -> {
                  List<CompletableFuture<Long>> incr = new ArrayList<>(batch.size());
                  List<CompletableFuture<?>> all = new ArrayList<>(batch.size() * 2);
                  for (CounterIncrement inc : batch) {
                    CompletableFuture<Long> f =
                        cmds.incrby(inc.key(), inc.hits())
                            .toCompletableFuture()
                            .exceptionallyCompose(RedisStore::saturateOnOverflow);
                    incr.add(f);
                    all.add(f);
                    all.add(cmds.expire(inc.key(), inc.expirySeconds()).toCompletableFuture());
                  }
                  return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
                      .thenApply(
                          v -> {
                            long[] after = new long[incr.size()];
                            for (int i = 0; i < after.length; i++) {
                              after[i] = incr.get(i).join();
                            }
                            return after;
                          });
                }));
  }

  /**
   * Redis refuses an INCRBY that would pass 2^63 − 1 ("increment or decrement would overflow"): the
   * counter is then at least that high, so it is answered as saturated (far over any limit) instead
   * of failing the call into its failure mode (which could let it through).
   */
  private static CompletionStage<Long> saturateOnOverflow(Throwable e) {
    Throwable c = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    if (c instanceof io.lettuce.core.RedisCommandExecutionException
        && String.valueOf(c.getMessage()).contains("overflow")) {
      return CompletableFuture.completedFuture(Long.MAX_VALUE);
    }
    return CompletableFuture.failedFuture(c);
  }

  @Override
  public CompletionStage<TokenBucketResult> take(
      String key, TokenBucketSpec spec, long tokens, long nowMillis) {
    return bucket(key, spec, tokens, nowMillis, false);
  }

  @Override
  public CompletionStage<TokenBucketResult> charge(
      String key, TokenBucketSpec spec, long tokens, long nowMillis) {
    return bucket(key, spec, tokens, nowMillis, true);
  }

  private CompletionStage<TokenBucketResult> bucket(
      String key, TokenBucketSpec spec, long tokens, long nowMillis, boolean force) {
    String[] keys = {key};
    String[] args = {
      Long.toString(spec.capacity()),
      Long.toString(spec.refillTokens()),
      Long.toString(spec.refillPeriodMillis()),
      Long.toString(tokens),
      Long.toString(nowMillis),
      force ? "1" : "0"
    };
    return track(script(SCRIPT, SCRIPT_SHA, keys, args).thenApply(RedisStore::toResult));
  }

  /** Runs a script by its SHA, loading it with EVAL when the server does not know it (NOSCRIPT). */
  private CompletableFuture<List<Object>> script(
      String script, String sha, String[] keys, String[] args) {
    return commands()
        .thenCompose(
            cmds ->
                cmds.<List<Object>>evalsha(sha, ScriptOutputType.MULTI, keys, args)
                    .toCompletableFuture()
                    .exceptionallyCompose(
                        e -> {
                          Throwable c = e instanceof CompletionException ? e.getCause() : e;
                          if (c != null && String.valueOf(c.getMessage()).startsWith("NOSCRIPT")) {
                            return cmds.<List<Object>>eval(
                                    script, ScriptOutputType.MULTI, keys, args)
                                .toCompletableFuture();
                          }
                          return CompletableFuture.failedFuture(e);
                        }));
  }

  /**
   * A script of another port's class on this connection ({@link RedisReserveStore}), tracked as
   * this store's own calls (timeout, failures, health).
   */
  CompletionStage<List<Object>> runScript(String script, String sha, String[] keys, String[] args) {
    return track(script(script, sha, keys, args));
  }

  /** A command of another port's class on this connection, tracked as this store's own calls. */
  <T> CompletionStage<T> call(
      java.util.function.Function<
              RedisClusterAsyncCommands<String, String>, io.lettuce.core.RedisFuture<T>>
          command) {
    return track(commands().thenCompose(c -> command.apply(c).toCompletableFuture()));
  }

  /** {@link io.sluice.core.store.PoolKeys#shares}: one hash per pool, hash-tagged on the pool. */
  public static String shareKey(String namespace, String pool) {
    return io.sluice.core.store.PoolKeys.shares(namespace, pool);
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
    return track(script(SHARE_SCRIPT, SHARE_SCRIPT_SHA, keys, args).thenApply(RedisStore::toGrant));
  }

  /**
   * {@code adaptive_limit.lua} on the pool's limit hash ({@link io.sluice.core.adapt.LimitStore}).
   */
  @Override
  public CompletionStage<io.sluice.core.adapt.LimitStore.Shared> exchange(
      String namespace, String pool, io.sluice.core.adapt.LimitStore.Exchange x) {
    var p = x.proposal();
    String[] keys = {io.sluice.core.store.PoolKeys.limit(namespace, pool)};
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
    return track(
        script(LIMIT_SCRIPT, LIMIT_SCRIPT_SHA, keys, args).thenApply(RedisStore::toShared));
  }

  private static io.sluice.core.adapt.LimitStore.Shared toShared(List<Object> r) {
    io.sluice.core.adapt.AdaptiveLimit.Cause cause;
    try {
      cause =
          io.sluice.core.adapt.AdaptiveLimit.Cause.valueOf(
              String.valueOf(r.get(1)).toUpperCase(java.util.Locale.ROOT));
    } catch (IllegalArgumentException e) {
      cause = io.sluice.core.adapt.AdaptiveLimit.Cause.SHARED; // a cause of another version
    }
    return new io.sluice.core.adapt.LimitStore.Shared(
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

  @Override
  public CompletionStage<Void> leave(String namespace, String pool, String replica) {
    return track(
        commands()
            .thenCompose(
                cmds -> cmds.hdel(shareKey(namespace, pool), replica).toCompletableFuture())
            .thenApply(n -> (Void) null));
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
    return track(
        commands()
            .thenCompose(
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
                              return cmds.hdel(key, dead)
                                  .toCompletableFuture()
                                  .thenApply(Long::intValue);
                            })));
  }

  /**
   * {@code <namespace>{<pool>}:tenant:<tenantId>}: one hash per capped tenant and pool, hash-tagged
   * on the pool ({@link io.sluice.core.store.PoolKeys#key}).
   */
  public static String tenantKey(String namespace, String pool, String tenant) {
    return io.sluice.core.store.PoolKeys.key(namespace, pool, "tenant:" + tenant);
  }

  /**
   * {@code tenant_slots.lua acquire}: drop the expired, take a slot if the live sum is below cap.
   */
  @Override
  public CompletionStage<TenantSlots.SlotAnswer> acquire(
      String namespace, String pool, String tenant, String replica, int cap, long leaseTtlMillis) {
    String[] keys = {tenantKey(namespace, pool, tenant)};
    String[] args = {
      "acquire", replica, Long.toString(Math.max(1, leaseTtlMillis)), Integer.toString(cap)
    };
    return track(
        script(SLOTS_SCRIPT, SLOTS_SCRIPT_SHA, keys, args)
            .thenApply(
                r ->
                    new TenantSlots.SlotAnswer(
                        ((Number) r.get(0)).longValue() == 1, ((Number) r.get(1)).longValue())));
  }

  @Override
  public CompletionStage<Void> release(
      String namespace, String pool, String tenant, String replica, long leaseTtlMillis) {
    String[] keys = {tenantKey(namespace, pool, tenant)};
    String[] args = {"release", replica, Long.toString(Math.max(1, leaseTtlMillis))};
    return track(script(SLOTS_SCRIPT, SLOTS_SCRIPT_SHA, keys, args).thenApply(r -> (Void) null));
  }

  /** One script call over the pool's tenant keys (all in the pool's slot). */
  @Override
  public CompletionStage<Void> renew(
      String namespace,
      String pool,
      String replica,
      Map<String, Integer> held,
      long leaseTtlMillis) {
    if (held.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    String[] keys = new String[held.size()];
    String[] args = new String[3 + held.size()];
    args[0] = "renew";
    args[1] = replica;
    args[2] = Long.toString(Math.max(1, leaseTtlMillis));
    int i = 0;
    for (Map.Entry<String, Integer> e : held.entrySet()) {
      keys[i] = tenantKey(namespace, pool, e.getKey());
      args[3 + i] = Integer.toString(Math.max(0, e.getValue()));
      i++;
    }
    return track(script(SLOTS_SCRIPT, SLOTS_SCRIPT_SHA, keys, args).thenApply(r -> (Void) null));
  }

  // --- retry control (issue 19): attempts.lua, one call per request

  /**
   * A call per observe: retry control defers what it can ({@link
   * io.sluice.core.retry.AttemptStore#shared}).
   */
  @Override
  public boolean shared() {
    return true;
  }

  /** {@code attempts.lua observe}: seen count, in-flight claim (SET NX PX), refusal, budget. */
  @Override
  public CompletionStage<io.sluice.core.retry.AttemptStore.Observation> observe(
      io.sluice.core.retry.AttemptStore.Observe o) {
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
    return track(
        script(ATTEMPTS_SCRIPT, ATTEMPTS_SCRIPT_SHA, keys, args)
            .thenApply(
                r -> {
                  String tokens = String.valueOf(r.get(9));
                  return new io.sluice.core.retry.AttemptStore.Observation(
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
                }));
  }

  /** {@code attempts.lua complete}: compare and delete (or mark done for the replay window). */
  @Override
  public CompletionStage<Void> complete(String operationKey, String owner, long replayMillis) {
    String[] keys = {operationKey};
    String[] args = {"complete", owner, Long.toString(Math.max(0, replayMillis))};
    return track(
        script(ATTEMPTS_SCRIPT, ATTEMPTS_SCRIPT_SHA, keys, args).thenApply(r -> (Void) null));
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
    return track(
        script(ATTEMPTS_SCRIPT, ATTEMPTS_SCRIPT_SHA, keys, args).thenApply(r -> (Void) null));
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
  static String encodeClasses(List<PoolState.ClassDemand> classes) {
    StringBuilder b = new StringBuilder();
    for (PoolState.ClassDemand c : classes) {
      if (b.length() > 0) {
        b.append(',');
      }
      b.append(java.net.URLEncoder.encode(c.name(), java.nio.charset.StandardCharsets.UTF_8))
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
  static List<PoolState.ClassDemand> decodeClasses(String token) {
    List<PoolState.ClassDemand> out = new ArrayList<>();
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
            new PoolState.ClassDemand(
                java.net.URLDecoder.decode(f[0], java.nio.charset.StandardCharsets.UTF_8),
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

  private static TokenBucketResult toResult(List<Object> r) {
    return new TokenBucketResult(
        ((Number) r.get(0)).longValue() == 1,
        Double.parseDouble(String.valueOf(r.get(1))),
        ((Number) r.get(2)).longValue(),
        ((Number) r.get(3)).longValue());
  }

  @Override
  public boolean inProcess() {
    return false; // a round trip to Redis: timed
  }

  /** {@code REDIS_COMMAND_TIMEOUT}. */
  @Override
  public Duration commandTimeout() {
    return settings.commandTimeout();
  }

  /** {@code REDIS_RECONNECT_INTERVAL}. */
  @Override
  public Duration retryInterval() {
    return settings.reconnectInterval();
  }

  @Override
  public StoreHealth health() {
    long consecutive = consecutiveFailures.get();
    return new StoreHealth(consecutive == 0, failures.get(), consecutive, lastError);
  }

  private <T> CompletionStage<T> track(CompletableFuture<T> f) {
    long timeoutMillis = Math.max(1, settings.commandTimeout().toMillis() * 2);
    return f.orTimeout(timeoutMillis, TimeUnit.MILLISECONDS)
        .handle(
            (v, e) -> {
              if (e == null) {
                consecutiveFailures.set(0);
                return v;
              }
              Throwable c =
                  e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
              failures.incrementAndGet();
              consecutiveFailures.incrementAndGet();
              String text = c.getClass().getSimpleName() + ": " + c.getMessage();
              lastError = text;
              throw new StoreException("redis: " + text, c);
            });
  }

  private CompletableFuture<RedisClusterAsyncCommands<String, String>> commands() {
    CompletableFuture<RedisClusterAsyncCommands<String, String>> c = commands;
    if (c != null && !(c.isCompletedExceptionally() && reconnectDue())) {
      return c;
    }
    synchronized (this) {
      c = commands;
      if (c == null || (c.isCompletedExceptionally() && reconnectDue())) {
        c =
            client
                .connect()
                .thenApply(
                    conn -> {
                      connection = conn;
                      return client.commands(conn);
                    });
        var unused =
            c.whenComplete(
                (v, e) -> {
                  if (e != null) {
                    connectFailedAtNanos = ticker.nanos();
                  }
                });
        commands = c;
      }
      return c;
    }
  }

  private boolean reconnectDue() {
    return ticker.nanos() - connectFailedAtNanos >= settings.reconnectInterval().toNanos();
  }

  @Override
  public void close() {
    StatefulConnection<String, String> conn = connection;
    if (conn != null) {
      conn.close();
    }
    client.shutdown();
  }

  static String loadScript(String name) {
    try (InputStream in = RedisStore.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException(name + " missing from the classpath");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  static String sha1(String s) {
    try {
      return HexFormat.of()
          .formatHex(MessageDigest.getInstance("SHA-1").digest(s.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Builds the Lettuce client for the deployment type; hides single/sentinel vs cluster.
   *
   * <p>Reconnects back off exponentially up to {@link RedisSettings#reconnectInterval()} (Lettuce's
   * own cap is 30 s, so a node that came back, or a Sentinel-promoted master, could wait half a
   * minute for the next attempt). In Cluster mode the slot map is refreshed on Lettuce's adaptive
   * triggers (MOVED/ASK, 3 reconnect attempts to a node, an uncovered slot, an unknown node) at
   * most once per reconnect interval (Lettuce: once per 5 s), and every {@link #PERIODIC_REFRESH}
   * (Lettuce: never): the slots of a killed master stay routed to it until a refresh after its
   * replica took over, and with Lettuce's defaults that refresh came only with a reconnect attempt
   * far into the backoff (6.5 s after the promotion in {@code RedisClusterTest}).
   */
  private static final class AbstractRedisClientHolder {
    static final Duration PERIODIC_REFRESH = Duration.ofSeconds(30);

    private final ClientResources resources;
    private final @Nullable RedisClient single; // exactly one of single and cluster is set
    private final @Nullable RedisClusterClient cluster;
    private final List<RedisURI> uris;

    AbstractRedisClientHolder(RedisSettings s) {
      this.uris = uris(s);
      Duration maxDelay =
          s.reconnectInterval().compareTo(Duration.ofMillis(10)) < 0
              ? Duration.ofMillis(10)
              : s.reconnectInterval();
      this.resources =
          ClientResources.builder()
              .reconnectDelay(Delay.exponential(Duration.ZERO, maxDelay, 2, TimeUnit.MILLISECONDS))
              .build();
      TimeoutOptions timeouts = TimeoutOptions.enabled(s.commandTimeout());
      SocketOptions socket = SocketOptions.builder().connectTimeout(s.connectTimeout()).build();
      if (s.type().equals("cluster")) {
        this.single = null;
        this.cluster = RedisClusterClient.create(resources, uris);
        cluster.setOptions(
            ClusterClientOptions.builder()
                .timeoutOptions(timeouts)
                .socketOptions(socket)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .autoReconnect(true)
                .topologyRefreshOptions(
                    ClusterTopologyRefreshOptions.builder()
                        // every adaptive trigger is on by default since Lettuce 7
                        .adaptiveRefreshTriggersTimeout(maxDelay)
                        .refreshTriggersReconnectAttempts(3)
                        .enablePeriodicRefresh(PERIODIC_REFRESH)
                        .build())
                .build());
      } else {
        this.cluster = null;
        this.single = RedisClient.create(resources);
        single.setOptions(
            ClientOptions.builder()
                .timeoutOptions(timeouts)
                .socketOptions(socket)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .autoReconnect(true)
                .build());
      }
    }

    CompletableFuture<StatefulConnection<String, String>> connect() {
      RedisClusterClient cl = cluster;
      if (cl != null) {
        // Lettuce's async cluster connect needs the partitions (slot map) loaded first; without
        // this it fails every time with "Partitions not initialized"
        return cl.refreshPartitionsAsync()
            .toCompletableFuture()
            .thenCompose(v -> cl.connectAsync(StringCodec.UTF8))
            .thenApply(c -> (StatefulConnection<String, String>) c);
      }
      return Objects.requireNonNull(single, "single")
          .connectAsync(StringCodec.UTF8, uris.get(0))
          .toCompletableFuture()
          .thenApply(c -> (StatefulConnection<String, String>) c);
    }

    @SuppressWarnings("unchecked")
    RedisClusterAsyncCommands<String, String> commands(StatefulConnection<String, String> conn) {
      if (conn instanceof io.lettuce.core.cluster.api.StatefulRedisClusterConnection<?, ?> cc) {
        return (RedisClusterAsyncCommands<String, String>) cc.async();
      }
      return ((io.lettuce.core.api.StatefulRedisConnection<String, String>) conn).async();
    }

    void shutdown() {
      if (cluster != null) {
        cluster.shutdown();
      } else {
        Objects.requireNonNull(single, "single").shutdown();
      }
      // ours (not Lettuce's default), so the client does not close it; its threads are daemons
      var unused = resources.shutdown(0, 2, TimeUnit.SECONDS);
    }

    @SuppressWarnings("StringSplitter") // trailing empty entries dropped: a trailing comma is fine
    private static List<RedisURI> uris(RedisSettings s) {
      List<RedisURI> out = new ArrayList<>();
      String[] parts = s.url().split(",");
      switch (s.type()) {
        case "sentinel" -> {
          if (parts.length < 2) {
            throw new IllegalArgumentException(
                "REDIS_URL: " + s.url() + " (expected: mastername,host:port[,host:port...])");
          }
          boolean auth = !s.sentinelAuth().isEmpty();
          HostPort first = HostPort.parse(parts[1]);
          RedisURI.Builder b =
              auth
                  ? RedisURI.Builder.sentinel(
                      first.host(), first.port(), parts[0], s.sentinelAuth())
                  : RedisURI.Builder.sentinel(first.host(), first.port(), parts[0]);
          for (int i = 2; i < parts.length; i++) {
            HostPort hp = HostPort.parse(parts[i]);
            if (auth) {
              b.withSentinel(hp.host(), hp.port(), s.sentinelAuth());
            } else {
              b.withSentinel(hp.host(), hp.port());
            }
          }
          out.add(finish(b, s));
        }
        case "cluster" -> {
          for (String p : parts) {
            HostPort hp = HostPort.parse(p);
            out.add(finish(RedisURI.Builder.redis(hp.host(), hp.port()), s));
          }
        }
        default -> {
          if (s.socketType().equals("unix")) {
            out.add(finish(RedisURI.Builder.socket(s.url()), s));
          } else {
            HostPort hp = HostPort.parse(s.url());
            out.add(finish(RedisURI.Builder.redis(hp.host(), hp.port()), s));
          }
        }
      }
      return out;
    }

    private static RedisURI finish(RedisURI.Builder b, RedisSettings s) {
      if (!s.auth().isEmpty()) {
        int colon = s.auth().indexOf(':');
        if (colon >= 0) {
          b.withAuthentication(s.auth().substring(0, colon), s.auth().substring(colon + 1));
        } else {
          b.withPassword(s.auth().toCharArray());
        }
      }
      b.withSsl(s.tls()).withVerifyPeer(!s.tlsSkipHostnameVerification());
      b.withTimeout(s.connectTimeout());
      return b.build();
    }
  }

  private record HostPort(String host, int port) {
    static HostPort parse(String text) {
      String t = text.trim();
      int colon = t.lastIndexOf(':');
      if (colon <= 0) {
        throw new IllegalArgumentException("REDIS_URL: " + text + " (expected: host:port)");
      }
      try {
        return new HostPort(t.substring(0, colon), Integer.parseInt(t.substring(colon + 1)));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("REDIS_URL: " + text + " (expected: host:port)");
      }
    }
  }
}
