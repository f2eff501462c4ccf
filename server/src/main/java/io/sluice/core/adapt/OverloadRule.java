package io.sluice.core.adapt;

import io.sluice.core.policy.AdaptivePolicy;
import io.sluice.core.policy.PoolPolicy;
import org.jspecify.annotations.Nullable;

/**
 * What the upstream's overload answers do to an {@link AdaptiveLimit} (its class comment, rules
 * "Overload" and "Outage"): a decrease to what the upstream took, at most once per generation of
 * requests; the pause a Retry-After asks for when the limit would fall below its floor; and for an
 * outage (a 503 with a Retry-After), the probe at the floor and the return to the limit before it.
 *
 * <p>Not thread-safe: guarded by the monitor of the limit whose methods call it. Time is an
 * argument.
 */
final class OverloadRule {
  private final AdaptivePolicy settings;
  private final PoolPolicy ceiling;
  private final double floor;
  private final long intervalNanos;
  private final long maxPauseNanos;
  private long overloads;
  private long pauseUntilNanos;
  private boolean pauseSet; // pauseUntilNanos holds a pause (ticker values may be negative)
  private double beforeOutage = Double.NaN; // the limit an outage interrupted (NaN: none)
  private long outageSinceNanos;
  private long outageUntilNanos; // the latest Retry-After of an outage answer ends here

  /** The rule of a limit of {@code ceiling} whose floor is {@code floor} (a fraction of it). */
  OverloadRule(PoolPolicy ceiling, double floor) {
    this.settings = ceiling.adaptive();
    this.ceiling = ceiling;
    this.floor = floor;
    this.intervalNanos = settings.interval().toNanos();
    this.maxPauseNanos = settings.maxPause().toNanos();
  }

  /** Upstream overload answers seen. */
  long overloads() {
    return overloads;
  }

  /** How long new admission stays paused after {@code nowNanos} (an upstream's Retry-After). */
  long pauseRemainingNanos(long nowNanos) {
    return pauseSet ? Math.max(0, pauseUntilNanos - nowNanos) : 0;
  }

  /** The pool's pause as the shared store answered it (at most {@code maxPause}). */
  boolean adoptPause(long pauseRemainingNanos, long nowNanos) {
    return pauseRemainingNanos > 0
        && extendPause(nowNanos + Math.min(pauseRemainingNanos, Math.max(0, maxPauseNanos)));
  }

  private boolean extendPause(long untilNanos) {
    if (pauseSet && untilNanos - pauseUntilNanos <= 0) {
      return false;
    }
    pauseSet = true;
    pauseUntilNanos = untilNanos;
    return true;
  }

  /** Whether the limit probes at the floor for an outage (a 503 with Retry-After). */
  boolean inOutage() {
    return !Double.isNaN(beforeOutage);
  }

  /**
   * While the limit probes at the floor for an outage: the limit it restores, at the latest when
   * the last outage answer's Retry-After passes (the upstream's own estimate of its end); else
   * null.
   */
  @Nullable Restore restore(long nowNanos) {
    return inOutage() ? new Restore(beforeOutage, Math.max(0, outageUntilNanos - nowNanos)) : null;
  }

  /**
   * At a tick: when the outage's last Retry-After passed with no new outage answer, no probe could
   * say the upstream is back (its slots were held), so the Retry-After does; a fresh 503 starts
   * over. Returns true when {@code limit} went back to the limit before the outage.
   */
  boolean recoverIfDue(AdaptiveLimit limit, long nowNanos) {
    return inOutage() && nowNanos - outageUntilNanos >= 0 && recover(limit, nowNanos);
  }

  /**
   * See {@link AdaptiveLimit#onUpstream(int, long, long, long, int, long)}; {@code fraction} is the
   * limit now. Returns true when the limit or the pause changed.
   */
  boolean onUpstream(
      AdaptiveLimit limit,
      double fraction,
      int status,
      long retryAfterNanos,
      long admittedAtNanos,
      long nowNanos,
      int inFlightRequests,
      long inFlightWork) {
    if (!settings.overload(status)) {
      if (status / 100 == 2 && inOutage() && admittedAtNanos - outageSinceNanos >= 0) {
        // the first success of a request admitted during the outage: the upstream is back
        return recover(limit, nowNanos);
      }
      return false;
    }
    overloads++;
    boolean known = inFlightRequests > 0 || inFlightWork > 0;
    boolean fresh = limit.admittedSinceDecrease(admittedAtNanos);
    if (!known) { // as before this rule: back off, pause on Retry-After
      boolean changed = false;
      if (retryAfterNanos > 0 && maxPauseNanos > 0) {
        changed = extendPause(nowNanos + Math.min(retryAfterNanos, maxPauseNanos));
      }
      if (fresh) {
        changed |=
            limit.decrease(fraction * settings.backoff(), AdaptiveLimit.Cause.OVERLOAD, nowNanos);
      }
      return changed;
    }
    if (status == 503 && retryAfterNanos > 0) {
      return outage(limit, fraction, retryAfterNanos, fresh, nowNanos);
    }
    if (!fresh) {
      return false; // this generation's decrease is made
    }
    // the upstream took the others: the limit settles at what it took
    double took = took(fraction, inFlightRequests, inFlightWork);
    boolean changed =
        limit.decrease(Math.min(fraction, took), AdaptiveLimit.Cause.OVERLOAD, nowNanos);
    if (took < floor - 1e-9 && retryAfterNanos > 0 && maxPauseNanos > 0) {
      changed |= extendPause(nowNanos + Math.min(retryAfterNanos, maxPauseNanos));
    }
    return changed;
  }

  /**
   * What the upstream took when it refused one of {@code requests} ({@code work}) in flight, as a
   * fraction of the ceiling: the others.
   */
  private double took(double fraction, int requests, long work) {
    if (ceiling.maxRequests() > 0 && requests > 0) {
      return (requests - 1) / (double) ceiling.maxRequests();
    }
    if (work > 0 && requests > 0) {
      return work * (requests - 1) / (double) requests / ceiling.capacityWorkUnits();
    }
    return fraction * settings.backoff();
  }

  /** A 503 with a Retry-After: the upstream is down; probe at the floor, remember the limit. */
  private boolean outage(
      AdaptiveLimit limit, double fraction, long retryAfterNanos, boolean fresh, long nowNanos) {
    long until = nowNanos + Math.min(retryAfterNanos, Math.max(maxPauseNanos, intervalNanos));
    if (!inOutage()) {
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
    boolean changed = limit.decrease(floor, AdaptiveLimit.Cause.OUTAGE, nowNanos);
    long probe = Math.min(intervalNanos / 2, Math.min(retryAfterNanos, maxPauseNanos));
    if (probe > 0) {
      changed |= extendPause(nowNanos + probe);
    }
    return changed;
  }

  /** The outage is over: the limit it interrupted, at once. */
  private boolean recover(AdaptiveLimit limit, long nowNanos) {
    double back = beforeOutage;
    beforeOutage = Double.NaN;
    pauseSet = false;
    limit.restore(back, nowNanos);
    return true;
  }
}
