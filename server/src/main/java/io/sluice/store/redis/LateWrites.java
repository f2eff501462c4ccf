package io.sluice.store.redis;

import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.sluice.core.time.Ticker;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Takes back what a call Sluice gave up on may still write. A command that timed out client-side
 * was sent all the same: a hung Redis (stopped, swapping, a long script) runs it when it resumes,
 * after Sluice answered by its failure mode and kept nothing to give back. A port whose call writes
 * something a caller gives back (an in-flight claim, a tenant slot) writes it under a holder id of
 * that call only, and when the call fails hands here the compare-and-delete of exactly that holder
 * ({@link #undo}), counted in {@link #undone}. The undo is sent at once on the same connection, so
 * Redis runs it after the write it follows; if it fails too it is sent again (backing off from the
 * command timeout to 8 × {@code REDIS_RECONNECT_INTERVAL}) until Redis answers it or the write's
 * own expiry has passed (then it is gone by itself). A give-back that failed (a release, a
 * completion) is sent again the same way ({@link #giveBack}).
 *
 * <p>Bounded: at most {@value #MAX_PENDING} undos and give-backs wait at a time; past that one is
 * not sent again and its write lasts until its expiry ({@link #dropped}). A failure that shows the
 * command never left (not connected) needs no undo ({@link #mayHaveRun}). Thread-safe.
 */
final class LateWrites {
  static final int MAX_PENDING = 10_000;

  private final Ticker ticker;
  private final LongSupplier firstRetryMillis;
  private final LongSupplier maxRetryMillis;
  private final AtomicInteger pending = new AtomicInteger();
  private final AtomicLong dropped = new AtomicLong();
  // by store name: the ports' constants, a fixed set
  private final Map<String, AtomicLong> undone = new ConcurrentHashMap<>();

  LateWrites(Ticker ticker, LongSupplier firstRetryMillis, LongSupplier maxRetryMillis) {
    this.ticker = ticker;
    this.firstRetryMillis = firstRetryMillis;
    this.maxRetryMillis = maxRetryMillis;
  }

  /**
   * Whether a failed command may have reached Redis (and may run there yet): false only when it was
   * refused before it was sent (no connection).
   */
  static boolean mayHaveRun(Throwable e) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof RedisConnectionException) {
        return false;
      }
      if (c instanceof RedisException
          && String.valueOf(c.getMessage()).startsWith("Currently not connected")) {
        return false;
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return true;
  }

  /**
   * Undoes what a failed call of {@code store} may write late: {@code compareAndDelete} removes
   * that call's holder only, answering whether it found it (then the write had landed: counted in
   * {@link #undone}). Sent until answered, or until {@code lifeMillis} (the write's expiry) passed.
   */
  void undo(String store, Supplier<CompletionStage<Boolean>> compareAndDelete, long lifeMillis) {
    send(store, compareAndDelete, lifeMillis);
  }

  /** Sends a give-back that failed ({@code call}) again until answered or {@code lifeMillis}. */
  void giveBack(Supplier<CompletionStage<Boolean>> call, long lifeMillis) {
    send(null, call, lifeMillis);
  }

  private void send(
      @Nullable String store, Supplier<CompletionStage<Boolean>> call, long lifeMillis) {
    if (pending.incrementAndGet() > MAX_PENDING) {
      pending.decrementAndGet();
      dropped.incrementAndGet();
      return;
    }
    long deadline = ticker.nanos() + TimeUnit.MILLISECONDS.toNanos(Math.max(1, lifeMillis));
    attempt(store, call, deadline, Math.max(1, firstRetryMillis.getAsLong()), false);
  }

  /**
   * One attempt; {@code earlierReached}: an earlier attempt failed after it may have reached Redis
   * (then it most likely took the write back itself, and this one finds nothing).
   */
  private void attempt(
      @Nullable String store,
      Supplier<CompletionStage<Boolean>> call,
      long deadline,
      long backoffMillis,
      boolean earlierReached) {
    CompletionStage<Boolean> answer;
    try {
      answer = call.get();
    } catch (RuntimeException e) {
      answer = CompletableFuture.failedFuture(e);
    }
    var unused =
        answer.whenComplete(
            (found, e) -> {
              if (e == null) {
                pending.decrementAndGet();
                if (store != null && (Boolean.TRUE.equals(found) || earlierReached)) {
                  undone.computeIfAbsent(store, s -> new AtomicLong()).incrementAndGet();
                }
              } else if (ticker.nanos() - deadline >= 0) {
                pending.decrementAndGet(); // expired in Redis by now
              } else {
                boolean reached = earlierReached || mayHaveRun(e);
                long next = Math.min(backoffMillis * 2, Math.max(1, maxRetryMillis.getAsLong()));
                CompletableFuture.delayedExecutor(backoffMillis, TimeUnit.MILLISECONDS)
                    .execute(() -> attempt(store, call, deadline, next, reached));
              }
            });
  }

  /**
   * Writes of {@code store} that a failed call left and that were taken back: counted when an undo
   * is answered, if it found the write or an earlier attempt of it may have reached Redis (an undo
   * that finds nothing at its first answer had nothing to take back).
   */
  long undone(String store) {
    AtomicLong n = undone.get(store);
    return n == null ? 0 : n.get();
  }

  /** Undos and give-backs waiting now. */
  int pending() {
    return pending.get();
  }

  /** Undos and give-backs not sent again for want of room (their writes expired by themselves). */
  long dropped() {
    return dropped.get();
  }
}
