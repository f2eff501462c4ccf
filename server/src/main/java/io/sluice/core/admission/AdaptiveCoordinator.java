package io.sluice.core.admission;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.adapt.LimitStore;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.time.Ticker;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * Drives the adaptive pools' limits: each {@link #tick} (from the bootstrap's timer, a few times
 * per {@code interval}) runs every adaptive pool's latency rule ({@link PoolState#adaptTick}) and,
 * with a shared store, exchanges each pool's news with the store once per {@code interval}, or at
 * once after a decrease or a pause, and adopts the pool's shared limit from the answer ({@link
 * LimitStore}: one learned limit per pool for all replicas). One exchange per pool is in flight at
 * a time; a failed exchange keeps the local limit (each replica then follows its own signals) and
 * sends its news again with the next one.
 *
 * <p>Thread-safe. Time comes from the ticker.
 */
public final class AdaptiveCoordinator {
  private final AdmissionController controller;
  private final @Nullable LimitStore store;
  private final String namespace;
  private final Ticker ticker;
  private final Map<String, Exchanges> exchanges = new ConcurrentHashMap<>();
  private final AtomicLong failures = new AtomicLong();

  /**
   * @param store the shared store of the pools' limits (null: one replica, the limits are local)
   * @param namespace the store's key namespace ({@code quotas.keyPrefix})
   */
  public AdaptiveCoordinator(
      AdmissionController controller, @Nullable LimitStore store, String namespace, Ticker ticker) {
    this.controller = controller;
    this.store = store;
    this.namespace = namespace;
    this.ticker = ticker;
  }

  /** Whether any pool of the current policy is adaptive. */
  public boolean any() {
    for (PoolState p : controller.pools()) {
      if (p.configuredPolicy().adaptive().enabled()) {
        return true;
      }
    }
    return false;
  }

  /** Exchanges with the shared store that failed. */
  public long failures() {
    return failures.get();
  }

  /** One step for every adaptive pool; completes when the exchanges it started are answered. */
  public CompletionStage<Void> tick() {
    CompletableFuture<?>[] started = new CompletableFuture<?>[controller.pools().size()];
    int n = 0;
    for (PoolState p : controller.pools()) {
      long now = ticker.nanos();
      AdaptiveLimit a = p.adaptTick(now);
      if (a == null || store == null) {
        continue;
      }
      Exchanges x =
          exchanges.computeIfAbsent(p.policy().name(), k -> new Exchanges()); // bounded: pools
      CompletableFuture<Void> f = x.maybeExchange(p, a, now);
      if (f != null) {
        started[n++] = f;
      }
    }
    exchanges.keySet().retainAll(controller.poolNames());
    return CompletableFuture.allOf(java.util.Arrays.copyOf(started, n));
  }

  /** One pool's exchanges with the store. */
  private final class Exchanges {
    private boolean pending;
    private long lastNanos;
    private boolean exchanged;
    private boolean pauseSent;
    private long sentPauseEnd;
    private AdaptiveLimit.@Nullable Proposal unsent;

    synchronized @Nullable CompletableFuture<Void> maybeExchange(
        PoolState pool, AdaptiveLimit a, long now) {
      if (pending) {
        return null;
      }
      AdaptiveLimit.Proposal p = merge(unsent, a.takeProposal());
      unsent = null;
      PoolPolicy ceiling = a.ceiling();
      long interval = ceiling.adaptive().interval().toNanos();
      long pause = a.pauseRemainingNanos(now);
      // a decrease, or a pause the store has not heard of, is sent at once
      boolean newPause = pause > 0 && (!pauseSent || now + pause - sentPauseEnd > interval / 2);
      boolean urgent = (p != null && p.shrink()) || newPause;
      if (pause > 0) {
        pauseSent = true;
        sentPauseEnd = now + pause;
      }
      if (exchanged && !urgent && now - lastNanos < interval) {
        unsent = p;
        return null;
      }
      pending = true;
      lastNanos = now;
      LimitStore.Exchange ex =
          new LimitStore.Exchange(
              p,
              pause / 1_000_000L,
              a.measuredBaseline(AdaptiveLimit.Signal.TTFT, now),
              a.measuredBaseline(AdaptiveLimit.Signal.TPOT, now),
              Math.max(1, interval / 2_000_000L),
              ceiling.adaptive().baselineWindow().toMillis());
      CompletionStage<LimitStore.Shared> answer;
      try {
        answer =
            java.util.Objects.requireNonNull(store).exchange(namespace, pool.policy().name(), ex);
      } catch (RuntimeException e) {
        answer = CompletableFuture.failedFuture(e);
      }
      return answer
          .toCompletableFuture()
          .handle(
              (shared, e) -> {
                answered(pool, p, shared, e);
                return (Void) null;
              });
    }

    private synchronized void answered(
        PoolState pool,
        AdaptiveLimit.@Nullable Proposal sent,
        LimitStore.@Nullable Shared shared,
        @Nullable Throwable e) {
      pending = false;
      if (e != null || shared == null) {
        failures.incrementAndGet();
        unsent = merge(sent, unsent); // sent again with the next exchange
        return;
      }
      exchanged = true;
      pool.adoptShared(shared, ticker.nanos());
    }
  }

  /** {@code older} then {@code newer} as one change (from the first's start to the last's end). */
  private static AdaptiveLimit.@Nullable Proposal merge(
      AdaptiveLimit.@Nullable Proposal older, AdaptiveLimit.@Nullable Proposal newer) {
    if (older == null) {
      return newer;
    }
    if (newer == null) {
      return older;
    }
    return new AdaptiveLimit.Proposal(
        older.from(), newer.to(), newer.to() < older.from(), newer.cause());
  }
}
