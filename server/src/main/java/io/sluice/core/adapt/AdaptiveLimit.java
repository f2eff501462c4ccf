package io.sluice.core.adapt;

import io.sluice.core.policy.AdaptivePolicy;
import io.sluice.core.policy.PoolPolicy;
import java.util.Arrays;
import java.util.Locale;

/**
 * One pool's learned limit: a fraction {@code f} of the pool's ceiling ({@code capacity} and {@code
 * maxRequests}), between the floor ({@code minCapacity}, {@code minRequests}) and 1. The rules
 * (docs/scheduling.md, "Adaptive capacity"):
 *
 * <ul>
 *   <li><b>Start</b>: from the limit the pool learned (the shared store's, or the one a reload
 *       replaced), else from {@code start} (the ceiling by default; docs/decisions/0010).
 *   <li><b>Latency</b>, once per <i>generation of answers</i>: when a signal (time to first token,
 *       time per output token) holds {@link #generation} samples of requests admitted after the
 *       last change (the smaller of {@code minSamples} and the limit in request slots, at least
 *       {@link #MIN_GENERATION}; or at least two samples after {@link #FALLBACK_INTERVALS} {@code
 *       interval}s), its median {@code m} against the no-load baseline {@code b} (the minimum over
 *       {@code baselineWindow} of the median of the signal's last 256 samples, taken at each
 *       verdict); {@code r = max over signals of m / b}. {@code r > shrinkAbove}: {@code f ← f ×
 *       max(backoff, growBelow / r)} (the gradient, towards the latency the pool had at {@code
 *       growBelow}; applied to the most the pool held during the generation when that was below the
 *       limit: the latency was made by what ran, not by an unused limit above it); {@code r <=
 *       growBelow} while the pool used at least {@link #MIN_USE} of its limit during the
 *       generation: grow; in between: hold (the dead band that keeps a steady load from
 *       oscillating).
 *   <li><b>Growth</b>: slow start from where the limit starts (the step doubles every generation,
 *       the limit grows by at most half), until each sign of pressure ({@code r > growBelow})
 *       halves the step, and at one step (or at any shrink or overload) slow start ends, back to
 *       additive steps of one request slot (or 1/32 of the capacity when the pool caps no requests)
 *       per generation; after any shrink, growth is additive only, so the queue that caused the
 *       incident is not rebuilt.
 *   <li><b>Overload</b>: an upstream 429/503/529 (the pool's {@code overloadStatuses}) of a request
 *       admitted after the last decrease, seen with {@code N} requests of the pool in flight (not
 *       counting those the upstream refused already): the upstream took {@code N − 1}, so {@code f
 *       ←} the in-flight share of the ceiling × {@code (N − 1) / N} (at most one decrease per
 *       generation of requests, as TCP halves once per window); with {@code N} unknown, {@code f ←
 *       f × backoff}. Its {@code Retry-After} pauses new admission (at most {@code maxPause}) only
 *       when that would put the limit below the floor.
 *   <li><b>Outage</b>: a 503 with a {@code Retry-After} (the upstream is down, not full): the limit
 *       before it is remembered, the pool probes at the floor (paused for at most half an {@code
 *       interval} per generation, not for the whole Retry-After), and the first successful answer
 *       of a request admitted during the outage restores the remembered limit — or, when no probe
 *       could answer (the floor's slots still held by answers admitted before the outage), the last
 *       outage answer's {@code Retry-After} passing with no new one does.
 * </ul>
 *
 * Samples of requests admitted before the last change of the limit are not counted: they measure
 * the old limit. Only the upstream's own answers reach this class ({@link AnswerSource}). Thread-
 * safe (signals come from transport threads, ticks from a timer). Time is an argument; no clock.
 */
public final class AdaptiveLimit {
  /** Grow only while the pool used at least this fraction of its limit (else it is not needed). */
  public static final double MIN_USE = 0.8;

  /** The fewest samples of a generation that decide (at a limit of one or two slots). */
  public static final int MIN_GENERATION = 3;

  /**
   * A generation short of samples decides with at least two after this many {@code interval}s (a
   * small limit with long answers), and starts over with fewer after ten times that.
   */
  public static final int FALLBACK_INTERVALS = 3;

  private static final int MAX_SAMPLES = 512;
  private static final int RECENT = 256;

  /** Why the limit last changed. */
  public enum Cause {
    /** The limit starts where {@code start} says (no learned limit yet). */
    START,
    /** Slow start: latency at its baseline, the step doubling. */
    SLOW_START,
    /** Additive recovery: latency at its baseline, one step. */
    GROW,
    /** Latency rose above {@code shrinkAbove} × baseline. */
    LATENCY,
    /** The upstream answered overloaded (429/503/529). */
    OVERLOAD,
    /** The upstream answered 503 with a Retry-After: down; the limit probes at the floor. */
    OUTAGE,
    /** The first success after an outage: back to the limit before it. */
    RECOVERED,
    /** Another replica changed the pool's shared limit. */
    SHARED,
    /** The policy's bounds changed (hot reload): the limit was clamped into them. */
    RECONFIGURE;

    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** The latency signals. */
  public enum Signal {
    /** Time to first token: from the permit to the first response body chunk. */
    TTFT,
    /** Time per output token of a completed answer. */
    TPOT;

    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * What this replica's own evidence did to the limit since the last exchange with the shared
   * store: {@code from} (the limit it started from) to {@code to}; {@code shrink}: a decrease,
   * which the store applies as a minimum; else a growth, which it applies only if the pool's value
   * is still {@code from}.
   */
  public record Proposal(double from, double to, boolean shrink, Cause cause) {}

  /** The state at one instant (metrics, /debug/queues, the decision log). */
  public record Snapshot(
      double fraction,
      double floor,
      long work,
      int requests,
      Cause cause,
      long changedAtNanos,
      long pauseRemainingNanos,
      double ttftBaselineNanos,
      double tpotBaselineNanos,
      double lastRatio,
      boolean slowStart) {}

  private final AdaptivePolicy settings;
  private final PoolPolicy ceiling;
  private final double floor;
  private final double step;
  private final long intervalNanos;
  private final long maxPauseNanos;
  private final long[] changes = new long[Cause.values().length];
  private final SignalWindow[] signals = new SignalWindow[Signal.values().length];

  private double fraction;
  private Cause cause = Cause.START;
  private long changedAtNanos;
  private long lastDecreaseNanos;
  private long intervalStartNanos;
  private double maxUse;
  private boolean slowStart = true;
  private double slowStep;
  private long pauseUntilNanos;
  private boolean pauseSet; // pauseUntilNanos holds a pause (ticker values may be negative)
  private double lastRatio = Double.NaN;
  private @org.jspecify.annotations.Nullable Proposal pending;
  private long overloads;
  private double beforeOutage = Double.NaN; // the limit an outage interrupted (NaN: none)
  private long outageSinceNanos;
  private long outageUntilNanos; // the latest Retry-After of an outage answer ends here

  /** Where {@code start} says (the ceiling by default), in slow start, as of {@code nowNanos}. */
  public AdaptiveLimit(PoolPolicy ceiling, long nowNanos) {
    this(ceiling, Double.NaN, nowNanos);
  }

  /**
   * With the limit {@code fraction} of {@code ceiling} (clamped into the bounds; NaN: none learned,
   * where {@code start} says), e.g. the limit of the policy this one replaces on a hot reload.
   */
  public AdaptiveLimit(PoolPolicy ceiling, double fraction, long nowNanos) {
    this.settings = ceiling.adaptive();
    this.ceiling = ceiling;
    this.floor = floorOf(ceiling);
    this.step = ceiling.maxRequests() > 0 ? 1.0 / ceiling.maxRequests() : 1.0 / 32;
    this.slowStep = step;
    this.intervalNanos = settings.interval().toNanos();
    this.maxPauseNanos = settings.maxPause().toNanos();
    for (Signal s : Signal.values()) {
      signals[s.ordinal()] = new SignalWindow(settings.baselineWindow().toNanos());
    }
    boolean carried = !Double.isNaN(fraction);
    this.fraction = clamp(carried ? fraction : settings.start());
    this.cause = carried ? Cause.RECONFIGURE : Cause.START;
    this.slowStart = !carried;
    this.changedAtNanos = nowNanos;
    this.lastDecreaseNanos = nowNanos;
    this.intervalStartNanos = nowNanos;
  }

  /** The floor of {@code ceiling}'s limit as a fraction of it. */
  static double floorOf(PoolPolicy ceiling) {
    AdaptivePolicy a = ceiling.adaptive();
    double f =
        Math.max(
            (double) a.minCapacity() / ceiling.capacityWorkUnits(),
            ceiling.maxRequests() > 0
                ? (double) Math.max(1, a.minRequests()) / ceiling.maxRequests()
                : 0);
    return Math.min(1.0, f);
  }

  /** Where a new limit of {@code ceiling} starts with none learned (its {@code start}, clamped). */
  public static double startFraction(PoolPolicy ceiling) {
    return Math.max(floorOf(ceiling), Math.min(1.0, ceiling.adaptive().start()));
  }

  /** The policy whose numbers are the ceiling. */
  public PoolPolicy ceiling() {
    return ceiling;
  }

  /** The limit as a fraction of the ceiling. */
  public synchronized double fraction() {
    return fraction;
  }

  /** Work units the pool may hold now. */
  public synchronized long work() {
    return workOf(fraction);
  }

  /** Request slots the pool may hold now (0 when the pool caps none). */
  public synchronized int requests() {
    return requestsOf(fraction);
  }

  private long workOf(double f) {
    return workOf(ceiling, f);
  }

  private int requestsOf(double f) {
    return requestsOf(ceiling, f);
  }

  /** Work units of the limit {@code f} of {@code ceiling} (NaN: none learned, the start). */
  public static long workOf(PoolPolicy ceiling, double f) {
    AdaptivePolicy a = ceiling.adaptive();
    long cap = ceiling.capacityWorkUnits();
    double g = Double.isNaN(f) ? startFraction(ceiling) : f;
    long w = (long) Math.floor(g * cap + 1e-9);
    return Math.min(cap, Math.max(a.minCapacity(), Math.max(1, w)));
  }

  /**
   * Request slots of the limit {@code f} of {@code ceiling} (NaN: none learned, the start; 0: no
   * cap).
   */
  public static int requestsOf(PoolPolicy ceiling, double f) {
    int m = ceiling.maxRequests();
    if (m <= 0) {
      return 0;
    }
    int min = Math.max(1, ceiling.adaptive().minRequests());
    double g = Double.isNaN(f) ? startFraction(ceiling) : f;
    int r = (int) Math.floor(g * m + 1e-9);
    return Math.min(m, Math.max(min, r));
  }

  /** How long new admission stays paused after {@code nowNanos} (an upstream's Retry-After). */
  public synchronized long pauseRemainingNanos(long nowNanos) {
    return pauseSet ? Math.max(0, pauseUntilNanos - nowNanos) : 0;
  }

  /** Whether admission is paused at {@code nowNanos}. */
  public synchronized boolean paused(long nowNanos) {
    return pauseRemainingNanos(nowNanos) > 0;
  }

  private boolean extendPause(long untilNanos) {
    if (pauseSet && untilNanos - pauseUntilNanos <= 0) {
      return false;
    }
    pauseSet = true;
    pauseUntilNanos = untilNanos;
    return true;
  }

  /** Changes of the limit made by this replica, by cause ({@link Cause#ordinal()}). */
  public synchronized long changes(Cause c) {
    return changes[c.ordinal()];
  }

  /** Upstream overload answers seen. */
  public synchronized long overloads() {
    return overloads;
  }

  public synchronized Snapshot snapshot(long nowNanos) {
    return new Snapshot(
        fraction,
        floor,
        workOf(fraction),
        requestsOf(fraction),
        cause,
        changedAtNanos,
        pauseRemainingNanos(nowNanos),
        signals[Signal.TTFT.ordinal()].baseline(nowNanos),
        signals[Signal.TPOT.ordinal()].baseline(nowNanos),
        lastRatio,
        slowStart);
  }

  /**
   * A latency sample of a request admitted at {@code admittedAtNanos}: its time to first token, or
   * its time per output token. Samples of requests admitted before the last change are dropped.
   */
  public synchronized void onLatency(Signal signal, double nanos, long admittedAtNanos) {
    if (!(nanos > 0) || admittedAtNanos - changedAtNanos < 0) {
      return;
    }
    signals[signal.ordinal()].add(nanos);
  }

  /**
   * The upstream answered {@code status} to a request admitted at {@code admittedAtNanos}, with a
   * Retry-After of {@code retryAfterNanos} (negative: none), the pool's in flight unknown: an
   * overload shrinks the limit by {@code backoff} and its Retry-After pauses. Returns true when the
   * limit or the pause changed (the pool applies it at once).
   */
  public synchronized boolean onUpstream(
      int status, long retryAfterNanos, long admittedAtNanos, long nowNanos) {
    return onUpstream(status, retryAfterNanos, admittedAtNanos, nowNanos, -1, -1);
  }

  /**
   * The upstream's own answer {@code status} to a request admitted at {@code admittedAtNanos}, with
   * a Retry-After of {@code retryAfterNanos} (negative: none), seen while the pool held {@code
   * inFlightRequests} requests and {@code inFlightWork} work units the upstream had not refused yet
   * (this one included; negative: unknown). Returns true when the limit or the pause changed (the
   * pool applies it at once).
   */
  public synchronized boolean onUpstream(
      int status,
      long retryAfterNanos,
      long admittedAtNanos,
      long nowNanos,
      int inFlightRequests,
      long inFlightWork) {
    if (!settings.overload(status)) {
      if (status / 100 == 2
          && !Double.isNaN(beforeOutage)
          && admittedAtNanos - outageSinceNanos >= 0) {
        // the first success of a request admitted during the outage: the upstream is back
        return recover(nowNanos);
      }
      return false;
    }
    overloads++;
    boolean known = inFlightRequests > 0 || inFlightWork > 0;
    boolean fresh = admittedAtNanos - lastDecreaseNanos >= 0;
    if (!known) { // as before this rule: back off, pause on Retry-After
      boolean changed = false;
      if (retryAfterNanos > 0 && maxPauseNanos > 0) {
        changed = extendPause(nowNanos + Math.min(retryAfterNanos, maxPauseNanos));
      }
      if (fresh) {
        lastDecreaseNanos = nowNanos;
        slowStart = false;
        changed |= set(fraction * settings.backoff(), Cause.OVERLOAD, nowNanos);
      }
      return changed;
    }
    if (status == 503 && retryAfterNanos > 0) {
      return outage(retryAfterNanos, fresh, nowNanos);
    }
    if (!fresh) {
      return false; // this generation's decrease is made
    }
    lastDecreaseNanos = nowNanos;
    slowStart = false;
    // the upstream took the others: the limit settles at what it took
    double took = took(inFlightRequests, inFlightWork);
    boolean changed = set(Math.min(fraction, took), Cause.OVERLOAD, nowNanos);
    if (took < floor - 1e-9 && retryAfterNanos > 0 && maxPauseNanos > 0) {
      changed |= extendPause(nowNanos + Math.min(retryAfterNanos, maxPauseNanos));
    }
    return changed;
  }

  /**
   * What the upstream took when it refused one of {@code requests} ({@code work}) in flight, as a
   * fraction of the ceiling: the others.
   */
  private double took(int requests, long work) {
    if (ceiling.maxRequests() > 0 && requests > 0) {
      return (requests - 1) / (double) ceiling.maxRequests();
    }
    if (work > 0 && requests > 0) {
      return work * (requests - 1) / (double) requests / ceiling.capacityWorkUnits();
    }
    return fraction * settings.backoff();
  }

  /** A 503 with a Retry-After: the upstream is down; probe at the floor, remember the limit. */
  private boolean outage(long retryAfterNanos, boolean fresh, long nowNanos) {
    long until = nowNanos + Math.min(retryAfterNanos, Math.max(maxPauseNanos, intervalNanos));
    if (Double.isNaN(beforeOutage)) {
      beforeOutage = fraction;
      outageSinceNanos = nowNanos;
      outageUntilNanos = until;
    } else {
      if (until - outageUntilNanos > 0) {
        outageUntilNanos = until;
      }
      if (!fresh) {
        return false;
      }
    }
    lastDecreaseNanos = nowNanos;
    slowStart = false;
    boolean changed = set(floor, Cause.OUTAGE, nowNanos);
    long probe = Math.min(intervalNanos / 2, Math.min(retryAfterNanos, maxPauseNanos));
    if (probe > 0) {
      changed |= extendPause(nowNanos + probe);
    }
    return changed;
  }

  /** The outage is over: the limit it interrupted, at once. */
  private boolean recover(long nowNanos) {
    double back = beforeOutage;
    beforeOutage = Double.NaN;
    lastDecreaseNanos = nowNanos;
    pauseSet = false;
    set(back, Cause.RECOVERED, nowNanos);
    return true;
  }

  /** Whether the limit probes at the floor for an outage (a 503 with Retry-After). */
  public synchronized boolean inOutage() {
    return !Double.isNaN(beforeOutage);
  }

  /**
   * The samples a generation needs before its verdict: the smaller of {@code minSamples} and the
   * limit in request slots (a small limit answers few requests per second), at least {@link
   * #MIN_GENERATION}.
   */
  public synchronized int generation() {
    int r = requestsOf(fraction);
    int n = r > 0 ? Math.min(settings.minSamples(), r) : settings.minSamples();
    return Math.max(Math.min(MIN_GENERATION, settings.minSamples()), n);
  }

  /**
   * Runs the latency rule when a generation of answers is in (see the class comment); {@code use}
   * is the pool's load now as a fraction of its limit (the largest seen during the generation
   * counts). Returns true when the limit changed.
   */
  public synchronized boolean tick(long nowNanos, double use) {
    if (!Double.isNaN(beforeOutage) && nowNanos - outageUntilNanos >= 0) {
      // the outage's last Retry-After passed with no new outage answer: no probe could say the
      // upstream is back (its slots were held), so the Retry-After does; a fresh 503 starts over
      return recover(nowNanos);
    }
    maxUse = Math.max(maxUse, use);
    long waited = nowNanos - intervalStartNanos;
    int need = generation();
    if (waited >= FALLBACK_INTERVALS * intervalNanos) {
      need = Math.min(need, 2); // a bounded wait: decide on what came
    }
    double ratio = Double.NaN;
    boolean enough = false;
    for (SignalWindow s : signals) {
      if (s.count >= need) {
        enough = true;
      }
    }
    if (!enough) {
      // too few samples for a verdict: keep collecting (an idle pool keeps its limit), but bound
      // the generation so an old sample does not decide a much later one
      if (waited >= 10L * FALLBACK_INTERVALS * intervalNanos) {
        restartInterval(nowNanos);
      }
      return false;
    }
    for (SignalWindow s : signals) {
      if (s.count >= need) {
        double m = s.median();
        s.offerBaseline(settings.minSamples(), nowNanos);
        double b = s.baseline(nowNanos);
        double r = b > 0 ? m / b : 1.0;
        ratio = Double.isNaN(ratio) ? r : Math.max(ratio, r);
        s.reset(); // a signal short of samples keeps collecting into the next generation
      }
    }
    lastRatio = ratio;
    double usedMax = maxUse;
    boolean used = maxUse >= MIN_USE;
    intervalStartNanos = nowNanos;
    maxUse = 0;
    if (ratio > settings.shrinkAbove()) {
      slowStart = false;
      lastDecreaseNanos = nowNanos;
      double gradient = Math.max(settings.backoff(), settings.growBelow() / ratio);
      // the latency was made by what was in flight, not by an unused limit above it (a cold
      // start at the ceiling): the gradient applies to the most held when that is below the limit
      double held = Math.min(fraction, Math.max(floor, usedMax * fraction));
      return set(held * gradient, Cause.LATENCY, nowNanos);
    }
    if (ratio > settings.growBelow()) {
      if (slowStart) { // a sign of pressure halves the slow-start step; at one step it ends
        slowStep /= 2;
        slowStart = slowStep > step;
      }
      return false;
    }
    if (!used || fraction >= 1.0) {
      return false;
    }
    if (slowStart) {
      // the step doubles, but the limit grows by at most half per generation
      double next = Math.min(fraction + slowStep, fraction * 1.5);
      slowStep *= 2;
      return set(Math.max(next, fraction + step), Cause.SLOW_START, nowNanos);
    }
    return set(fraction + step, Cause.GROW, nowNanos);
  }

  private void restartInterval(long nowNanos) {
    intervalStartNanos = nowNanos;
    maxUse = 0;
    for (SignalWindow s : signals) {
      s.reset();
    }
  }

  /**
   * What this replica's own evidence did since the last call (null: nothing), for the shared store;
   * taking it clears it.
   */
  public synchronized @org.jspecify.annotations.Nullable Proposal takeProposal() {
    Proposal p = pending;
    pending = null;
    return p;
  }

  /**
   * The pool's shared state as the store answered it: its limit (NaN: none yet), the cause of its
   * last change, the remaining pause and the pool's baselines (NaN: none). Returns true when the
   * limit or the pause changed.
   */
  public synchronized boolean adopt(
      double poolFraction,
      Cause poolCause,
      long pauseRemainingNanos,
      double ttftBaselineNanos,
      double tpotBaselineNanos,
      long nowNanos) {
    boolean changed = false;
    if (pauseRemainingNanos > 0) {
      changed = extendPause(nowNanos + Math.min(pauseRemainingNanos, Math.max(0, maxPauseNanos)));
    }
    signals[Signal.TTFT.ordinal()].pool = ttftBaselineNanos;
    signals[Signal.TPOT.ordinal()].pool = tpotBaselineNanos;
    if (!Double.isNaN(poolFraction)) {
      double f = clamp(poolFraction);
      if (Math.abs(f - fraction) > 1e-9) {
        if (f < fraction) {
          slowStart = false; // the pool shrank: recover additively like it
          lastDecreaseNanos = nowNanos;
        }
        fraction = f;
        changedAtNanos = nowNanos;
        for (SignalWindow s : signals) {
          s.reset();
        }
        changes[Cause.SHARED.ordinal()]++;
        changed = true;
      }
      cause = poolCause;
      if (poolCause != Cause.START && poolCause != Cause.SLOW_START) {
        slowStart = false; // the pool learned already: no slow start of its own
      }
    }
    return changed;
  }

  /** The baseline of {@code signal} now: this replica's and the pool's lower one (NaN: none). */
  public synchronized double baseline(Signal signal, long nowNanos) {
    return signals[signal.ordinal()].baseline(nowNanos);
  }

  /**
   * The baseline of {@code signal} this replica measured itself (NaN: none), for the shared store
   * (what it adopted from the store is not sent back, so a pool's baseline expires when nobody
   * measures it again).
   */
  public synchronized double measuredBaseline(Signal signal, long nowNanos) {
    return signals[signal.ordinal()].measured.value(nowNanos);
  }

  private boolean set(double next, Cause why, long nowNanos) {
    double f = clamp(next);
    if (Math.abs(f - fraction) <= 1e-9) {
      return false;
    }
    Proposal before = pending;
    double from = before == null ? fraction : before.from();
    boolean shrink = f < from;
    pending = new Proposal(from, f, shrink, why);
    for (SignalWindow s : signals) {
      s.reset(); // samples so far measured the old limit: a new generation starts
    }
    intervalStartNanos = nowNanos;
    maxUse = 0;
    fraction = f;
    cause = why;
    changedAtNanos = nowNanos;
    changes[why.ordinal()]++;
    return true;
  }

  private double clamp(double f) {
    return Math.max(floor, Math.min(1.0, f));
  }

  /** One signal's samples in the current interval and its baseline. */
  private static final class SignalWindow {
    final double[] samples = new double[MAX_SAMPLES];
    int count;
    long seen;
    final MinWindow measured;
    double pool = Double.NaN; // the pool's baseline as the shared store last answered it

    SignalWindow(long windowNanos) {
      this.measured = new MinWindow(windowNanos);
    }

    double baseline(long nowNanos) {
      double own = measured.value(nowNanos);
      if (!(pool > 0)) {
        return own;
      }
      return Double.isNaN(own) ? pool : Math.min(own, pool);
    }

    // the last RECENT samples whatever the interval: their median is what the baseline keeps
    final double[] recent = new double[RECENT];
    long recentSeen;

    void add(double v) {
      // the most recent MAX_SAMPLES of the interval are kept
      samples[(int) (seen % MAX_SAMPLES)] = v;
      seen++;
      count = (int) Math.min(MAX_SAMPLES, seen);
      recent[(int) (recentSeen++ % RECENT)] = v;
    }

    /**
     * Offers the median of the last {@link #RECENT} samples (at least {@code 2 × minSamples}) to
     * the baseline: one interval's median of a few samples is noisy, and the minimum of noisy
     * medians sits below the typical no-load latency (an idle pool would read 1.2–1.3 and never
     * grow); a median of many, overlapping from one interval to the next, does not.
     */
    void offerBaseline(int minSamples, long nowNanos) {
      int n = (int) Math.min(RECENT, recentSeen);
      if (n < 2 * minSamples) {
        return;
      }
      double[] c = Arrays.copyOf(recent, n);
      Arrays.sort(c);
      measured.offer(c[n / 2], nowNanos);
    }

    void reset() {
      count = 0;
      seen = 0;
    }

    double median() {
      double[] c = Arrays.copyOf(samples, count);
      Arrays.sort(c);
      return c[c.length / 2];
    }
  }
}
