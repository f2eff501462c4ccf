package io.sluice.core.budget;

import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * What the budget check reserved for one request, carried in its facts ({@code
 * RequestFacts.note(BudgetNote.class)}): the budgets, the window and units of each reservation,
 * what was left after it, the price it ran at. Its values never change; the one mutable part is the
 * settle-once flag ({@link #claimSettle}), so that whichever end path comes first (the hold given
 * back without a run, or the listener's reconcile after one) settles it, exactly once.
 */
public final class BudgetNote {
  /**
   * One budget's reservation.
   *
   * @param applied the budget and whose it is
   * @param windowId the window it was reserved in
   * @param windowEnd when that window ends (the budget renews)
   * @param units the units reserved
   * @param remaining what was left of the limit after it (spent and reserved taken out)
   * @param announce the threshold index this reservation first reached, or -1
   * @param where where it is held: the store, this process's local share (the store did not answer,
   *     failure mode {@code local}), or nowhere (failure mode {@code open}: nothing to settle)
   */
  public record Reserved(
      BudgetPolicy.Applied applied,
      String windowId,
      Instant windowEnd,
      long units,
      long remaining,
      int announce,
      Where where) {

    /** The fraction of the limit used after this reservation. */
    public double used() {
      long limit = applied.budget().terms().limit();
      return 1.0 - (double) Math.max(0, remaining) / limit;
    }

    /** Whether this budget is below its first soft threshold's remaining share. */
    public boolean belowThreshold() {
      List<Double> t = applied.budget().terms().thresholds();
      return !t.isEmpty() && used() >= t.get(0);
    }
  }

  /** Where a reservation is held. */
  public enum Where {
    STORE,
    LOCAL,
    NONE
  }

  private final List<Reserved> reserved;
  private final @Nullable Price price;
  private final AtomicBoolean settled = new AtomicBoolean();

  public BudgetNote(List<Reserved> reserved, @Nullable Price price) {
    this.reserved = List.copyOf(reserved);
    this.price = price;
  }

  public List<Reserved> reserved() {
    return reserved;
  }

  /** The price the request ran at (money budgets), or null. */
  public @Nullable Price price() {
    return price;
  }

  /**
   * The budget to disclose to the client: of those past their first soft threshold, the one with
   * the least left (by share of its limit); null when none is.
   */
  public @Nullable Reserved disclosed() {
    Reserved worst = null;
    for (Reserved r : reserved) {
      if (r.belowThreshold() && (worst == null || r.used() > worst.used())) {
        worst = r;
      }
    }
    return worst;
  }

  /** True for the one call that settles the reservations; false once settled. */
  boolean claimSettle() {
    return settled.compareAndSet(false, true);
  }

  /** Whether the reservations were settled. */
  public boolean settled() {
    return settled.get();
  }
}
