package io.sluice.core.budget;

import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.TokenEstimate;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * A snapshot's budgets at work: reserves a request's estimate on each budget that applies to it (in
 * order, all or none), waits while the pace or running requests' reservations leave no room (up to
 * {@code budgets.maxWait}), refuses when what was spent leaves none, and settles the reservations
 * once the request ends ({@link #settle}). The store applies the {@link Ledger} rule; this class
 * sequences it. Thread-safe (no state of its own but the store's, the write-back's and what the
 * store last said remains, {@link LastRemaining}).
 */
public final class BudgetBook {
  /** How a store outage is answered. */
  public enum FailureMode {
    /** Let the request through, nothing reserved. */
    OPEN,
    /** Refuse it ({@code budget_paced}, 429). */
    CLOSED,
    /**
     * Reserve on this process's local share ({@code budgets.localShare}) of what the store last
     * said remains of the budget in this window ({@link LastRemaining}; else of its limit).
     */
    LOCAL
  }

  /** What the book answers a request. */
  public sealed interface Answer permits Answer.Admit, Answer.Refuse {
    /** Reserved (or nothing applied: {@link #note} empty). */
    record Admit(BudgetNote note) implements Answer {}

    /** Refused: nothing is held. */
    record Refuse(
        BudgetPolicy.Applied budget,
        Reason reason,
        int status,
        long retryAfterSeconds,
        @Nullable Instant renews,
        String message)
        implements Answer {}
  }

  private static final long FIRST_POLL_MILLIS = 25;
  private static final long MAX_POLL_MILLIS = 500;

  private final BudgetPolicy policy;
  private final BudgetStore store;
  private final @Nullable BudgetStore local;
  private final double localShare;
  private final String prefix;
  private final FailureMode failureMode;
  private final Delay delay;
  private final Clock clock;
  private final BudgetEvents events;
  private final WriteBack writeBack;
  private final LastRemaining lastRemaining;
  private final String idPrefix =
      Long.toString(new java.util.SplittableRandom().nextLong() & Long.MAX_VALUE, 36) + '.';
  private final java.util.concurrent.atomic.AtomicLong ids =
      new java.util.concurrent.atomic.AtomicLong();

  /**
   * @param local the local share's store (failure mode {@code local}; null otherwise)
   * @param localShare the share of each limit the local store allows
   * @param writeBack owes what the store did not hear: a new one, or the previous snapshot's for
   *     the same store, so that a hot reload during an outage keeps what is owed
   * @param lastRemaining what the store last said remains of each budget: a new one, or the
   *     previous snapshot's for the same store, so that a reload during an outage keeps the local
   *     allowance
   */
  public BudgetBook(
      BudgetPolicy policy,
      BudgetStore store,
      @Nullable BudgetStore local,
      double localShare,
      String prefix,
      FailureMode failureMode,
      Delay delay,
      Clock clock,
      BudgetEvents events,
      WriteBack writeBack,
      LastRemaining lastRemaining) {
    this.policy = policy;
    this.store = store;
    this.local = local;
    this.localShare = localShare;
    this.prefix = prefix;
    this.failureMode =
        local == null && failureMode == FailureMode.LOCAL ? FailureMode.OPEN : failureMode;
    this.delay = delay;
    this.clock = clock;
    this.events = events;
    this.writeBack = writeBack;
    this.lastRemaining = lastRemaining;
    writeBack.resize(policy.maxEntries());
    lastRemaining.resize(policy.maxEntries());
  }

  public BudgetPolicy policy() {
    return policy;
  }

  /** What this book owes the store (handed on to the next snapshot's book on a reload). */
  public WriteBack writeBack() {
    return writeBack;
  }

  /** Whether budgets may apply to a request of {@code tenant} ({@code tier}) on {@code route}. */
  public boolean applies(String tenant, String tier, String route) {
    return policy.enabled() && policy.applies(tenant, tier, route);
  }

  /**
   * Reserves the request's estimate (input, and the learned output reserve) on each budget that
   * applies to it.
   */
  public CompletionStage<Answer> reserve(
      String tenant, String tier, String route, TokenEstimate e) {
    return reserve(tenant, tier, route, e, () -> {});
  }

  /**
   * As above; {@code waits} is run once, the first time the request is made to wait (for the pace
   * or for running requests to settle), before it waits: the front end holds the request meanwhile.
   */
  public CompletionStage<Answer> reserve(
      String tenant, String tier, String route, TokenEstimate e, Runnable waits) {
    List<BudgetPolicy.Applied> budgets = policy.budgetsFor(tenant, tier, route, e.model());
    if (budgets.isEmpty()) {
      return CompletableFuture.completedFuture(
          new Answer.Admit(new BudgetNote("", List.of(), null, BudgetPolicy.Degrade.OFF)));
    }
    Instant now = clock.instant();
    Price price = null;
    for (BudgetPolicy.Applied a : budgets) {
      if (a.budget().meter().priced()) {
        price = policy.prices().at(e.model(), now);
        if (price == null) {
          return CompletableFuture.completedFuture(
              new Answer.Refuse(
                  a,
                  Reason.BUDGET_UNPRICED,
                  422,
                  0,
                  null,
                  "model "
                      + (e.model() == null ? "(none)" : "'" + e.model() + "'")
                      + " has no price: budget '"
                      + a.budget().name()
                      + "' counts money (budgets.prices.unknownModel: refuse)"));
        }
        break;
      }
    }
    TokenUse estimate = new TokenUse(e.inputTokens(), e.outputReserveTokens(), 0);
    Run run = new Run(nextId(), budgets, estimate, price, now.plus(policy.maxWait()), waits);
    run.next(0);
    return run.done;
  }

  /**
   * Settles the note's reservations, once (the first call does; {@code actual} null: the request
   * did not run, nothing spent).
   */
  public void settle(BudgetNote note, @Nullable TokenUse actual) {
    if (!note.claimSettle()) {
      return;
    }
    Instant now = clock.instant();
    for (BudgetNote.Reserved r : note.reserved()) {
      Budget b = r.applied().budget();
      long spent = actual == null ? 0 : Math.max(0, b.meter().units(actual, note.price()));
      String key = r.applied().key(prefix);
      if (r.where() != BudgetNote.Where.STORE) { // the shared store is told once it answers
        // its reserve there timed out: it may have run, so its id is settled, its fate unknown
        writeBack.owe(
            key, r.applied(), new BudgetStore.Hold(note.id(), r.windowId(), 0, false), spent);
      }
      BudgetStore s = r.where() == BudgetNote.Where.STORE ? store : local;
      if (r.where() == BudgetNote.Where.NONE || s == null) {
        continue;
      }
      Terms terms =
          r.where() == BudgetNote.Where.LOCAL ? localTerms(r.applied(), r.windowId()) : b.terms();
      events.settled(r.applied(), r.units(), spent);
      BudgetStore.Hold hold = new BudgetStore.Hold(note.id(), r.windowId(), r.units(), true);
      var unused =
          s.settle(key, b.period(), terms, hold, spent, now)
              .whenComplete(
                  (announce, err) -> {
                    if (err != null) {
                      events.storeFailed(r.applied(), true);
                      if (s == store) {
                        writeBack.owe(key, r.applied(), hold, spent); // again, by its id
                      }
                    } else {
                      if (s == store) {
                        var unusedFlush = writeBack.flush(store, clock.instant());
                      }
                      if (s == store && announce != null && announce >= 0) { // not a local share's
                        events.crossed(r.applied(), b.terms().thresholds().get(announce));
                      }
                    }
                  });
    }
  }

  /**
   * The request runs a cheaper way than it reserved for ({@code cheaper}: its degrade ladder's
   * rung, a smaller output cap or a cheaper model): each reservation is cut to that run's size now,
   * once, by its id through the store that holds it (the store takes back only what the id still
   * holds above it; a reservation never grows). A money budget counts the cheaper run at its
   * model's price when that model has one (else at the price it reserved at), and settles at it
   * too. A cut the store does not answer leaves the reservation as it was, until its settle.
   */
  public void shrink(BudgetNote note, TokenEstimate cheaper) {
    if (note.settled() || !note.claimShrink()) {
      return;
    }
    Instant now = clock.instant();
    Price price = note.price();
    if (price != null && cheaper.model() != null) {
      Price p = policy.prices().at(cheaper.model(), now);
      if (p != null && !p.equals(price)) {
        note.ranAt(p);
        price = p;
      }
    }
    TokenUse use = new TokenUse(cheaper.inputTokens(), cheaper.outputReserveTokens(), 0);
    for (BudgetNote.Reserved r : note.reserved()) {
      @Nullable BudgetStore s =
          switch (r.where()) {
            case STORE -> store;
            case LOCAL -> local;
            case NONE -> null;
          };
      Budget b = r.applied().budget();
      long units = Math.max(0, b.meter().units(use, price));
      if (s == null || units >= r.units()) {
        continue;
      }
      Terms terms =
          r.where() == BudgetNote.Where.LOCAL ? localTerms(r.applied(), r.windowId()) : b.terms();
      BudgetStore.Hold hold = new BudgetStore.Hold(note.id(), r.windowId(), r.units(), true);
      var unused =
          s.shrink(r.applied().key(prefix), b.period(), terms, hold, units, now)
              .whenComplete(
                  (by, err) -> {
                    if (err == null && by != null && by > 0) {
                      events.shrunk(r.applied(), by);
                    }
                  });
    }
  }

  /** A budget's state now (admin). */
  public CompletionStage<Ledger.State> read(BudgetPolicy.Applied a) {
    Budget b = a.budget();
    return store.read(a.key(prefix), b.period(), b.terms(), clock.instant());
  }

  /** The terms of {@code a}'s local share in window {@code windowId} ({@link LastRemaining}). */
  private Terms localTerms(BudgetPolicy.Applied a, String windowId) {
    return lastRemaining.localTerms(a.key(prefix), windowId, a.budget().terms(), localShare);
  }

  /** A reservation id no other request of any replica has: this book's random part, a count. */
  private String nextId() {
    return idPrefix + Long.toString(ids.incrementAndGet(), 36);
  }

  /** One request's reservations, budget after budget. */
  private final class Run {
    final String id;
    final List<BudgetPolicy.Applied> budgets;
    final TokenUse estimate;
    final @Nullable Price price;
    final Instant waitUntil;
    final List<BudgetNote.Reserved> taken = new ArrayList<>(2);
    // budgets whose store reserve failed (it may have run there), by the window it was sent in
    final java.util.Map<BudgetPolicy.Applied, String> unsure = new java.util.LinkedHashMap<>(2);
    final CompletableFuture<Answer> done = new CompletableFuture<>();
    long poll = FIRST_POLL_MILLIS;
    @Nullable Runnable waits; // told once, at the first wait

    Run(
        String id,
        List<BudgetPolicy.Applied> budgets,
        TokenUse estimate,
        @Nullable Price price,
        Instant until,
        Runnable waits) {
      this.id = id;
      this.budgets = budgets;
      this.estimate = estimate;
      this.price = price;
      this.waitUntil = until;
      this.waits = waits;
    }

    void next(int i) {
      if (i == budgets.size()) {
        done.complete(new Answer.Admit(new BudgetNote(id, taken, price, policy.degrade())));
        return;
      }
      BudgetPolicy.Applied a = budgets.get(i);
      Budget b = a.budget();
      long cost = Math.max(0, b.meter().units(estimate, price));
      Instant now = clock.instant();
      store
          .reserve(a.key(prefix), id, b.period(), b.terms(), cost, now)
          .whenComplete(
              (o, err) -> {
                try {
                  if (err != null || o == null) {
                    storeFailed(i, a, cost, now);
                  } else {
                    var unusedFlush = writeBack.flush(store, clock.instant());
                    lastRemaining.heard(a.key(prefix), b.period().at(now).id(), o);
                    answered(i, a, o, BudgetNote.Where.STORE, now);
                  }
                } catch (RuntimeException x) {
                  giveBack();
                  done.completeExceptionally(x);
                }
              });
    }

    private void storeFailed(int i, BudgetPolicy.Applied a, long cost, Instant now) {
      Budget b = a.budget();
      unsure.put(a, b.period().at(now).id()); // the reserve may have run in the store all the same
      switch (failureMode) {
        case OPEN -> {
          events.storeFailed(a, true);
          taken.add(
              new BudgetNote.Reserved(
                  a,
                  b.period().at(now).id(),
                  b.period().at(now).end(),
                  0,
                  -1,
                  -1,
                  BudgetNote.Where.NONE));
          next(i + 1);
        }
        case CLOSED -> {
          events.storeFailed(a, false);
          refuse(
              new Answer.Refuse(
                  a,
                  Reason.BUDGET_PACED,
                  429,
                  1,
                  null,
                  "budget store unavailable (budgets.failureMode: closed)"));
        }
        case LOCAL -> {
          events.storeFailed(a, true);
          BudgetStore l = java.util.Objects.requireNonNull(local, "local");
          String w = b.period().at(now).id();
          Terms terms = localTerms(a, w);
          events.localAllowance(a, terms.limit(), lastRemaining.knows(a.key(prefix), w));
          l.reserve(a.key(prefix), id, b.period(), terms, cost, now)
              .whenComplete(
                  (o, err) -> {
                    if (err != null || o == null) {
                      refuse(
                          new Answer.Refuse(
                              a, Reason.BUDGET_PACED, 429, 1, null, "budget store unavailable"));
                    } else {
                      answered(i, a, o, BudgetNote.Where.LOCAL, now);
                    }
                  });
        }
      }
    }

    private void answered(
        int i, BudgetPolicy.Applied a, Ledger.Outcome o, BudgetNote.Where where, Instant now) {
      Budget b = a.budget();
      if (o instanceof Ledger.Outcome.Admit ad) {
        Period.Window w = b.period().at(now);
        taken.add(
            new BudgetNote.Reserved(
                a, w.id(), w.end(), ad.cost(), ad.remaining(), ad.announce(), where));
        if (ad.announce() >= 0 && where == BudgetNote.Where.STORE) { // a local share's own
          events.crossed(a, b.terms().thresholds().get(ad.announce())); // limit is not the budget's
        }
        poll = FIRST_POLL_MILLIS;
        next(i + 1);
      } else if (o instanceof Ledger.Outcome.Exhausted ex) {
        long secs = Math.max(1, (ex.renews().toEpochMilli() - now.toEpochMilli() + 999) / 1000);
        int status = policy.refusalStatus();
        refuse(
            new Answer.Refuse(
                a,
                Reason.BUDGET_EXHAUSTED,
                status,
                secs,
                ex.renews(),
                "budget '"
                    + b.name()
                    + "' ("
                    + a.scope().label()
                    + ") is spent for this period; it renews at "
                    + b.period().stamp(ex.renews())));
      } else if (o instanceof Ledger.Outcome.Wait wt) {
        long wait = wt.pacing() ? Math.max(1, wt.waitMillis()) : poll;
        if (now.plusMillis(wait).isAfter(waitUntil)) {
          long secs = Math.max(1, (Math.max(wait, poll) + 999) / 1000);
          refuse(
              new Answer.Refuse(
                  a,
                  Reason.BUDGET_PACED,
                  429,
                  secs,
                  null,
                  wt.pacing()
                      ? "budget '" + b.name() + "' is paced: its rate has no room now"
                      : "budget '" + b.name() + "' is held by running requests"));
          return;
        }
        events.waited(a, wt.pacing(), wait);
        Runnable w = waits;
        if (w != null) {
          waits = null;
          w.run();
        }
        if (!wt.pacing()) {
          poll = Math.min(MAX_POLL_MILLIS, poll * 2);
        }
        delay.after(wait).whenComplete((v, err) -> next(i));
      }
    }

    private void refuse(Answer.Refuse r) {
      giveBack();
      done.complete(r);
    }

    private void giveBack() {
      if (!taken.isEmpty()) {
        settle(new BudgetNote(id, taken, price, policy.degrade()), null);
      }
      // a reserve that timed out and is not among those taken (they are settled by id above)
      for (BudgetNote.Reserved r : taken) {
        unsure.remove(r.applied());
      }
      unsure.forEach(
          (a, w) -> writeBack.owe(a.key(prefix), a, new BudgetStore.Hold(id, w, 0, false), 0));
      unsure.clear();
    }
  }
}
