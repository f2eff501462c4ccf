package io.sluice.core.budget;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.FanOut;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.store.MutableClock;
import io.sluice.store.memory.InMemoryBudgetStore;
import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The budgets at work on a fake clock ({@link BudgetBook} over {@link InMemoryBudgetStore}): a
 * burst on a fresh budget waits instead of being refused, a spent budget refuses non-retryably
 * until its period renews (in its time zone, across DST), thresholds fire once per window, pacing
 * spreads a budget over its period, store outages follow the failure mode.
 */
class BudgetBookTest {
  static final Instant T0 = Instant.parse("2026-12-05T10:00:00Z");
  final MutableClock clock = new MutableClock(T0);
  final InMemoryBudgetStore memory = new InMemoryBudgetStore(1000);
  final Events events = new Events();
  final List<CompletableFuture<Void>> pending = new ArrayList<>();

  /** A delay the test completes (or, with {@code advancing}, one that moves the clock at once). */
  boolean advancing;

  final Delay delay =
      millis -> {
        if (advancing) {
          clock.advance(Duration.ofMillis(millis));
          return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> f = new CompletableFuture<>();
        pending.add(f);
        return f;
      };

  static final class Events implements BudgetEvents {
    final List<String> crossed = new ArrayList<>();
    final List<Long> settledActual = new ArrayList<>();
    int storeFailures;

    @Override
    public void settled(BudgetPolicy.Applied a, long reserved, long actual) {
      settledActual.add(actual);
    }

    @Override
    public void crossed(BudgetPolicy.Applied a, double threshold) {
      crossed.add(a.budget().name() + "@" + threshold);
    }

    @Override
    public void waited(BudgetPolicy.Applied a, boolean pacing, long millis) {}

    @Override
    public void storeFailed(BudgetPolicy.Applied a, boolean allowed) {
      storeFailures++;
    }

    @Override
    public void writeBack(BudgetPolicy.Applied a, long units, boolean written) {}

    @Override
    public void shrunk(BudgetPolicy.Applied a, long units) {}

    @Override
    public void owed(BudgetPolicy.Applied a, int delta) {}

    @Override
    public void localAllowance(BudgetPolicy.Applied a, long units, boolean ofRemaining) {}
  }

  static Budget tokens(String name, long limit, Period p, List<Double> th, long burst) {
    return new Budget(name, Budget.Meter.TOKENS, p, new Terms(limit, th, burst), null);
  }

  static Period day(String zone) {
    return new Period.Calendar(Period.Unit.DAY, ZoneId.of(zone), DayOfWeek.MONDAY);
  }

  static BudgetPolicy policy(Map<String, List<Budget>> tiers, Prices prices, int status) {
    return new BudgetPolicy(
        true,
        status,
        Duration.ofSeconds(5),
        1000,
        null,
        0.1,
        prices,
        tiers,
        Map.of(),
        Map.of(),
        Map.of(),
        List.of(),
        BudgetPolicy.Degrade.OFF);
  }

  BudgetBook book(BudgetPolicy p, BudgetStore store, BudgetBook.FailureMode mode) {
    return new BudgetBook(
        p,
        store,
        memoryLocal,
        0.1,
        "t_",
        mode,
        delay,
        clock,
        events,
        new WriteBack(p.maxEntries(), events),
        new LastRemaining(p.maxEntries()));
  }

  final InMemoryBudgetStore memoryLocal = new InMemoryBudgetStore(1000);

  static TokenEstimate estimate(long in, long out, @Nullable String model) {
    return new TokenEstimate(in, out, "bytes", null, model, false, false, FanOut.NONE, -1);
  }

  BudgetBook.Answer reserve(BudgetBook b, long in, long out) {
    return b.reserve("acme", "pro", "chat", estimate(in, out, "m")).toCompletableFuture().join();
  }

  @Test
  void burstOnAFreshBudget_waitsForRunningReservations_neverRefusedAtZeroSpend() {
    BudgetBook b =
        book(
            policy(
                Map.of("pro", List.of(tokens("daily", 1000, day("UTC"), List.of(), 0))),
                Prices.NONE,
                402),
            memory,
            BudgetBook.FailureMode.OPEN);
    List<BudgetNote> running = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      running.add(((BudgetBook.Answer.Admit) reserve(b, 10, 90)).note());
    }
    CompletableFuture<BudgetBook.Answer> waiter =
        b.reserve("acme", "pro", "chat", estimate(10, 90, "m")).toCompletableFuture();
    assertThat(waiter).isNotDone(); // held by the running requests' reservations, not refused
    assertThat(pending).hasSize(1);
    b.settle(running.get(0), new TokenUse(10, 30, 0)); // spent 40 of its 100
    pending.remove(0).complete(null);
    assertThat(waiter).isNotDone(); // 40 spent + 900 reserved: still no room for 100
    assertThat(pending).hasSize(1);
    b.settle(running.get(1), new TokenUse(10, 30, 0));
    pending.remove(0).complete(null);
    assertThat(waiter).isDone();
    assertThat(waiter.join()).isInstanceOf(BudgetBook.Answer.Admit.class);
  }

  @Test
  void spentBudget_refusedNonRetryably_withItsRenewal_thenFreshInTheNextWindow() {
    BudgetBook b =
        book(
            policy(
                Map.of("pro", List.of(tokens("daily", 100, day("UTC"), List.of(), 0))),
                Prices.NONE,
                402),
            memory,
            BudgetBook.FailureMode.OPEN);
    BudgetNote n = ((BudgetBook.Answer.Admit) reserve(b, 50, 50)).note();
    b.settle(n, new TokenUse(60, 40, 0));
    BudgetBook.Answer a = reserve(b, 1, 1);
    assertThat(a).isInstanceOf(BudgetBook.Answer.Refuse.class);
    BudgetBook.Answer.Refuse r = (BudgetBook.Answer.Refuse) a;
    assertThat(r.reason()).isEqualTo(Reason.BUDGET_EXHAUSTED);
    assertThat(r.reason().retryable()).isFalse();
    assertThat(r.status()).isEqualTo(402);
    assertThat(r.renews()).isEqualTo(Instant.parse("2026-12-06T00:00:00Z"));
    assertThat(r.retryAfterSeconds()).isEqualTo(Duration.ofHours(14).toSeconds());
    assertThat(r.message()).contains("daily").contains("2026-12-06T00:00:00Z");
    clock.set(Instant.parse("2026-12-06T00:00:00Z"));
    assertThat(reserve(b, 1, 1)).isInstanceOf(BudgetBook.Answer.Admit.class);
  }

  @Test
  void dayBoundaryFollowsTheZone_acrossTheDstShift() {
    // Europe/Berlin leaves summer time on 2026-10-25: that day has 25 hours
    clock.set(Instant.parse("2026-10-25T21:30:00Z")); // 22:30 local, still the 25th
    BudgetBook b =
        book(
            policy(
                Map.of("pro", List.of(tokens("daily", 100, day("Europe/Berlin"), List.of(), 0))),
                Prices.NONE,
                402),
            memory,
            BudgetBook.FailureMode.OPEN);
    BudgetNote n = ((BudgetBook.Answer.Admit) reserve(b, 50, 50)).note();
    b.settle(n, new TokenUse(50, 50, 0));
    BudgetBook.Answer.Refuse r = (BudgetBook.Answer.Refuse) reserve(b, 1, 1);
    assertThat(r.renews()).isEqualTo(Instant.parse("2026-10-25T23:00:00Z")); // local midnight
    clock.set(Instant.parse("2026-10-25T22:59:59Z"));
    assertThat(reserve(b, 1, 1)).isInstanceOf(BudgetBook.Answer.Refuse.class);
    clock.set(Instant.parse("2026-10-25T23:00:00Z"));
    assertThat(reserve(b, 1, 1)).isInstanceOf(BudgetBook.Answer.Admit.class);
  }

  @Test
  void thresholdsFireOncePerWindow_atReservationOrSettle() {
    BudgetBook b =
        book(
            policy(
                Map.of("pro", List.of(tokens("daily", 1000, day("UTC"), List.of(0.5, 0.8), 0))),
                Prices.NONE,
                402),
            memory,
            BudgetBook.FailureMode.OPEN);
    for (int i = 0; i < 9; i++) {
      BudgetNote n = ((BudgetBook.Answer.Admit) reserve(b, 50, 50)).note();
      b.settle(n, new TokenUse(50, 50, 0));
    }
    assertThat(events.crossed).containsExactly("daily@0.5", "daily@0.8");
    BudgetNote last = ((BudgetBook.Answer.Admit) reserve(b, 10, 10)).note();
    assertThat(last.disclosed()).isNotNull();
    assertThat(last.disclosed().remaining()).isEqualTo(80);
    clock.set(Instant.parse("2026-12-06T01:00:00Z")); // next day: once again
    for (int i = 0; i < 6; i++) {
      BudgetNote n = ((BudgetBook.Answer.Admit) reserve(b, 50, 50)).note();
      b.settle(n, new TokenUse(50, 50, 0));
    }
    assertThat(events.crossed).containsExactly("daily@0.5", "daily@0.8", "daily@0.5");
  }

  @Test
  void pacing_aTenantOfferingThreeTimesItsRate_isServedToThePeriodsEnd_withinTwoPercent() {
    long limit = 24_000; // tokens a day: 0.2778 a second
    BudgetBook b =
        book(
            policy(
                Map.of("pro", List.of(tokens("daily", limit, day("UTC"), List.of(), 200))),
                Prices.NONE,
                402),
            memory,
            BudgetBook.FailureMode.OPEN);
    advancing = true; // a wait moves the clock
    clock.set(Instant.parse("2026-12-05T00:00:00Z"));
    Instant end = Instant.parse("2026-12-06T00:00:00Z");
    long spent = 0;
    long[] perHour = new long[24];
    long offered = 0;
    Instant start = clock.instant();
    for (long i = 0; start.plusSeconds(12 * i).isBefore(end.minusSeconds(13)); i++) {
      clock.set(start.plusSeconds(12 * i)); // arrivals on schedule: a wait (< 5 s) ends before
      // 10 tokens every 12 s: 3x the budget's rate
      offered += 10;
      BudgetBook.Answer a = reserve(b, 4, 6);
      if (a instanceof BudgetBook.Answer.Admit ad) {
        b.settle(ad.note(), new TokenUse(4, 6, 0));
        spent += 10;
        perHour[
                (int)
                    Duration.between(Instant.parse("2026-12-05T00:00:00Z"), clock.instant())
                        .toHours()] +=
            10;
      } else if (((BudgetBook.Answer.Refuse) a).reason() == Reason.BUDGET_EXHAUSTED) {
        // the hard stop comes only at the very end: the landing is soft
        assertThat(clock.instant()).isAfter(end.minus(Duration.ofMinutes(30)));
      } else {
        assertThat(((BudgetBook.Answer.Refuse) a).reason()).isEqualTo(Reason.BUDGET_PACED);
      }
    }
    assertThat(offered).isGreaterThan(3 * limit - 200);
    assertThat((double) spent).isBetween(limit * 0.98, (double) limit);
    for (int h = 0; h < 24; h++) { // no cliff: every hour served, near the budget's hourly rate
      assertThat(perHour[h]).as("hour %s", h).isBetween(limit / 24 / 2, limit / 24 * 2);
    }
  }

  @Test
  void unknownModel_refused422_orTheDefaultPrice() {
    Budget usd =
        new Budget(
            "usd", Budget.Meter.MONEY, day("UTC"), new Terms(1_000_000_000L, List.of(), 0), null);
    Price p = new Price(Instant.EPOCH, 1_000_000_000L, 2_000_000_000L, 100_000_000L);
    BudgetBook refuse =
        book(
            policy(
                Map.of("pro", List.of(usd)),
                new Prices(Map.of("m", List.of(p)), null, Prices.Unknown.REFUSE),
                402),
            memory,
            BudgetBook.FailureMode.OPEN);
    BudgetBook.Answer a =
        refuse
            .reserve("acme", "pro", "chat", estimate(1000, 1000, "other"))
            .toCompletableFuture()
            .join();
    assertThat(((BudgetBook.Answer.Refuse) a).reason()).isEqualTo(Reason.BUDGET_UNPRICED);
    assertThat(((BudgetBook.Answer.Refuse) a).status()).isEqualTo(422);
    BudgetBook.Answer priced =
        refuse
            .reserve("acme", "pro", "chat", estimate(1000, 1000, "m"))
            .toCompletableFuture()
            .join();
    // 1000 in at $1/M + 1000 out at $2/M = $0.003
    assertThat(((BudgetBook.Answer.Admit) priced).note().reserved().get(0).units())
        .isEqualTo(3_000_000L);
    BudgetBook fallback =
        book(
            policy(
                Map.of("pro", List.of(usd)), new Prices(Map.of(), p, Prices.Unknown.DEFAULT), 402),
            memory,
            BudgetBook.FailureMode.OPEN);
    assertThat(
            fallback
                .reserve("acme", "pro", "chat", estimate(1, 1, "other"))
                .toCompletableFuture()
                .join())
        .isInstanceOf(BudgetBook.Answer.Admit.class);
  }

  @Test
  void storeOutage_open_closed_local() {
    BudgetStore down =
        new BudgetStore() {
          @Override
          public CompletionStage<Ledger.Outcome> reserve(
              String k, @Nullable String id, Period p, Terms t, long c, Instant n) {
            return CompletableFuture.failedFuture(new IllegalStateException("down"));
          }

          @Override
          public CompletionStage<Integer> settle(
              String k, Period p, Terms t, Hold h, long a, Instant n) {
            return CompletableFuture.failedFuture(new IllegalStateException("down"));
          }

          @Override
          public CompletionStage<Long> shrink(
              String k, Period p, Terms t, Hold h, long u, Instant n) {
            return CompletableFuture.failedFuture(new IllegalStateException("down"));
          }

          @Override
          public CompletionStage<Ledger.State> read(String k, Period p, Terms t, Instant n) {
            return CompletableFuture.failedFuture(new IllegalStateException("down"));
          }
        };
    BudgetPolicy p =
        policy(
            Map.of("pro", List.of(tokens("daily", 1000, day("UTC"), List.of(), 0))),
            Prices.NONE,
            402);
    BudgetNote open =
        ((BudgetBook.Answer.Admit) reserve(book(p, down, BudgetBook.FailureMode.OPEN), 10, 10))
            .note();
    assertThat(open.reserved().get(0).where()).isEqualTo(BudgetNote.Where.NONE);
    BudgetBook.Answer closed = reserve(book(p, down, BudgetBook.FailureMode.CLOSED), 10, 10);
    assertThat(((BudgetBook.Answer.Refuse) closed).reason()).isEqualTo(Reason.BUDGET_PACED);
    assertThat(((BudgetBook.Answer.Refuse) closed).status()).isEqualTo(429);
    BudgetBook local = book(p, down, BudgetBook.FailureMode.LOCAL);
    int admitted = 0;
    for (int i = 0; i < 20; i++) { // a local share of 10 %: 100 tokens, 5 requests of 20
      BudgetBook.Answer a = reserve(local, 10, 10);
      if (a instanceof BudgetBook.Answer.Admit ad) {
        assertThat(ad.note().reserved().get(0).where()).isEqualTo(BudgetNote.Where.LOCAL);
        local.settle(ad.note(), new TokenUse(10, 10, 0));
        admitted++;
      }
    }
    assertThat(admitted).isEqualTo(5);
    assertThat(events.storeFailures).isGreaterThanOrEqualTo(22);
  }

  @Test
  void settle_isOnce_whicheverPathComesFirst() {
    BudgetBook b =
        book(
            policy(
                Map.of("pro", List.of(tokens("daily", 1000, day("UTC"), List.of(), 0))),
                Prices.NONE,
                402),
            memory,
            BudgetBook.FailureMode.OPEN);
    BudgetNote n = ((BudgetBook.Answer.Admit) reserve(b, 10, 90)).note();
    b.settle(n, new TokenUse(10, 20, 0));
    b.settle(n, null);
    b.settle(n, new TokenUse(10, 20, 0));
    assertThat(events.settledActual).containsExactly(30L);
    Ledger.State s =
        memory
            .read(
                n.reserved().get(0).applied().key("t_"),
                day("UTC"),
                n.reserved().get(0).applied().budget().terms(),
                clock.instant())
            .toCompletableFuture()
            .join();
    assertThat(s.spent()).isEqualTo(30);
    assertThat(s.reserved()).isZero();
  }

  @Test
  void rollingWindow_spendDropsOutSliceBySlice() {
    Period rolling = new Period.Rolling(Duration.ofHours(1), 4);
    BudgetBook b =
        book(
            policy(
                Map.of("pro", List.of(tokens("hourly", 100, rolling, List.of(), 0))),
                Prices.NONE,
                429),
            memory,
            BudgetBook.FailureMode.OPEN);
    clock.set(Instant.parse("2026-12-05T10:00:00Z"));
    b.settle(((BudgetBook.Answer.Admit) reserve(b, 30, 30)).note(), new TokenUse(30, 30, 0));
    clock.set(Instant.parse("2026-12-05T10:20:00Z"));
    b.settle(((BudgetBook.Answer.Admit) reserve(b, 20, 20)).note(), new TokenUse(20, 20, 0));
    BudgetBook.Answer.Refuse r = (BudgetBook.Answer.Refuse) reserve(b, 1, 1);
    assertThat(r.status()).isEqualTo(429);
    clock.set(Instant.parse("2026-12-05T11:00:00Z")); // the first slice dropped out: 40 spent
    assertThat(reserve(b, 30, 30)).isInstanceOf(BudgetBook.Answer.Admit.class);
  }
}
