package io.sluice.core.budget;

import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.CheckChain;
import io.sluice.core.session.RefusalDetail;
import io.sluice.core.session.SessionEvent;
import io.sluice.core.session.SessionListener;
import io.sluice.core.session.Subject;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Budgets over billing periods, with the estimate, after the tenant's token reservation: reserves
 * the request's input and its learned output reserve on every budget that applies ({@link
 * BudgetBook}), and refuses {@code budget_exhausted} (non-retryable) when a budget is spent. What
 * it reserved is its hold's note ({@link BudgetNote}); a request that never ran gives it back here,
 * one that ran is reconciled with its charge by {@link BudgetSettler}, whichever first, once; one
 * the degrade ladder runs a cheaper way has its reservations cut to that run's size at once.
 */
public final class BudgetCheck implements AdmissionCheck<BudgetBook.Answer> {
  /** Its place: after the tenant's tokens per minute, before the tenant's slot. */
  public static final int ORDER = CheckChain.TOKEN_RESERVATION + 50;

  /** The disclosure headers of a request past a soft threshold. */
  public static final String REMAINING_HEADER = "x-sluice-budget-remaining";

  public static final String NAME_HEADER = "x-sluice-budget";
  public static final String RESET_HEADER = "x-sluice-budget-reset";
  public static final String USED_HEADER = "x-sluice-budget-used";

  private final BudgetBook book;
  private final SessionListener listener;

  public BudgetCheck(BudgetBook book, SessionListener listener) {
    this.book = book;
    this.listener = listener;
  }

  /** The check of a snapshot with {@code book}; left out of the chain when budgets are off. */
  public static AdmissionCheck.Factory factory(BudgetBook book) {
    return snapshot ->
        book.policy().enabled() && book.policy().any()
            ? new BudgetCheck(book, snapshot.listener())
            : null;
  }

  @Override
  public Stage stage() {
    return Stage.ESTIMATE;
  }

  @Override
  public boolean applies(Request r) {
    Subject s = r.subject();
    return book.applies(s.tenant().id(), s.tenant().tier().name(), s.route());
  }

  @Override
  public CompletionStage<BudgetBook.Answer> ask(Request r) {
    Subject s = r.subject();
    TokenEstimate e = Objects.requireNonNull(r.estimate(), "estimate before the budgets");
    return book.reserve(s.tenant().id(), s.tenant().tier().name(), s.route(), e, r::waiting);
  }

  @Override
  public Verdict answered(BudgetBook.Answer a, Request r) {
    if (a instanceof BudgetBook.Answer.Refuse f) {
      Refused why = new Refused(f.budget(), f.reason(), f.renews());
      listener.on(new SessionEvent.Noted(r.subject(), why));
      // Retry-After only where the operator answers 429: a 402/422 is not to be retried
      long retryAfter = f.status() == 429 ? f.retryAfterSeconds() : 0;
      return new Refusing(new Refusal(f.reason(), f.status(), retryAfter, f.message()), why);
    }
    BudgetNote note = ((BudgetBook.Answer.Admit) a).note();
    if (note.reserved().isEmpty()) {
      return Continue.INSTANCE;
    }
    listener.on(new SessionEvent.Noted(r.subject(), note));
    return new Hold(book, note);
  }

  /**
   * The refusal a budget answered, noted for its meters, and told the client ({@link
   * RefusalDetail}): {@value #NAME_HEADER} and the JSON error's {@code budget} name the budget; a
   * spent one's period end ({@code renews}: {@code period_end}, {@value #RESET_HEADER}) is RFC 3339
   * with its zone's offset ({@link Period#stamp}).
   *
   * @param renews when the spent budget's window ends, or null (paced, unpriced, store down)
   */
  public record Refused(BudgetPolicy.Applied budget, Reason reason, @Nullable Instant renews)
      implements RefusalDetail {
    @Override
    public Map<String, String> headers() {
      return two(NAME_HEADER, RESET_HEADER);
    }

    @Override
    public Map<String, String> fields() {
      return two(BUDGET_FIELD, PERIOD_END_FIELD);
    }

    /** The spent budget's period end as the client is told it ({@link Period#stamp}), or null. */
    public @Nullable String periodEnd() {
      return renews == null ? null : budget.budget().period().stamp(renews);
    }

    /** The budget's name under {@code name}, then its period's end under {@code end} if spent. */
    private Map<String, String> two(String name, String end) {
      Map<String, String> m = new LinkedHashMap<>(4);
      m.put(name, budget.budget().name());
      String periodEnd = periodEnd();
      if (periodEnd != null) {
        m.put(end, periodEnd);
      }
      return m;
    }
  }

  /** The JSON error's fields of a budget refusal: the budget's name, its period's end. */
  public static final String BUDGET_FIELD = "budget";

  public static final String PERIOD_END_FIELD = "period_end";

  /** A refusal that holds nothing and notes what the client is told ({@link Refused}). */
  private static final class Refusing extends Held {
    private final Refusal refusal;
    private final Refused why;

    Refusing(Refusal refusal, Refused why) {
      this.refusal = refusal;
      this.why = why;
    }

    @Override
    public Refusal refusal() {
      return refusal;
    }

    @Override
    public Refused note() {
      return why;
    }

    @Override
    protected void release(Release how) {} // nothing held
  }

  /** One request's reservations. */
  static final class Hold extends Held {
    private final BudgetBook book;
    private final BudgetNote note;

    Hold(BudgetBook book, BudgetNote note) {
      this.book = book;
      this.note = note;
    }

    @Override
    public BudgetNote note() {
      return note;
    }

    @Override
    protected boolean keptByPass(boolean wouldReject) {
      return true; // a shadow pass runs: what it spends is spent
    }

    @Override
    protected void runsAs(TokenEstimate cheaper) {
      book.shrink(note, cheaper); // a degrade rung: the reservations cut to its size, once
    }

    @Override
    protected void release(Release how) {
      if (how != Release.ENDED) { // never ran: nothing spent
        book.settle(note, null);
      } // ran: the settler reconciles it with its charge
    }

    @Override
    public @Nullable Map<String, String> disclose() {
      BudgetNote.Reserved r = note.disclosed();
      if (r == null) {
        return null;
      }
      Map<String, String> h = new LinkedHashMap<>(8);
      h.put(NAME_HEADER, r.applied().budget().name());
      h.put(REMAINING_HEADER, Long.toString(Math.max(0, r.remaining())));
      h.put(USED_HEADER, String.format(Locale.ROOT, "%.3f", r.used()));
      h.put(RESET_HEADER, r.applied().budget().period().stamp(r.windowEnd()));
      return h;
    }
  }

  /** The reservation a request's facts carry, or null. */
  public static @Nullable BudgetNote note(io.sluice.core.session.RequestFacts f) {
    return f.note(BudgetNote.class);
  }
}
