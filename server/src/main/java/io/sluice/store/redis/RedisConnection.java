package io.sluice.store.redis;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.sluice.core.store.StoreException;
import io.sluice.core.store.StoreHealth;
import io.sluice.core.time.Ticker;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * One Lettuce connection to Redis (single, Sentinel or Cluster) shared by every Redis port class of
 * a process ({@link RedisKeyValueStore}, {@link RedisShareStore}, {@link RedisTenantSlots}, {@link
 * RedisLimitStore}, {@link RedisReserveStore}, and the ports the feature modules register, {@code
 * feature.StorePort}); each of those owns its script and its keys, this class owns what they share:
 * the connection, the timeout, failure counting and health.
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
public final class RedisConnection implements AutoCloseable {
  /** A port's share of the warm-up: one round of throwaway calls on keys under {@code key}. */
  interface WarmUpRound {
    CompletionStage<?> run(String key, int round);
  }

  private final RedisSettings settings;
  private final Ticker ticker;
  private final RedisClients client;
  private final List<RedisScript> scripts = new CopyOnWriteArrayList<>();
  private final List<WarmUpRound> warmUpRounds = new CopyOnWriteArrayList<>();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong consecutiveFailures = new AtomicLong();
  private final LateWrites lateWrites;
  private volatile String lastError = "";
  // null until the constructor starts the first connection attempt
  private volatile @Nullable CompletableFuture<RedisClusterAsyncCommands<String, String>> commands;
  private volatile long connectFailedAtNanos;
  private volatile @Nullable StatefulConnection<String, String> connection; // null until connected

  public RedisConnection(RedisSettings settings, Ticker ticker) {
    this.settings = settings;
    this.ticker = ticker;
    this.client = new RedisClients(settings);
    this.lateWrites =
        new LateWrites(
            ticker,
            () -> settings.commandTimeout().toMillis(),
            () -> 8 * settings.reconnectInterval().toMillis());
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
   * A port's script, loaded at warm-up, and its warm-up round (null: none); the rounds run in the
   * order the ports registered.
   */
  void register(RedisScript script, @Nullable WarmUpRound round) {
    if (!scripts.contains(script)) {
      scripts.add(script);
    }
    if (round != null) {
      warmUpRounds.add(round);
    }
  }

  /**
   * Opens the connection, loads the registered scripts ({@code SCRIPT LOAD}, so the first EVALSHA
   * does not pay NOSCRIPT + EVAL) and runs {@code rounds} of every registered warm-up round on
   * throwaway keys under {@code keyPrefix} (they expire within seconds), through the same code
   * paths as real calls, so the first real commands do not overrun {@link
   * RedisSettings#commandTimeout()} while classes load and the JIT compiles. Completes when all
   * succeeded; fails with the first error.
   */
  CompletionStage<Void> warmUp(String keyPrefix, int rounds) {
    String key = keyPrefix + "sluice_warmup_" + Long.toHexString(System.nanoTime()) + "_";
    return commands()
        .thenCompose(
            cmds -> {
              CompletableFuture<String> loads = CompletableFuture.completedFuture("");
              for (RedisScript s : scripts) {
                loads = loads.thenCompose(sha -> cmds.scriptLoad(s.text()).toCompletableFuture());
              }
              return loads;
            })
        .thenCompose(
            sha -> {
              CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
              for (int i = 0; i < rounds; i++) {
                int n = i;
                for (WarmUpRound round : warmUpRounds) {
                  chain = chain.thenCompose(v -> round.run(key, n).thenApply(r -> (Void) null));
                }
              }
              return chain;
            });
  }

  /** Runs {@code script} by its SHA (EVAL on NOSCRIPT), its reply read by {@code answer}. */
  <T> CompletionStage<T> eval(
      RedisScript script, String[] keys, String[] args, Function<List<Object>, T> answer) {
    return track(script(script, keys, args).thenApply(answer));
  }

  /** One command. */
  <T> CompletionStage<T> call(
      Function<RedisClusterAsyncCommands<String, String>, RedisFuture<T>> command) {
    return track(commands().thenCompose(c -> command.apply(c).toCompletableFuture()));
  }

  /** Several commands (a pipeline, or one command after another), tracked as one call. */
  <T> CompletionStage<T> calls(
      Function<RedisClusterAsyncCommands<String, String>, CompletionStage<T>> commands) {
    return track(commands().thenCompose(commands));
  }

  private CompletableFuture<List<Object>> script(RedisScript script, String[] keys, String[] args) {
    return commands()
        .thenCompose(
            cmds ->
                cmds.<List<Object>>evalsha(script.sha(), ScriptOutputType.MULTI, keys, args)
                    .toCompletableFuture()
                    .exceptionallyCompose(
                        e -> {
                          Throwable c = e instanceof CompletionException ? e.getCause() : e;
                          if (c != null && String.valueOf(c.getMessage()).startsWith("NOSCRIPT")) {
                            return cmds.<List<Object>>eval(
                                    script.text(), ScriptOutputType.MULTI, keys, args)
                                .toCompletableFuture();
                          }
                          return CompletableFuture.failedFuture(e);
                        }));
  }

  /** {@code REDIS_COMMAND_TIMEOUT}. */
  public Duration commandTimeout() {
    return settings.commandTimeout();
  }

  /** {@code REDIS_RECONNECT_INTERVAL}. */
  public Duration retryInterval() {
    return settings.reconnectInterval();
  }

  /** What the ports take back of calls that failed but may still run ({@link LateWrites}). */
  LateWrites lateWrites() {
    return lateWrites;
  }

  /**
   * Writes of {@code store} (its name, e.g. {@link RedisTenantSlots#STORE}) that landed after their
   * call had timed out, taken back ({@code sluice_store_late_writes_undone_total}).
   */
  public long lateWritesUndone(String store) {
    return lateWrites.undone(store);
  }

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
}
