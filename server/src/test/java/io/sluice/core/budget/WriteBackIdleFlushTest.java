package io.sluice.core.budget;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.core.estimate.FanOut;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.observability.BudgetMetrics;
import io.sluice.store.MutableClock;
import io.sluice.store.memory.InMemoryBudgetStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The write-back without traffic: what a store outage left owed is written on an idle timer while
 * anything is owed (one call a tick while the store is still down, everything once it answers; no
 * timer armed while nothing is owed), and at drain; {@code sluice_budget_write_back_owed} counts
 * the reservations owed. A fake clock and a timer fired by hand; the store in memory, made to fail
 * while "down".
 */
class WriteBackIdleFlushTest {
  private static final Instant T0 = Instant.parse("2026-12-05T10:00:00Z");
  private final MutableClock clock = new MutableClock(T0);
  private final InMemoryBudgetStore memory = new InMemoryBudgetStore(100);
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final BudgetMetrics meters = new BudgetMetrics(registry, System::nanoTime);
  private volatile boolean down;
  private int settles; // settle calls the store got

  /** A timer fired by hand: each {@code after} is one pending tick. */
  private final List<CompletableFuture<Void>> ticks = new ArrayList<>();

  private final List<Long> tickMillis = new ArrayList<>();

  private final Delay timer =
      millis -> {
        CompletableFuture<Void> f = new CompletableFuture<>();
        ticks.add(f);
        tickMillis.add(millis);
        return f;
      };

  private final BudgetStore store =
      new BudgetStore() {
        @Override
        public CompletionStage<Ledger.Outcome> reserve(
            String k, @Nullable String id, Period p, Terms t, long c, Instant n) {
          return down ? failed() : memory.reserve(k, id, p, t, c, n);
        }

        @Override
        public CompletionStage<Integer> settle(
            String k, Period p, Terms t, Hold h, long a, Instant n) {
          settles++;
          return down ? failed() : memory.settle(k, p, t, h, a, n);
        }

        @Override
        public CompletionStage<Long> shrink(
            String k, Period p, Terms t, Hold h, long u, Instant n) {
          return down ? failed() : memory.shrink(k, p, t, h, u, n);
        }

        @Override
        public CompletionStage<Ledger.State> read(String k, Period p, Terms t, Instant n) {
          return memory.read(k, p, t, n);
        }
      };

  private static <T> CompletionStage<T> failed() {
    return CompletableFuture.failedFuture(new IllegalStateException("down"));
  }

  private final BudgetPolicy policy = TestBudgets.dailyPro(10_000, BudgetPolicy.Degrade.OFF);
  private final WriteBack owed = new WriteBack(policy.maxEntries(), meters);
  private final BudgetBook book =
      new BudgetBook(
          policy,
          store,
          null,
          0.1,
          "t_",
          BudgetBook.FailureMode.OPEN,
          ms -> CompletableFuture.completedFuture(null),
          clock,
          meters,
          owed);

  /** One request let through while the store is down (failure mode open), {@code spent} spent. */
  private void requestDuringTheOutage(long spent) {
    TokenEstimate e = new TokenEstimate(10, 10, "bytes", null, "m", false, false, FanOut.NONE, -1);
    BudgetNote n =
        ((BudgetBook.Answer.Admit)
                book.reserve("acme", "pro", "chat", e).toCompletableFuture().join())
            .note();
    book.settle(n, new TokenUse(spent, 0, 0));
  }

  private double owedGauge() {
    Gauge g =
        registry
            .find(BudgetMetrics.WRITE_BACK_OWED)
            .tags("budget", "daily", "scope", "tenant", "group", "pro")
            .gauge();
    return g == null ? -1 : g.value();
  }

  private long spent() {
    return book.read(policy.budgetsFor("acme", "pro", "chat", "m").get(0))
        .toCompletableFuture()
        .join()
        .spent();
  }

  /** Fires the one pending tick. */
  private void tick() {
    assertThat(ticks).as("one tick armed").hasSize(1);
    clock.advance(Duration.ofSeconds(1));
    ticks.remove(0).complete(null);
  }

  @Test
  void idleReplica_writesWhatItOwesOnTheTimer_oneCallATickWhileDown_thenAll() {
    owed.flushWhileOwed(store, clock, timer, 1000);
    assertThat(ticks).as("nothing owed: no timer").isEmpty();
    down = true;
    for (int i = 0; i < 3; i++) {
      requestDuringTheOutage(25);
    }
    assertThat(owed.size()).isEqualTo(3);
    assertThat(owedGauge()).isEqualTo(3);
    assertThat(tickMillis).containsExactly(1000L);

    int before = settles;
    tick(); // still down: one write tried, not three; all still owed, the timer armed again
    assertThat(settles - before).isEqualTo(1);
    assertThat(owed.size()).isEqualTo(3);
    assertThat(owedGauge()).isEqualTo(3);

    down = false; // no request comes: the timer writes it all
    tick();
    assertThat(owed.isEmpty()).isTrue();
    assertThat(owedGauge()).isZero();
    assertThat(spent()).isEqualTo(75);
    assertThat(ticks).as("nothing owed: no timer armed").isEmpty();
    assertThat(registry.find(BudgetMetrics.WRITE_BACK).tag("outcome", "written").counter().count())
        .isEqualTo(75);
  }

  @Test
  void drain_writesWhatIsOwedAtOnce_thenNoTimer() {
    owed.flushWhileOwed(store, clock, timer, 1000);
    down = true;
    requestDuringTheOutage(40);
    requestDuringTheOutage(2);
    down = false;
    owed.drain().join();
    assertThat(owed.isEmpty()).isTrue();
    assertThat(owedGauge()).isZero();
    assertThat(spent()).isEqualTo(42);
    ticks.clear();
    down = true;
    requestDuringTheOutage(1); // after the drain: owed, counted, but no timer any more
    assertThat(owedGauge()).isEqualTo(1);
    assertThat(ticks).isEmpty();
  }
}
