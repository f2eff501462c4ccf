package io.sluice.store.redis;

import io.sluice.core.intake.JobStatus;
import io.sluice.core.intake.JobStore;
import io.sluice.core.intake.QueueDrain;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * {@link JobStore} on a {@link RedisConnection}: Redis Streams with a job hash per id, one {@code
 * intake.lua} call per operation (layout in the script), every key under the hash tag {@code
 * {intake}} of its prefix so a call is atomic on one node. An enqueue answered means Redis applied
 * it (durable as far as the server's AOF settings say: docs/operations.md, "Background intake").
 *
 * <p>An enqueue that failed may still run (a hung Redis runs it when it resumes), leaving a job its
 * client was told was refused: it is followed by a cancel of that id while it still waits ({@link
 * LateWrites}), so no job runs that nobody holds an id for.
 */
public final class RedisJobStore implements JobStore {
  /** The {@code store} tag of this port's late writes undone. */
  public static final String STORE = "intake";

  private static final RedisScript SCRIPT = RedisScript.load("intake.lua");

  private final RedisConnection redis;
  private final QueueDrain drain = new QueueDrain(); // what its answers told of the queues' drain

  public RedisJobStore(RedisConnection redis) {
    this.redis = redis;
    redis.register(SCRIPT, null);
  }

  /** The keys' common start: {@code <prefix>intake:{intake}:}. */
  static String base(String prefix) {
    return prefix + "intake:{intake}:";
  }

  @Override
  public CompletionStage<Enqueued> enqueue(String prefix, NewJob j, Caps caps) {
    String base = base(prefix);
    String[] keys = {base + "job:" + j.id()};
    String model = j.model();
    String[] args = {
      "enqueue",
      base,
      j.id(),
      j.tenant(),
      j.pool(),
      j.className(),
      j.route(),
      model == null ? "" : model,
      Long.toString(Math.max(0, j.workUnits())),
      Long.toString(j.createdMillis()),
      Long.toString(j.expiresMillis()),
      Base64.getEncoder().encodeToString(j.body()),
      Integer.toString(caps.maxJobs()),
      Long.toString(caps.maxWork()),
      Long.toString(Math.max(1, caps.retentionMillis()))
    };
    return redis
        .eval(
            SCRIPT,
            keys,
            args,
            r -> {
              if (num(r, 0) != 1) {
                return new Enqueued(String.valueOf(r.get(1)), 0, 0);
              }
              drain.record(base + j.pool(), j.createdMillis(), num(r, 3), true);
              return new Enqueued(null, num(r, 1), num(r, 2));
            })
        .whenComplete(
            (v, e) -> {
              if (e != null && LateWrites.mayHaveRun(e)) {
                redis
                    .lateWrites()
                    .undo(
                        STORE,
                        () ->
                            cancel(
                                    prefix,
                                    j.tenant(),
                                    j.id(),
                                    j.createdMillis(),
                                    caps.retentionMillis())
                                .thenApply(view -> view != null),
                        Math.max(1, j.expiresMillis() - j.createdMillis()));
              }
            });
  }

  @Override
  public CompletionStage<@Nullable JobView> read(
      String prefix, String tenant, String id, long nowMillis, long retentionMillis) {
    return call("read", prefix, tenant, id, nowMillis, retentionMillis);
  }

  @Override
  public CompletionStage<@Nullable JobView> cancel(
      String prefix, String tenant, String id, long nowMillis, long retentionMillis) {
    return call("cancel", prefix, tenant, id, nowMillis, retentionMillis);
  }

  @Override
  public CompletionStage<@Nullable Claimed> claim(
      String prefix,
      String pool,
      String consumer,
      long nowMillis,
      long leaseMillis,
      long retentionMillis) {
    String base = base(prefix);
    String[] keys = {base + "stream:" + pool};
    String[] args = {
      "claim",
      base,
      pool,
      consumer,
      Long.toString(nowMillis),
      Long.toString(Math.max(1, leaseMillis)),
      Long.toString(Math.max(1, retentionMillis))
    };
    return redis.eval(
        SCRIPT,
        keys,
        args,
        r ->
            num(r, 0) != 1
                ? null
                : new Claimed(
                    str(r, 1),
                    str(r, 2),
                    str(r, 3),
                    str(r, 4),
                    Base64.getDecoder().decode(str(r, 5)),
                    num(r, 7),
                    (int) num(r, 6)));
  }

  @Override
  public CompletionStage<Boolean> complete(
      String prefix,
      String id,
      JobStatus status,
      byte @Nullable [] result,
      @Nullable String error,
      long nowMillis,
      long retentionMillis) {
    String base = base(prefix);
    String[] keys = {base + "job:" + id};
    String[] args = {
      "complete",
      base,
      id,
      status.code(),
      result == null ? "" : Base64.getEncoder().encodeToString(result),
      error == null ? "" : error,
      Long.toString(Math.max(1, retentionMillis))
    };
    return redis.eval(SCRIPT, keys, args, r -> num(r, 0) == 1);
  }

  @Override
  public CompletionStage<Boolean> start(String prefix, String id) {
    String base = base(prefix);
    String[] keys = {base + "job:" + id};
    String[] args = {"start", base, id};
    return redis.eval(SCRIPT, keys, args, r -> num(r, 0) == 1);
  }

  @Override
  public CompletionStage<Boolean> release(
      String prefix, String id, int attempt, long nowMillis, long retentionMillis) {
    String base = base(prefix);
    String[] keys = {base + "job:" + id};
    String[] args = {
      "release",
      base,
      id,
      Integer.toString(attempt),
      Long.toString(nowMillis),
      Long.toString(Math.max(1, retentionMillis))
    };
    return redis.eval(SCRIPT, keys, args, r -> num(r, 0) == 1);
  }

  @Override
  public CompletionStage<Backlog> backlog(
      String prefix, String pool, long nowMillis, long retentionMillis) {
    String base = base(prefix);
    String[] keys = {base + "queue:" + pool};
    String[] args = {
      "backlog", base, pool, Long.toString(nowMillis), Long.toString(Math.max(1, retentionMillis))
    };
    return redis.eval(
        SCRIPT,
        keys,
        args,
        r -> {
          drain.record(base + pool, nowMillis, num(r, 3), num(r, 0) > 0);
          return new Backlog(num(r, 0), num(r, 1), num(r, 2));
        });
  }

  @Override
  public double drainedWorkPerSecond(String prefix, String pool, long nowMillis) {
    return drain.workPerSecond(base(prefix) + pool, nowMillis);
  }

  private CompletionStage<@Nullable JobView> call(
      String cmd, String prefix, String tenant, String id, long nowMillis, long retentionMillis) {
    String base = base(prefix);
    String[] keys = {base + "job:" + id};
    String[] args = {
      cmd, base, id, tenant, Long.toString(nowMillis), Long.toString(Math.max(1, retentionMillis))
    };
    return redis.eval(SCRIPT, keys, args, r -> view(id, r));
  }

  /**
   * {@code {1, status, model, work, created, expires, position, ahead, result, error, pool}} or
   * {@code {0}}.
   */
  private static @Nullable JobView view(String id, List<Object> r) {
    if (num(r, 0) != 1) {
      return null;
    }
    String model = str(r, 2);
    String result = str(r, 8);
    String error = str(r, 9);
    return new JobView(
        id,
        str(r, 10),
        JobStatus.of(str(r, 1)),
        model.isEmpty() ? null : model,
        Long.parseLong(str(r, 3)),
        Long.parseLong(str(r, 4)),
        Long.parseLong(str(r, 5)),
        num(r, 6),
        num(r, 7),
        result.isEmpty() ? null : Base64.getDecoder().decode(result),
        error.isEmpty() ? null : error);
  }

  private static long num(List<Object> r, int i) {
    Object o = r.get(i);
    return o instanceof Number n ? n.longValue() : Long.parseLong(String.valueOf(o));
  }

  private static String str(List<Object> r, int i) {
    Object o = r.get(i);
    if (o instanceof byte[] b) {
      return new String(b, StandardCharsets.UTF_8);
    }
    return o == null ? "" : String.valueOf(o);
  }
}
