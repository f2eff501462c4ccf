package io.sluice.core.budget;

import static io.sluice.core.budget.DownBudgetStore.admit;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.MutableClock;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/**
 * The write-back kept over a hot reload: what a store outage left owed under one snapshot's book is
 * written by the next snapshot's (the same {@link WriteBack} for the same store), so a reload
 * during an outage loses no spend. The store is in memory, made to fail while "down".
 */
class WriteBackReloadTest {
  private static final Instant T0 = Instant.parse("2026-12-05T10:00:00Z");
  private final MutableClock clock = new MutableClock(T0);
  private final DownBudgetStore store = new DownBudgetStore();

  private static BudgetPolicy policy(long limit) {
    return TestBudgets.dailyPro(limit, BudgetPolicy.Degrade.OFF);
  }

  private BudgetBook book(BudgetPolicy p, WriteBack owed) {
    return store.book(p, clock, BudgetEvents.NONE, owed);
  }

  @Test
  void reloadDuringAnOutage_theNextBookWritesWhatTheFirstOwed() {
    BudgetPolicy before = policy(10_000);
    WriteBack owed = new WriteBack(before.maxEntries(), BudgetEvents.NONE);
    BudgetBook first = book(before, owed);
    BudgetNote held = admit(first); // on the store: 20 reserved
    store.down = true;
    first.settle(held, new TokenUse(10, 30, 0)); // fails: owed by id
    for (int i = 0; i < 3; i++) { // let through (failure mode open), 25 spent each
      first.settle(admit(first), new TokenUse(10, 15, 0));
    }
    assertThat(owed.size()).isEqualTo(4);

    // a hot reload while the store is down (a new limit): the next book gets the same write-back
    BudgetBook next = book(policy(20_000), first.writeBack());
    store.down = false;
    next.settle(admit(next), new TokenUse(10, 0, 0)); // the store answers: what is owed is written
    Ledger.State s =
        next.read(next.policy().budgetsFor("acme", "pro", "chat", "m").get(0))
            .toCompletableFuture()
            .join();
    assertThat(owed.isEmpty()).isTrue();
    assertThat(new long[] {s.spent(), s.reserved()}).containsExactly(40 + 3 * 25 + 10, 0);
  }
}
