package io.sluice.core.budget;

import io.sluice.core.session.Charge;
import io.sluice.core.session.RequestFacts;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;

/**
 * The budgets' listener: at the end of each request that ran ({@link SessionEvent.Released}: an
 * answer complete, cut or cancelled, an upstream error, an end the front end did not see), settles
 * its reservations with what it was charged; a refused request's are settled with nothing ({@link
 * SessionEvent.Refused}; its hold gives them back too). Each note settles once, whichever path
 * comes first ({@link BudgetNote}).
 */
public final class BudgetSettler implements SessionListener {
  private final BudgetBook book;

  public BudgetSettler(BudgetBook book) {
    this.book = book;
  }

  /** The events it acts on (its {@link #on} ignores every other type). */
  @Override
  public boolean hears(Class<? extends SessionEvent> type) {
    return type == SessionEvent.Released.class || type == SessionEvent.Refused.class;
  }

  @Override
  public void on(SessionEvent event) {
    if (event instanceof SessionEvent.Released e) {
      RequestFacts f = e.facts();
      BudgetNote n = f.note(BudgetNote.class);
      if (n != null) {
        Charge c = f.end().charge();
        book.settle(n, new TokenUse(c.inputTokens(), c.outputTokens(), c.cachedInputTokens()));
      }
    } else if (event instanceof SessionEvent.Refused e) {
      BudgetNote n = e.facts().note(BudgetNote.class);
      if (n != null) {
        book.settle(n, null);
      }
    }
  }
}
