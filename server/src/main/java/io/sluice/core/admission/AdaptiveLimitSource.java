package io.sluice.core.admission;

import io.sluice.core.adapt.AdaptiveLimit;
import io.sluice.core.adapt.AnswerSource;
import io.sluice.core.adapt.LimitBounds;
import io.sluice.core.adapt.LimitStore;
import io.sluice.core.adapt.Restore;
import io.sluice.core.policy.PoolPolicy;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * The limit source of an adaptive pool: wraps the pool's {@link AdaptiveLimit} (core/adapt), whose
 * work units and request slots replace the configured capacity and maxRequests (its ceiling). It
 * keeps what the limit needs of the pool — the limit a hot reload carried over, the answers by
 * source, the permits the upstream refused that are still held — and tells the pool when the limit
 * changed or a pause ended ({@link LimitSource.Listener}).
 *
 * <p>Concurrency: {@link #limit} and {@link #pauseSeen} are volatile; {@link #carried}, {@link
 * #refusedHeld}, {@link #refusedWork} and the ledger are guarded by the pool's lock, which this
 * source takes for its few reads of the ledger (the methods named {@code ...Locked} are called with
 * it held); the limit is thread-safe itself and is called outside the lock. Time is an argument.
 */
final class AdaptiveLimitSource implements LimitSource {
  // created at the first tick (it needs the time), null while the pool's numbers are fixed
  private volatile @Nullable AdaptiveLimit limit;
  // the limit a replaced one had (a hot reload), NaN: none; guarded by the pool lock
  private double carried = Double.NaN;
  private volatile boolean pauseSeen; // paused at the last tick (its end starts waiting requests)
  // permits the upstream refused (overloaded) still held, and their work: guarded by the pool lock
  private int refusedHeld;
  private long refusedWork;
  // answers of requests of an adaptive pool by who produced them (AnswerSource ordinal)
  private final LongAdder[] answers = newAdders(AnswerSource.values().length);
  private Listener listener = nowNanos -> {};
  private final ReentrantLock lock; // the pool's
  private final CapacityLedger capacity; // guarded by the pool lock
  private final ConfiguredLimit configured;

  /** The source of a pool guarded by {@code lock}, whose ledger is {@code capacity}. */
  AdaptiveLimitSource(ReentrantLock lock, CapacityLedger capacity, ConfiguredLimit configured) {
    this.lock = lock;
    this.capacity = capacity;
    this.configured = configured;
  }

  @Override
  public void notifyOnChange(Listener listener) {
    this.listener = listener;
  }

  /** An adaptive policy's capacity and maxRequests are the limit's (or where it starts). */
  @Override
  public PoolLimits applyTo(PoolLimits limits) {
    PoolPolicy p = limits.policy();
    if (!p.adaptive().enabled()) {
      return limits;
    }
    AdaptiveLimit a = limit;
    double f = a != null ? a.fraction() : carried;
    return limits.withPolicy(p.withLimits(LimitBounds.workOf(p, f), LimitBounds.requestsOf(p, f)));
  }

  /**
   * During an outage (the limit probes at its floor): the limit before it, which the outage's end
   * restores, at the latest when the last outage answer's Retry-After passes.
   */
  @Override
  public PoolLimits.@Nullable Resume resume(PoolLimits.@Nullable Resume before, long nowNanos) {
    AdaptiveLimit a = limit;
    Restore r = a == null ? null : a.restore(nowNanos);
    if (a == null || r == null) {
      return before;
    }
    PoolPolicy p = a.ceiling();
    double f = r.fraction();
    return new PoolLimits.Resume(
        LimitBounds.workOf(p, f), LimitBounds.requestsOf(p, f), r.inNanos());
  }

  /** The pool's adaptive limit, or null (fixed numbers, or not ticked yet). */
  @Nullable AdaptiveLimit limit() {
    return limit;
  }

  /**
   * A reload to {@code next}, under the pool lock: a limit whose ceiling is not {@code next} is
   * dropped (the next tick makes a new one); the learned limit is carried when the pool stays
   * adaptive.
   */
  @Override
  public void reconfigure(PoolPolicy next) {
    AdaptiveLimit a = limit;
    double keep = a != null ? a.fraction() : carried;
    if (a != null && !a.ceiling().equals(next)) {
      limit = null;
    }
    carried = next.adaptive().enabled() ? keep : Double.NaN;
  }

  /**
   * The adaptive limit's periodic step (the bootstrap's timer): makes the limit at the first tick
   * (from the limit a reload carried over, if any; {@code made} applies its numbers under the pool
   * lock), runs the latency rule with the pool's load now, and has the pool apply a changed limit
   * (a larger one, or the end of a pause, starts waiting requests). Null for a fixed pool.
   */
  @Nullable AdaptiveLimit tick(long nowNanos, Runnable made) {
    if (!configured.policy().adaptive().enabled()) {
      return null;
    }
    AdaptiveLimit a = limit;
    if (a == null) {
      lock.lock();
      try {
        a = limit;
        if (a == null || !a.ceiling().equals(configured.policy())) {
          a = new AdaptiveLimit(configured.policy(), carried, nowNanos);
          limit = a;
          carried = Double.NaN;
          made.run();
        }
      } finally {
        lock.unlock();
      }
    }
    boolean wasPaused = a.pauseRemainingNanos(nowNanos) > 0 || pauseSeen;
    double use;
    lock.lock();
    try {
      use = capacity.use();
    } finally {
      lock.unlock();
    }
    boolean changed = a.tick(nowNanos, use);
    boolean pauseEnded = wasPaused && !a.paused(nowNanos);
    pauseSeen = a.paused(nowNanos);
    if (changed || pauseEnded) {
      changed(a, nowNanos);
    }
    return a;
  }

  /**
   * The upstream answered {@code status} (with a Retry-After of {@code retryAfterNanos}, negative
   * if none) to a request of this pool admitted at {@code admittedAtNanos}: an overload shrinks the
   * limit and may pause the pool (the pool's in flight unknown).
   */
  void onUpstream(int status, long retryAfterNanos, long admittedAtNanos, long nowNanos) {
    AdaptiveLimit a = limit;
    if (a != null && a.onUpstream(status, retryAfterNanos, admittedAtNanos, nowNanos)) {
      changed(a, nowNanos);
    }
  }

  /**
   * An answer of {@code source} with {@code status} (and a Retry-After of {@code retryAfterNanos},
   * negative if none) to the request holding {@code permit}: counted by source; only the upstream's
   * own answers reach the limit, with the pool's requests in flight that the upstream has not
   * refused (an overload settles the limit at what the upstream took).
   */
  void onAnswer(
      Permit permit, int status, long retryAfterNanos, AnswerSource source, long nowNanos) {
    AdaptiveLimit a = limit;
    if (a == null) {
      return;
    }
    answers[source.ordinal()].increment();
    if (source == AnswerSource.UPSTREAM) {
      learn(a, permit, status, retryAfterNanos, nowNanos);
    }
  }

  /**
   * The upstream's answer to the request holding {@code permit}, revised to {@code status} by what
   * came after its headers (a gRPC failure in the response trailers after a 200): the limit learns
   * it as {@link #onAnswer} would have at the headers; the answer was counted there.
   */
  void onRevisedAnswer(Permit permit, int status, long retryAfterNanos, long nowNanos) {
    AdaptiveLimit a = limit;
    if (a != null) {
      learn(a, permit, status, retryAfterNanos, nowNanos);
    }
  }

  private void learn(
      AdaptiveLimit a, Permit permit, int status, long retryAfterNanos, long nowNanos) {
    int requests;
    long work;
    lock.lock();
    try {
      requests = capacity.totalRequests() - refusedHeld;
      work = capacity.totalWork() - refusedWork;
      if (capacity.shared()) {
        // this replica holds its share of the pool: what the upstream took of the whole pool is
        // about the others in flight here over that share (the store keeps the smallest estimate)
        long whole = capacity.policy().capacityWorkUnits();
        double share = whole <= 0 ? 1.0 : Math.min(1.0, (double) capacity.workLimit() / whole);
        if (share > 0 && share < 1.0) {
          requests = 1 + (int) Math.round(Math.max(0, requests - 1) / share);
          work = Math.round(work / share);
        }
      }
      if (a.ceiling().adaptive().overload(status)
          && !permit.upstreamRefused
          && !permit.isReleased()) {
        permit.upstreamRefused = true;
        refusedHeld++;
        refusedWork += permit.workUnits();
      }
    } finally {
      lock.unlock();
    }
    if (a.onUpstream(
        status,
        retryAfterNanos,
        permit.admittedAtNanos(),
        nowNanos,
        Math.max(1, requests),
        Math.max(1, work))) {
      changed(a, nowNanos);
    }
  }

  /** Answers of requests of this (adaptive) pool produced by {@code source}. */
  long answers(AnswerSource source) {
    return answers[source.ordinal()].sum();
  }

  /** Under the pool lock: a released permit the upstream had refused is no longer held. */
  void releasedLocked(Permit permit) {
    if (permit.upstreamRefused) {
      permit.upstreamRefused = false;
      refusedHeld--;
      refusedWork = refusedHeld == 0 ? 0 : Math.max(0, refusedWork - permit.workUnits());
    }
  }

  /** A latency sample of a request of this pool. */
  void onLatency(AdaptiveLimit.Signal signal, double nanos, long admittedAtNanos) {
    AdaptiveLimit a = limit;
    if (a != null) {
      a.onLatency(signal, nanos, admittedAtNanos);
    }
  }

  /** The pool's shared limit as the store answered it (several replicas). */
  void adopt(LimitStore.Shared shared, long nowNanos) {
    AdaptiveLimit a = limit;
    if (a != null
        && a.adopt(
            shared.fraction(),
            shared.cause(),
            shared.pauseRemainingMillis() * 1_000_000L,
            shared.ttftBaselineNanos(),
            shared.tpotBaselineNanos(),
            nowNanos)) {
      changed(a, nowNanos);
    }
  }

  /** How long new admission stays paused after {@code nowNanos} (0: not paused, or fixed). */
  long pauseRemainingNanos(long nowNanos) {
    AdaptiveLimit a = limit;
    return a == null ? 0 : a.pauseRemainingNanos(nowNanos);
  }

  /** {@code a} changed: the pool applies it, unless a reload replaced it meanwhile. */
  private void changed(AdaptiveLimit a, long nowNanos) {
    if (limit == a) {
      listener.changed(nowNanos);
    }
  }

  private static LongAdder[] newAdders(int n) {
    LongAdder[] out = new LongAdder[n];
    for (int i = 0; i < n; i++) {
      out[i] = new LongAdder();
    }
    return out;
  }
}
