package io.sluice.core.budget;

import java.time.Instant;

/**
 * The budget rule, pure, applied by a store atomically to one budget's state in one window: reserve
 * at admission, reconcile at the end.
 *
 * <ul>
 *   <li>A request is <b>refused</b> ({@link Outcome.Exhausted}) only when what was actually spent
 *       leaves no room for it: {@code spent + cost > limit}. Reservations of requests still running
 *       never refuse; when they are what leaves no room, the request <b>waits</b> ({@link
 *       Outcome.Wait}) for them to settle, so a burst of large requests on a fresh budget is held,
 *       not refused at zero spend.
 *   <li>With pacing, the budget not yet spent or reserved is spread over the time left in the
 *       window as a rate, filling a bucket of {@code burst} units (full at the window's start); a
 *       request needs the bucket to hold its cost (or the whole burst, when it costs more), and
 *       otherwise waits for the rate to fill it.
 *   <li>Reconciling returns a reservation's unused part to the bucket (an overrun takes it) and
 *       counts what was actually spent; a reservation cut while it runs (a cheaper run) returns the
 *       cut part at once.
 *   <li>Each soft threshold is announced once per window, at the reservation or reconciliation that
 *       first reaches it.
 * </ul>
 */
public final class Ledger {
  private Ledger() {}

  /**
   * One budget's state in one window.
   *
   * @param spent units spent (reconciled) in the window
   * @param reserved units reserved by requests still running
   * @param pace the pacing bucket's level (units; may be below zero after an overrun)
   * @param paceAtMillis when the bucket was last filled (epoch millis; 0: never, full)
   * @param announced the highest threshold index announced ({@code -1}: none)
   */
  public record State(long spent, long reserved, double pace, long paceAtMillis, int announced) {
    public static final State FRESH = new State(0, 0, 0, 0, -1);
  }

  /** What the rule answers. */
  public sealed interface Outcome permits Outcome.Admit, Outcome.Wait, Outcome.Exhausted {
    /** Admitted: {@code cost} reserved. {@code announce}: the threshold first reached, or -1. */
    record Admit(State next, long cost, long remaining, int announce) implements Outcome {}

    /**
     * Not now: the running requests' reservations ({@code pacing} false) or the pace ({@code
     * pacing} true) leave no room; {@code waitMillis} is when the pace would have room (a hint;
     * reservations settle when requests end).
     */
    record Wait(State next, boolean pacing, long waitMillis) implements Outcome {}

    /** The budget is spent for this window; it renews at {@code renews}. */
    record Exhausted(State next, Instant renews) implements Outcome {}
  }

  /** Reserves {@code cost} units for a request arriving at {@code now} in {@code window}. */
  public static Outcome reserve(
      State s, long cost, Terms terms, Period.Window window, Instant now) {
    if (cost < 0) {
      throw new IllegalArgumentException("cost " + cost + " (expected: >= 0)");
    }
    long limit = terms.limit();
    if (s.spent() + cost > limit || (cost == 0 && s.spent() >= limit)) {
      return new Outcome.Exhausted(s, window.end());
    }
    if (s.spent() + s.reserved() + cost > limit) {
      return new Outcome.Wait(s, false, 0);
    }
    double pace = s.pace();
    long paceAt = s.paceAtMillis();
    if (terms.paced()) {
      pace = filled(s, terms, window, now);
      paceAt = now.toEpochMilli();
      double needed = Math.min(cost, terms.burst());
      if (pace < needed) {
        double rate = rate(s, terms, window, now);
        long wait =
            rate > 0
                ? (long) Math.ceil((needed - pace) / rate)
                : window.paceHorizon(now).toMillis();
        return new Outcome.Wait(
            new State(s.spent(), s.reserved(), pace, paceAt, s.announced()), true, wait);
      }
      pace -= cost;
    }
    long reserved = s.reserved() + cost;
    int reached = terms.thresholdReached(s.spent() + reserved);
    int announce = reached > s.announced() ? reached : -1;
    State next = new State(s.spent(), reserved, pace, paceAt, Math.max(s.announced(), reached));
    return new Outcome.Admit(next, cost, limit - s.spent() - reserved, announce);
  }

  /**
   * Settles a reservation of {@code reserved} units that actually spent {@code actual}: the state
   * after, and the threshold first reached by it ({@code announced} moves; compare with the state
   * before).
   */
  public static State reconcile(State s, long reserved, long actual, Terms terms) {
    if (reserved < 0 || actual < 0) {
      throw new IllegalArgumentException("reconcile " + reserved + " / " + actual);
    }
    long spent = saturatedAdd(s.spent(), actual);
    long stillReserved = Math.max(0, s.reserved() - reserved);
    double pace = s.pace();
    if (terms.paced()) {
      pace = Math.min(terms.burst(), pace + (reserved - actual));
    }
    int reached = terms.thresholdReached(saturatedAdd(spent, stillReserved));
    return new State(
        spent, stillReserved, pace, s.paceAtMillis(), Math.max(s.announced(), reached));
  }

  /**
   * Cuts a running reservation by {@code by} units (its request runs a cheaper way): they are no
   * longer reserved and go back to the pace bucket; what was announced stays announced.
   */
  public static State shrink(State s, long by, Terms terms) {
    if (by < 0) {
      throw new IllegalArgumentException("shrink " + by + " (expected: >= 0)");
    }
    long stillReserved = Math.max(0, s.reserved() - by);
    double pace = terms.paced() ? Math.min(terms.burst(), s.pace() + by) : s.pace();
    return new State(s.spent(), stillReserved, pace, s.paceAtMillis(), s.announced());
  }

  /**
   * The pacing rate at {@code now}, in units per millisecond: what is neither spent nor reserved,
   * over the window's pace horizon (what is left of a calendar window; a rolling window's length).
   */
  static double rate(State s, Terms terms, Period.Window window, Instant now) {
    long left = Math.max(0, terms.limit() - s.spent() - s.reserved());
    long millis = Math.max(1, window.paceHorizon(now).toMillis());
    return (double) left / millis;
  }

  private static double filled(State s, Terms terms, Period.Window window, Instant now) {
    if (s.paceAtMillis() == 0 || s.paceAtMillis() < window.start().toEpochMilli()) {
      return terms.burst(); // a new window starts with a full bucket
    }
    long dt = Math.max(0, now.toEpochMilli() - s.paceAtMillis());
    return Math.min(terms.burst(), s.pace() + rate(s, terms, window, now) * dt);
  }

  private static long saturatedAdd(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }
}
