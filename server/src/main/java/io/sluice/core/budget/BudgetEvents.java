package io.sluice.core.budget;

/**
 * What the budgets tell their meters ({@code observability}), beside the session's events:
 * thread-safe, never blocking, called on the store's thread. Every label is bounded: a budget's
 * name, scope and group (a tier, a route, a model group), never a tenant id.
 */
public interface BudgetEvents {
  /** A reservation settled: {@code reserved} units taken back, {@code actual} spent. */
  void settled(BudgetPolicy.Applied a, long reserved, long actual);

  /**
   * A running reservation was cut to its request's cheaper run (a degrade rung): {@code units}
   * given back.
   */
  void shrunk(BudgetPolicy.Applied a, long units);

  /** A soft threshold was first reached in the window (once per window). */
  void crossed(BudgetPolicy.Applied a, double threshold);

  /** The request waited for the budget ({@code pacing}: for the pace, else for reservations). */
  void waited(BudgetPolicy.Applied a, boolean pacing, long millis);

  /** The store did not answer; {@code allowed}: what the failure mode did. */
  void storeFailed(BudgetPolicy.Applied a, boolean allowed);

  /**
   * Spend counted while the shared store did not answer: {@code written} true, {@code units}
   * written to it once it answered again; false, dropped (too many budgets owed).
   */
  void writeBack(BudgetPolicy.Applied a, long units, boolean written);

  /**
   * The reservations the write-back owes the shared store changed by {@code delta} (+1: one more
   * owed; -1: one written).
   */
  void owed(BudgetPolicy.Applied a, int delta);

  /**
   * A reservation went to the local share (failure mode {@code local}): {@code units}, the most
   * this replica may reserve on {@code a} in the window while the store does not answer; {@code
   * ofRemaining} true when that is a share of what the store last said remains, false a share of
   * the limit (the store never answered for it in this window).
   */
  void localAllowance(BudgetPolicy.Applied a, long units, boolean ofRemaining);

  /** Hears nothing. */
  BudgetEvents NONE = new Ignoring();

  /** Ignores every event: the base of a listener that hears only some of them. */
  class Ignoring implements BudgetEvents {
    @Override
    public void settled(BudgetPolicy.Applied a, long reserved, long actual) {}

    @Override
    public void crossed(BudgetPolicy.Applied a, double threshold) {}

    @Override
    public void waited(BudgetPolicy.Applied a, boolean pacing, long millis) {}

    @Override
    public void storeFailed(BudgetPolicy.Applied a, boolean allowed) {}

    @Override
    public void writeBack(BudgetPolicy.Applied a, long units, boolean written) {}

    @Override
    public void shrunk(BudgetPolicy.Applied a, long units) {}

    @Override
    public void owed(BudgetPolicy.Applied a, int delta) {}

    @Override
    public void localAllowance(BudgetPolicy.Applied a, long units, boolean ofRemaining) {}
  }
}
