package io.sluice.core.budget;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.estimate.FanOut;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.observability.BudgetMetrics;
import io.sluice.store.MutableClock;
import io.sluice.store.memory.InMemoryBudgetStore;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Failure mode local on a fake clock: while the shared store is down, a replica reserves {@code
 * localShare} of what the store last said remains of the budget in the window, not of its limit; a
 * budget the store never answered for, or one whose window rolled over in the outage, falls back to
 * {@code localShare} of the limit; a refusal as spent leaves nothing to share.
 */
class LocalShareTest {
  final MutableClock clock = new MutableClock(Instant.parse("2026-12-05T10:00:00Z"));
  final DownBudgetStore store = new DownBudgetStore();
  final InMemoryBudgetStore localStore = new InMemoryBudgetStore(100);
  final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  final BudgetMetrics metrics = new BudgetMetrics(registry, System::nanoTime);
  final LastRemaining heard = new LastRemaining(100);
  final BudgetPolicy policy = TestBudgets.dailyPro(1000, java.util.List.of(0.8));

  /** A book in failure mode local (10 % share), remembering in {@link #heard}. */
  BudgetBook book() {
    return new BudgetBook(
        policy,
        store,
        localStore,
        0.1,
        "t_",
        BudgetBook.FailureMode.LOCAL,
        ms -> CompletableFuture.completedFuture(null),
        clock,
        metrics,
        new WriteBack(100, metrics),
        heard);
  }

  static BudgetBook.Answer reserve(BudgetBook b, String tenant, long in, long out) {
    TokenEstimate e = new TokenEstimate(in, out, "bytes", null, "m", false, false, FanOut.NONE, -1);
    return b.reserve(tenant, "pro", "chat", e).toCompletableFuture().join();
  }

  /** Requests of 2 + 3 tokens (each spends what it reserved) admitted on the local share. */
  static int admittedLocally(BudgetBook b, String tenant) {
    int admitted = 0;
    for (int i = 0; i < 40; i++) {
      if (reserve(b, tenant, 2, 3) instanceof BudgetBook.Answer.Admit ad) {
        assertThat(ad.note().reserved().get(0).where()).isEqualTo(BudgetNote.Where.LOCAL);
        b.settle(ad.note(), new TokenUse(2, 3, 0));
        admitted++;
      }
    }
    return admitted;
  }

  /** Spends 900 of acme's 1000 on the store: it last said 100 remain (after the last reserve). */
  void spend900(BudgetBook b) {
    for (int i = 0; i < 9; i++) {
      BudgetNote n = ((BudgetBook.Answer.Admit) reserve(b, "acme", 10, 90)).note();
      assertThat(n.reserved().get(0).where()).isEqualTo(BudgetNote.Where.STORE);
      b.settle(n, new TokenUse(10, 90, 0));
    }
  }

  double reserves(String basis) {
    return registry.get("sluice.budget.local.reserves").tag("basis", basis).counter().count();
  }

  @Test
  void storeDownAfterSpend_localAllowance_isAShareOfWhatRemained_keptOverAReload() {
    spend900(book());
    store.down = true;
    clock.advance(Duration.ofMinutes(1));
    // a reload in the outage: the next snapshot's book has what the store last said
    BudgetBook reloaded = book();
    assertThat(admittedLocally(reloaded, "acme")).isEqualTo(2); // 10 % of 100: 10, not 100
    assertThat(reserves("remaining")).isEqualTo(40); // every try on the local share, counted
    assertThat(registry.get("sluice.budget.local.allowance").gauge().value()).isEqualTo(10);
  }

  @Test
  void neverHeardFromTheStore_orANewWindow_fallsBackToAShareOfTheLimit() {
    BudgetBook b = book();
    spend900(b);
    store.down = true;
    assertThat(admittedLocally(b, "beta")).isEqualTo(20); // beta never answered: 10 % of 1000
    assertThat(reserves("limit")).isEqualTo(40);
    assertThat(registry.get("sluice.budget.local.allowance").gauge().value()).isEqualTo(100);
    clock.set(Instant.parse("2026-12-06T00:00:01Z")); // the day rolled over in the outage
    assertThat(admittedLocally(b, "acme")).isEqualTo(20); // a new window: 10 % of 1000 again
  }

  @Test
  void refusedAsSpent_beforeTheOutage_leavesNoLocalAllowance() {
    BudgetBook b = book();
    spend900(b);
    BudgetNote last = ((BudgetBook.Answer.Admit) reserve(b, "acme", 2, 3)).note(); // 95 remain
    b.settle(last, new TokenUse(10, 90, 0)); // it overran: 1000 of 1000 spent
    assertThat(reserve(b, "acme", 2, 3)).isInstanceOf(BudgetBook.Answer.Refuse.class);
    store.down = true;
    assertThat(admittedLocally(b, "acme")).isZero(); // a share of 0 (one unit), not of 95
  }

  @Test
  void aLocalShareSpentPastEightyPercent_announcesNoThresholdOfTheBudget() {
    BudgetBook b = book();
    spend900(b); // the store announced acme's 80 % (900 of 1000 spent)
    double before = crossings();
    store.down = true;
    // beta, never heard: its local share is 100 of 1000; all of it spent is 10 % of the budget
    assertThat(admittedLocally(b, "beta")).isEqualTo(20);
    assertThat(crossings()).isEqualTo(before);
  }

  double crossings() {
    return registry.find("sluice.budget.threshold.crossings").counters().stream()
        .mapToDouble(io.micrometer.core.instrument.Counter::count)
        .sum();
  }
}
