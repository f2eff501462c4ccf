package io.sluice.core.budget;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.observability.BudgetMetrics;
import io.sluice.store.MutableClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
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
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final BudgetMetrics meters = new BudgetMetrics(registry, System::nanoTime);

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

  private final DownBudgetStore store = new DownBudgetStore();

  private final BudgetPolicy policy = TestBudgets.dailyPro(10_000, BudgetPolicy.Degrade.OFF);
  private final WriteBack owed = new WriteBack(policy.maxEntries(), meters);
  private final BudgetBook book = store.book(policy, clock, meters, owed);

  /** One request let through while the store is down (failure mode open), {@code spent} spent. */
  private void requestDuringTheOutage(long spent) {
    BudgetNote n = DownBudgetStore.admit(book);
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
    store.down = true;
    for (int i = 0; i < 3; i++) {
      requestDuringTheOutage(25);
    }
    assertThat(owed.size()).isEqualTo(3);
    assertThat(owedGauge()).isEqualTo(3);
    assertThat(tickMillis).containsExactly(1000L);

    int before = store.settles();
    tick(); // still down: one write tried, not three; all still owed, the timer armed again
    assertThat(store.settles() - before).isEqualTo(1);
    assertThat(owed.size()).isEqualTo(3);
    assertThat(owedGauge()).isEqualTo(3);

    store.down = false; // no request comes: the timer writes it all
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
    store.down = true;
    requestDuringTheOutage(40);
    requestDuringTheOutage(2);
    store.down = false;
    owed.drain().join();
    assertThat(owed.isEmpty()).isTrue();
    assertThat(owedGauge()).isZero();
    assertThat(spent()).isEqualTo(42);
    ticks.clear();
    store.down = true;
    requestDuringTheOutage(1); // after the drain: owed, counted, but no timer any more
    assertThat(owedGauge()).isEqualTo(1);
    assertThat(ticks).isEmpty();
  }
}
