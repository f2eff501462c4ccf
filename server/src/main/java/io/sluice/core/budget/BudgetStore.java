package io.sluice.core.budget;

import java.time.Instant;
import java.util.concurrent.CompletionStage;

/**
 * Where budgets keep their state, one budget per key: each call applies the {@link Ledger} rule
 * atomically (in this process, or in the shared store across replicas). A calendar period's state
 * starts afresh with each window; a rolling period's spend is the sum of its last slices.
 */
public interface BudgetStore {
  /** Reserves {@code cost} units on {@code key} at {@code now} ({@link Ledger#reserve}). */
  CompletionStage<Ledger.Outcome> reserve(
      String key, Period period, Terms terms, long cost, Instant now);

  /**
   * Settles a reservation of {@code reserved} units taken in window {@code windowId} that actually
   * spent {@code actual} ({@link Ledger#reconcile}); when that window is over, the spend counts in
   * the current one (nothing is still reserved there). Answers the threshold first reached by it,
   * or -1.
   */
  CompletionStage<Integer> settle(
      String key,
      Period period,
      String windowId,
      Terms terms,
      long reserved,
      long actual,
      Instant now);

  /** The state of {@code key} in the window {@code now} falls in (fresh when none). */
  CompletionStage<Ledger.State> read(String key, Period period, Terms terms, Instant now);
}
