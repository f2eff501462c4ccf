package io.sluice.core.budget;

import io.sluice.core.estimate.FanOut;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.store.memory.InMemoryBudgetStore;
import java.time.Clock;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * A budget store in memory made to fail while "down": every write (reserve, settle, shrink) fails
 * then, reads still answer; it counts the settles it was asked for. What the write-back tests
 * share, with the book they run (failure mode open, no local store, a delay that answers at once).
 */
final class DownBudgetStore implements BudgetStore {
  private final InMemoryBudgetStore memory = new InMemoryBudgetStore(100);
  volatile boolean down;
  private int settles;

  /** The settle calls the store got, answered or failed. */
  int settles() {
    return settles;
  }

  /** A book over this store that lets a request through while it is down and owes its writes. */
  BudgetBook book(BudgetPolicy policy, Clock clock, BudgetEvents events, WriteBack owed) {
    return new BudgetBook(
        policy,
        this,
        null,
        0.1,
        "t_",
        BudgetBook.FailureMode.OPEN,
        ms -> CompletableFuture.completedFuture(null),
        clock,
        events,
        owed,
        new LastRemaining(100));
  }

  /** A chat request of acme (tier pro, model m, 10 + 10 tokens) admitted by {@code book}. */
  static BudgetNote admit(BudgetBook book) {
    TokenEstimate e = new TokenEstimate(10, 10, "bytes", null, "m", false, false, FanOut.NONE, -1);
    return ((BudgetBook.Answer.Admit)
            book.reserve("acme", "pro", "chat", e).toCompletableFuture().join())
        .note();
  }

  @Override
  public CompletionStage<Ledger.Outcome> reserve(
      String k, @Nullable String id, Period p, Terms t, long c, Instant n) {
    return down ? failed() : memory.reserve(k, id, p, t, c, n);
  }

  @Override
  public CompletionStage<Integer> settle(String k, Period p, Terms t, Hold h, long a, Instant n) {
    settles++;
    return down ? failed() : memory.settle(k, p, t, h, a, n);
  }

  @Override
  public CompletionStage<Long> shrink(String k, Period p, Terms t, Hold h, long u, Instant n) {
    return down ? failed() : memory.shrink(k, p, t, h, u, n);
  }

  @Override
  public CompletionStage<Ledger.State> read(String k, Period p, Terms t, Instant n) {
    return memory.read(k, p, t, n);
  }

  private static <T> CompletionStage<T> failed() {
    return CompletableFuture.failedFuture(new IllegalStateException("down"));
  }
}
