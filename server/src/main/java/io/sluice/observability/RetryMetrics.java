package io.sluice.observability;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.sluice.core.retry.Attempt;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Retry control's meters (docs/metrics.md, "Retries"). Labels are bounded: pool, class, kind,
 * reason (a reason code, {@code unknown} or {@code none}), outcome, behaviour, action; never a
 * tenant or an operation id. One per process ({@link AdmissionMetrics#retries}); thread-safe.
 *
 * <p>{@code sluice_retry_amplification{pool,class}} is attempts ÷ originals over the last full
 * minute and the current one (two one-minute buckets on the ticker); {@code
 * sum(rate(sluice_attempts_total[5m])) / sum(rate(sluice_attempts_total{kind="original"}[5m]))} is
 * the same over any range.
 */
public final class RetryMetrics {
  // The meter names (docs/metrics.md, "Retries").
  /** Requests classified, by pool, class, kind (original|retry) and reason (earlier refusal). */
  public static final String ATTEMPTS = "sluice.attempts";

  /** Attempts ÷ originals of the last minute, by pool and class. */
  public static final String RETRY_AMPLIFICATION = "sluice.retry.amplification";

  /** Retries by outcome (admitted|refused) of retry control's own check. */
  public static final String RETRIES = "sluice.retries";

  /** Retries that came back with a remembered refusal: behaviour early|honoured. */
  public static final String RETRY_AFTER_BEHAVIOUR = "sluice.retry.behaviour";

  /** Retries that honoured a Retry-After and then completed with a 2xx. */
  public static final String RETRY_AFTER_SUCCESS = "sluice.retry.after.success";

  /**
   * Requests whose operation was already in flight or completed: action refused|admitted|replay.
   */
  public static final String DUPLICATE_OPERATIONS = "sluice.duplicate.operations";

  /** Tokens left in the retry budget bucket a request of the pool last drew on. */
  public static final String RETRY_BUDGET_TOKENS = "sluice.retry.budget.tokens";

  /** The attempts store did not answer, by failure mode (open|closed). */
  public static final String RETRY_STORE_FAILURES = "sluice.retry.store.failures";

  private static final long MINUTE_NANOS = 60_000_000_000L;

  private final MeterRegistry registry;
  private final LongSupplier tickerNanos;
  private final ConcurrentMap<String, Counter> counters = new ConcurrentHashMap<>();
  private final ConcurrentMap<PoolClass, Window> windows = new ConcurrentHashMap<>();
  private final ConcurrentMap<String, AtomicLong> budgetMillitokens = new ConcurrentHashMap<>();

  /** The process's retry meters (one per registry: {@code AdmissionMetrics.part}). */
  public RetryMetrics(MeterRegistry registry, LongSupplier tickerNanos) {
    this.registry = registry;
    this.tickerNanos = tickerNanos;
  }

  /** A request classified: its attempt, whether retry control refused it, its duplicate. */
  public void attempted(String pool, String cls, Attempt a) {
    attempted(pool, cls, a, tickerNanos.getAsLong());
  }

  /**
   * As {@link #attempted(String, String, Attempt)}, counted in the amplification window of {@code
   * atNanos} on the ticker: a time the caller read already (the request's arrival), so no clock is
   * read per attempt. A time before the window's minute counts in that minute.
   */
  public void attempted(String pool, String cls, Attempt a, long atNanos) {
    Window w = window(pool, cls);
    w.roll(atNanos); // before the count: an attempt of a new minute counts in it
    if (!a.retry() && a.previousReason().equals(Attempt.NONE)) {
      w.originals.increment(); // the common case: no key to build, and the window's count too
    } else {
      attempts(pool, cls, a.kind(), a.previousReason()).increment();
      (a.retry() ? w.retries : w.otherOriginals).increment();
    }
    if (a.retry()) {
      counter(
              RETRIES,
              "pool",
              pool,
              "class",
              cls,
              "outcome",
              a.refusal() == null ? "admitted" : "refused")
          .increment();
      if (!a.retryAfter().equals(Attempt.NONE)) {
        counter(RETRY_AFTER_BEHAVIOUR, "pool", pool, "class", cls, "behaviour", a.retryAfter())
            .increment();
      }
    }
    if (!a.duplicate().equals(Attempt.NONE)) {
      String action =
          a.duplicate().equals(Attempt.REPLAY)
              ? "replay"
              : a.refusal() != null ? "refused" : "admitted";
      counter(DUPLICATE_OPERATIONS, "pool", pool, "action", action).increment();
    }
    if (!Double.isNaN(a.budgetTokens())) {
      AtomicLong b = budget(pool);
      long v = Math.round(a.budgetTokens() * 1000);
      if (b.get() != v) { // a full bucket stays full: no shared write per request
        b.set(v);
      }
    }
    if (a.storeFailed()) {
      counter(RETRY_STORE_FAILURES, "mode", a.refusal() != null ? "closed" : "open").increment();
    }
  }

  /** A retry that honoured its Retry-After completed with a 2xx. */
  public void honouredSucceeded(String pool, String cls) {
    counter(RETRY_AFTER_SUCCESS, "pool", pool, "class", cls).increment();
  }

  private Counter counter(String name, String... tags) {
    StringBuilder k = new StringBuilder(name);
    for (String t : tags) {
      k.append('\0').append(t);
    }
    return counters.computeIfAbsent(
        k.toString(),
        x -> Counter.builder(name).tags(tags).description(description(name)).register(registry));
  }

  private Counter attempts(String pool, String cls, String kind, String reason) {
    return counter(ATTEMPTS, "pool", pool, "class", cls, "kind", kind, "reason", reason);
  }

  private Window window(String pool, String cls) {
    // The names come from the policy objects: the same instances request after request, so the
    // last window is found by reference first (a miss takes the map, which compares by value).
    Window last = lastWindow;
    if (last != null && last.pool == pool && last.cls == cls) {
      return last;
    }
    PoolClass key = new PoolClass(pool, cls);
    Window found = windows.get(key);
    if (found == null) {
      found = windows.computeIfAbsent(key, k -> newWindow(pool, cls));
    }
    lastWindow = found;
    return found;
  }

  private volatile @Nullable Window lastWindow;

  private Window newWindow(String pool, String cls) {
    Window w = new Window(pool, cls, attempts(pool, cls, "original", Attempt.NONE));
    Gauge.builder(RETRY_AMPLIFICATION, w, x -> x.ratio(tickerNanos.getAsLong()))
        .tags("pool", pool, "class", cls)
        .description("attempts / originals over the last one to two minutes (1 = no retries)")
        .register(registry);
    return w;
  }

  /** The key of a pool's and class's meters (String hashes are cached: no string built). */
  private record PoolClass(String pool, String cls) {}

  private record PoolBudget(String pool, AtomicLong tokens) {}

  private volatile @Nullable PoolBudget lastBudget;

  private AtomicLong budget(String pool) {
    PoolBudget last = lastBudget;
    if (last != null && last.pool() == pool) { // the last hit, by reference: no map lookup
      return last.tokens();
    }
    AtomicLong b = budgetOf(pool);
    lastBudget = new PoolBudget(pool, b);
    return b;
  }

  private AtomicLong budgetOf(String pool) {
    AtomicLong found = budgetMillitokens.get(pool);
    return found != null
        ? found
        : budgetMillitokens.computeIfAbsent(
            pool,
            p -> {
              AtomicLong v = new AtomicLong();
              Gauge.builder(RETRY_BUDGET_TOKENS, v, x -> x.get() / 1000.0)
                  .tags("pool", p)
                  .description(
                      "tokens left in the retry budget bucket a request of the pool last drew on")
                  .register(registry);
              return v;
            });
  }

  private static String description(String name) {
    return switch (name) {
      case ATTEMPTS ->
          "requests classified by retry control: kind original|retry, reason of the refusal before";
      case RETRIES -> "retries admitted or refused by retry control";
      case RETRY_AFTER_BEHAVIOUR ->
          "retries that came back after a refusal: before (early) or after (honoured) Retry-After";
      case RETRY_AFTER_SUCCESS -> "retries that honoured Retry-After and completed with a 2xx";
      case DUPLICATE_OPERATIONS ->
          "requests whose operation was in flight or completed recently, by action";
      default -> "retry control's attempts store did not answer, by failure mode";
    };
  }

  /**
   * Two one-minute buckets of attempts and originals, and the pool's and class's {@code
   * sluice_attempts_total{kind="original",reason="none"}}.
   *
   * <p>Lock-free on the hot path: the counts are cumulative ({@link #originals}, the common case's
   * own counter, plus two adders for the rest), and a minute's count is the difference from the
   * totals its roll read. An attempt reads {@link #nextMinuteAt} and adds once; the lock is taken
   * only to roll (once a minute) and to read the ratio. The arithmetic is the one the window that
   * counted under its lock did: a time before the window's minute counts in that minute, and the
   * window never rolls back.
   */
  private static final class Window {
    final String pool;
    final String cls;
    final Counter originals; // originals with no earlier refusal: the common case
    final LongAdder otherOriginals = new LongAdder(); // originals with an earlier refusal's reason
    final LongAdder retries = new LongAdder();
    private long minute = Long.MIN_VALUE;
    // the first nanosecond after this minute (capped at Long.MAX_VALUE): an earlier time needs no
    // division to tell it is not a later minute; MIN_VALUE until the first roll
    private volatile long nextMinuteAt = Long.MIN_VALUE;
    // the cumulative attempts and originals when this minute began
    private long baseAttempts;
    private long baseOriginals;
    private long lastAttempts;
    private long lastOriginals;

    Window(String pool, String cls, Counter originals) {
      this.pool = pool;
      this.cls = cls;
      this.originals = originals;
    }

    /** Starts {@code now}'s minute if it is a later one (the hot path: one volatile read). */
    void roll(long now) {
      if (now >= nextMinuteAt) {
        rollLocked(now);
      }
    }

    synchronized double ratio(long now) {
      rollLocked(now);
      long origs = originalsTotal();
      long o = origs - baseOriginals + lastOriginals;
      long a = origs + retries.sum() - baseAttempts + lastAttempts;
      return o == 0 ? (a == 0 ? 1.0 : a) : (double) a / o;
    }

    private long originalsTotal() {
      return (long) originals.count() + otherOriginals.sum();
    }

    private synchronized void rollLocked(long now) {
      if (now < nextMinuteAt) { // this minute, or an earlier time (an arrival): never back
        return;
      }
      long m = Math.floorDiv(now, MINUTE_NANOS);
      if (m <= minute) {
        return;
      }
      long origs = originalsTotal();
      long atts = origs + retries.sum();
      if (m == minute + 1) {
        lastAttempts = atts - baseAttempts;
        lastOriginals = origs - baseOriginals;
      } else {
        lastAttempts = 0;
        lastOriginals = 0;
      }
      baseAttempts = atts;
      baseOriginals = origs;
      minute = m;
      nextMinuteAt = startOf(m + 1); // last: an attempt that reads it sees the bases set
    }

    /** Minute {@code m}'s first nanosecond, or Long.MAX_VALUE past the last whole one. */
    static long startOf(long m) {
      return m > Long.MAX_VALUE / MINUTE_NANOS ? Long.MAX_VALUE : m * MINUTE_NANOS;
    }
  }
}
