package io.sluice.core.adapt;

/**
 * One pool's shared limit record and the rule of {@link LimitStore} applied to it: the in-memory
 * store keeps one per pool; Redis's {@code adaptive_limit.lua} applies the same rule to a hash. Not
 * thread-safe: the store serialises exchanges. Time (the store's clock, milliseconds) is an
 * argument.
 */
public final class SharedLimit {
  private double fraction = Double.NaN;
  private AdaptiveLimit.Cause cause = AdaptiveLimit.Cause.START;
  private long changedAtMillis;
  private long pauseUntilMillis;
  private double ttft = Double.NaN;
  private long ttftAtMillis;
  private double tpot = Double.NaN;
  private long tpotAtMillis;
  private long lastExchangeMillis;

  /** Whether nothing was exchanged for twice {@code baselineWindowMillis} (the record expires). */
  public boolean expired(long nowMillis, long baselineWindowMillis) {
    return nowMillis - lastExchangeMillis > 2 * baselineWindowMillis;
  }

  /** Applies {@code x} at {@code nowMillis}; answers the pool's state. */
  public LimitStore.Shared exchange(LimitStore.Exchange x, long nowMillis) {
    lastExchangeMillis = nowMillis;
    AdaptiveLimit.Proposal p = x.proposal();
    if (p != null) {
      if (Double.isNaN(fraction)) {
        set(p.to(), p.cause(), nowMillis);
      } else if (p.shrink()) {
        if (p.to() < fraction) {
          set(p.to(), p.cause(), nowMillis);
        }
      } else if (Math.abs(fraction - p.from()) < 1e-6
          && nowMillis - changedAtMillis >= x.minGapMillis()) {
        set(p.to(), p.cause(), nowMillis);
      }
    }
    if (x.pauseMillis() > 0) {
      pauseUntilMillis = Math.max(pauseUntilMillis, nowMillis + x.pauseMillis());
    }
    long window = x.baselineWindowMillis();
    if (ttft > 0 && nowMillis - ttftAtMillis > window) {
      ttft = Double.NaN;
    }
    if (tpot > 0 && nowMillis - tpotAtMillis > window) {
      tpot = Double.NaN;
    }
    if (x.ttftBaselineNanos() > 0 && !(x.ttftBaselineNanos() > ttft)) {
      ttft = x.ttftBaselineNanos();
      ttftAtMillis = nowMillis;
    }
    if (x.tpotBaselineNanos() > 0 && !(x.tpotBaselineNanos() > tpot)) {
      tpot = x.tpotBaselineNanos();
      tpotAtMillis = nowMillis;
    }
    return new LimitStore.Shared(
        fraction, cause, Math.max(0, pauseUntilMillis - nowMillis), ttft, tpot);
  }

  private void set(double f, AdaptiveLimit.Cause why, long nowMillis) {
    fraction = f;
    cause = why;
    changedAtMillis = nowMillis;
  }
}
