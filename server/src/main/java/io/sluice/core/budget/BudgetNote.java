package io.sluice.core.budget;

import io.sluice.core.session.Planner;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * What the budget check reserved for one request, carried in its facts ({@code
 * RequestFacts.note(BudgetNote.class)}): the budgets, the window and units of each reservation,
 * what was left after it, the price it ran at. Its values never change; the mutable parts are the
 * settle-once flag ({@link #claimSettle}), so that whichever end path comes first (the hold given
 * back without a run, or the listener's reconcile after one) settles it, exactly once, and the
 * cut-once flag ({@link #claimShrink}: the request runs a cheaper way), with that run's price.
 */
public final class BudgetNote implements Planner.Trigger {
  /** The trigger's name when the note asks for the degrade rung. */
  public static final String TRIGGER = "budget";

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

  private final String id;
  private final List<Reserved> reserved;
  private final @Nullable Price price;
  private final BudgetPolicy.Degrade degrade;
  private final AtomicBoolean settled = new AtomicBoolean();
  private final AtomicBoolean shrunk = new AtomicBoolean();
  private volatile @Nullable Price ranAt; // the cheaper run's price, when it has one of its own

  /**
   * @param id the request's reservation id, the same on each budget's store key (the store
   *     deduplicates by it: {@link BudgetStore.Hold})
   * @param degrade when the request asks its degrade ladder for a cheaper run ({@link
   *     #degradeTrigger})
   */
  public BudgetNote(
      String id, List<Reserved> reserved, @Nullable Price price, BudgetPolicy.Degrade degrade) {
    this.id = id;
    this.reserved = List.copyOf(reserved);
    this.price = price;
    this.degrade = degrade;
  }

  /**
   * {@value #TRIGGER} when a reservation held (on the store or the local share) left its budget at
   * or past its degrade level ({@code degradeAt}: the budget's own, else the section's) of its
   * limit used: the class's degrade ladder runs the request a cheaper way if a rung starts it now.
   * Else null.
   */
  @Override
  public @Nullable String degradeTrigger() {
    for (Reserved r : reserved) {
      if (r.where() != Where.NONE && degrade.asks(r.applied().budget(), r.used())) {
        return TRIGGER;
      }
    }
    return null;
  }

  @Override
  public @Nullable String degradeRung() {
    return degrade.rung();
  }

  /** The request's reservation id. */
  public String id() {
    return id;
  }

  public List<Reserved> reserved() {
    return reserved;
  }

  /**
   * The price the request ran at (money budgets), or null: its model's at admission, or the cheaper
   * run's when it was cut to one with a price of its own ({@link BudgetBook#shrink}).
   */
  public @Nullable Price price() {
    Price p = ranAt;
    return p != null ? p : price;
  }

  /** The cheaper run's price (set once, by the cut). */
  void ranAt(Price p) {
    ranAt = p;
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

  /** True for the one call that cuts the reservations to a cheaper run; false after. */
  boolean claimShrink() {
    return shrunk.compareAndSet(false, true);
  }

  /** Whether the reservations were cut to a cheaper run. */
  public boolean shrunk() {
    return shrunk.get();
  }

  /** Whether the reservations were settled. */
  public boolean settled() {
    return settled.get();
  }
}
