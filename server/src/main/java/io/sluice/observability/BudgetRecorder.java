package io.sluice.observability;

import io.sluice.api.v1.AdmissionRecord;
import io.sluice.api.v1.BudgetCharge;
import io.sluice.api.v1.BudgetRefusal;
import io.sluice.core.budget.BudgetCheck;
import io.sluice.core.budget.BudgetNote;
import io.sluice.core.budget.TokenUse;
import io.sluice.core.session.Charge;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;
import java.util.Locale;

/**
 * The budgets' meters listener and decision-record part, registered by their feature beside the
 * check ({@link BudgetCheck}): counts reservations, the requests told they are past a soft
 * threshold and the refusals (from the {@link SessionEvent.Noted} the check emits), and writes each
 * budget's reservation and charge into the decision record, and a refused request's budget.
 * Thread-safe, as its meters are.
 */
public final class BudgetRecorder implements SessionListener, DecisionRecordPart {
  private final BudgetMetrics meters;

  public BudgetRecorder(BudgetMetrics meters) {
    this.meters = meters;
  }

  /** The events it acts on (its {@link #on} ignores every other type). */
  @Override
  public boolean hears(Class<? extends SessionEvent> type) {
    return type == SessionEvent.Noted.class;
  }

  /** The notes it acts on: its check's reservations and refusals. */
  @Override
  public boolean hearsNote(Class<?> noteType) {
    return BudgetNote.class.isAssignableFrom(noteType)
        || BudgetCheck.Refused.class.isAssignableFrom(noteType);
  }

  @Override
  public void on(SessionEvent event) {
    if (event instanceof SessionEvent.Noted e) {
      if (e.note() instanceof BudgetNote n) {
        for (BudgetNote.Reserved r : n.reserved()) {
          meters.reserved(r.applied(), r.units());
        }
        BudgetNote.Reserved d = n.disclosed();
        if (d != null) {
          meters.disclosed(d.applied());
        }
      } else if (e.note() instanceof BudgetCheck.Refused r) {
        meters.refused(r.budget(), r.reason().code());
      }
    }
  }

  @Override
  public void write(RequestFacts f, AdmissionRecord.Builder b) {
    BudgetCheck.Refused refused = f.note(BudgetCheck.Refused.class);
    if (refused != null) {
      refusedBy(refused, b);
    }
    BudgetNote n = f.note(BudgetNote.class);
    if (n == null) {
      return;
    }
    Charge c = f.end().charge();
    boolean ended = !c.rule().equals(Charge.NONE.rule());
    TokenUse use = new TokenUse(c.inputTokens(), c.outputTokens(), c.cachedInputTokens());
    for (BudgetNote.Reserved r : n.reserved()) {
      BudgetCharge.Builder bc =
          BudgetCharge.newBuilder()
              .setName(r.applied().budget().name())
              .setScope(r.applied().scope().label())
              .setGroup(r.applied().group())
              .setMeter(r.applied().budget().meter().label())
              .setWindow(r.windowId())
              .setReserved(r.units())
              .setRemaining(Math.max(0, r.remaining()))
              .setHeld(r.where().name().toLowerCase(Locale.ROOT));
      if (ended) {
        bc.setCharged(Math.max(0, r.applied().budget().meter().units(use, n.price())));
      }
      b.addBudgets(bc);
    }
  }

  /** The budget that refused the request, as its client was told ({@link BudgetCheck.Refused}). */
  private static void refusedBy(BudgetCheck.Refused r, AdmissionRecord.Builder b) {
    String periodEnd = r.periodEnd();
    b.setBudgetRefusal(
        BudgetRefusal.newBuilder()
            .setName(r.budget().budget().name())
            .setScope(r.budget().scope().label())
            .setGroup(r.budget().group())
            .setMeter(r.budget().budget().meter().label())
            .setPeriodEnd(periodEnd == null ? "" : periodEnd));
  }
}
