package io.sluice.core.budget;

import java.time.Instant;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Where budgets keep their state, one budget per key: each call applies the {@link Ledger} rule
 * atomically (in this process, or in the shared store across replicas). A calendar period's state
 * starts afresh with each window; a rolling period's spend is the sum of its last slices.
 *
 * <p>Reservations by id: a reserve and a settle that carry a reservation id are deduplicated by the
 * store, so that a call a replica gave up on (it timed out, but may have run) can be sent again, or
 * followed by its settle, without leaking or double-counting units. A reserve of an id already held
 * is a no-op answering the same admission; a settle of an id already settled is a no-op; ids expire
 * with the window they were taken in.
 */
public interface BudgetStore {
  /**
   * A reservation to settle.
   *
   * @param id its id (null: none, the settle is not deduplicated)
   * @param windowId the window it was reserved in
   * @param units the units reserved (with an id, the store settles the units it holds under it)
   * @param answered whether its reserve was answered: then a settle that finds the id no longer
   *     held finds it settled already (a no-op). False: the reserve timed out and may or may not
   *     have run; the settle takes back what the id holds, if anything, counts the spend once and
   *     leaves the id marked settled, so that the reserve, should it run late, holds nothing.
   */
  record Hold(@Nullable String id, String windowId, long units, boolean answered) {}

  /** Reserves {@code cost} units on {@code key} at {@code now} ({@link Ledger#reserve}). */
  default CompletionStage<Ledger.Outcome> reserve(
      String key, Period period, Terms terms, long cost, Instant now) {
    return reserve(key, null, period, terms, cost, now);
  }

  /**
   * As above, under reservation {@code id} (null: none): an id already held answers an admission of
   * the units it holds, taking nothing more; an id already settled answers an admission of 0 units.
   */
  CompletionStage<Ledger.Outcome> reserve(
      String key, @Nullable String id, Period period, Terms terms, long cost, Instant now);

  /**
   * Settles a reservation of {@code reserved} units taken in window {@code windowId} that actually
   * spent {@code actual} ({@link Ledger#reconcile}); when that window is over, the spend counts in
   * the current one (nothing is still reserved there). Answers the threshold first reached by it,
   * or -1.
   */
  default CompletionStage<Integer> settle(
      String key,
      Period period,
      String windowId,
      Terms terms,
      long reserved,
      long actual,
      Instant now) {
    return settle(key, period, terms, new Hold(null, windowId, reserved, true), actual, now);
  }

  /** As above, for {@code hold} (by id: deduplicated, see {@link Hold}). */
  CompletionStage<Integer> settle(
      String key, Period period, Terms terms, Hold hold, long actual, Instant now);

  /**
   * Cuts reservation {@code hold} (by its id) to {@code units}: its request runs a cheaper way (the
   * degrade ladder's rung) and needs less. The id then holds {@code units}, and the budget's
   * reserved units and its pace get the difference back ({@link Ledger#shrink}); its settle later
   * settles what the id holds. Deduplicated by the id: a cut to what the id holds already (or more)
   * takes nothing back, nor does one of an id settled or unknown (no id: nothing), nor one of a
   * calendar window that is over. Answers the units taken back.
   */
  CompletionStage<Long> shrink(
      String key, Period period, Terms terms, Hold hold, long units, Instant now);

  /** The state of {@code key} in the window {@code now} falls in (fresh when none). */
  CompletionStage<Ledger.State> read(String key, Period period, Terms terms, Instant now);
}
