package io.sluice.core.adapt;

import io.sluice.core.policy.AdaptivePolicy;
import io.sluice.core.policy.PoolPolicy;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

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
  private double lastRatio = Double.NaN;
  private @Nullable Proposal pending;
  private final OverloadRule overload;

  /** Where {@code start} says (the ceiling by default), in slow start, as of {@code nowNanos}. */
  public static AdaptiveLimit starting(PoolPolicy ceiling, long nowNanos) {
    return new AdaptiveLimit(ceiling, Double.NaN, nowNanos);
  }

  /**
   * With the limit {@code fraction} of {@code ceiling} (clamped into the bounds; NaN: none learned,
   * where {@code start} says), e.g. the limit of the policy this one replaces on a hot reload.
   */
  public AdaptiveLimit(PoolPolicy ceiling, double fraction, long nowNanos) {
    this.settings = ceiling.adaptive();
    this.ceiling = ceiling;
    this.floor = LimitBounds.floorOf(ceiling);
    this.step = ceiling.maxRequests() > 0 ? 1.0 / ceiling.maxRequests() : 1.0 / 32;
    this.slowStep = step;
    this.intervalNanos = settings.interval().toNanos();
    this.overload = new OverloadRule(ceiling, floor);
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
    return LimitBounds.workOf(ceiling, f);
  }

  private int requestsOf(double f) {
    return LimitBounds.requestsOf(ceiling, f);
  }

  /** How long new admission stays paused after {@code nowNanos} (an upstream's Retry-After). */
  public synchronized long pauseRemainingNanos(long nowNanos) {
    return overload.pauseRemainingNanos(nowNanos);
  }

  /** Whether admission is paused at {@code nowNanos}. */
  public synchronized boolean paused(long nowNanos) {
    return pauseRemainingNanos(nowNanos) > 0;
  }

  /** Changes of the limit made by this replica, by cause ({@link Cause#ordinal()}). */
  public synchronized long changes(Cause c) {
    return changes[c.ordinal()];
  }

  /** Upstream overload answers seen. */
  public synchronized long overloads() {
    return overload.overloads();
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
    return overload.onUpstream(
        this,
        fraction,
        status,
        retryAfterNanos,
        admittedAtNanos,
        nowNanos,
        inFlightRequests,
        inFlightWork);
  }

  /**
   * (OverloadRule) Whether a request admitted at {@code admittedAtNanos} came after the last
   * decrease.
   */
  boolean admittedSinceDecrease(long admittedAtNanos) {
    return admittedAtNanos - lastDecreaseNanos >= 0;
  }

  /** (OverloadRule) A decrease to {@code next} for {@code why}: slow start is over. */
  boolean decrease(double next, Cause why, long nowNanos) {
    lastDecreaseNanos = nowNanos;
    slowStart = false;
    return set(next, why, nowNanos);
  }

  /** (OverloadRule) An outage is over: back to {@code next}, the limit it interrupted. */
  void restore(double next, long nowNanos) {
    lastDecreaseNanos = nowNanos;
    set(next, Cause.RECOVERED, nowNanos);
  }

  /** While an outage holds the limit at its floor: what it restores, and when; else null. */
  public synchronized @Nullable Restore restore(long nowNanos) {
    return overload.restore(nowNanos);
  }

  /** Whether the limit probes at the floor for an outage (a 503 with Retry-After). */
  public synchronized boolean inOutage() {
    return overload.inOutage();
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
    if (overload.recoverIfDue(this, nowNanos)) {
      return true;
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
  public synchronized @Nullable Proposal takeProposal() {
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
    boolean changed = overload.adoptPause(pauseRemainingNanos, nowNanos);
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
}
