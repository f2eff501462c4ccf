package io.sluice.core.budget;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The budget rule on a fake clock: reservations, reconciliation, pacing, thresholds. */
class LedgerTest {
  private static final Instant T0 = Instant.parse("2026-12-01T00:00:00Z");
  private static final Period MONTH =
      new Period.Calendar(Period.Unit.MONTH, ZoneOffset.UTC, DayOfWeek.MONDAY);
  private static final java.util.List<Double> NO_THRESHOLDS = java.util.List.of();

  private static Terms plain(long limit) {
    return new Terms(limit, NO_THRESHOLDS, 0);
  }

  @Test
  void burstOfLargeRequestsOnAFreshBudget_heldNotRefused_untilSpendDecides() {
    // 200 at once, each reserving 300 (the learned reserve), a budget of ~100 real answers (250)
    Terms terms = plain(25_000);
    Period.Window w = MONTH.at(T0);
    Ledger.State s = Ledger.State.FRESH;
    Deque<Long> running = new ArrayDeque<>();
    int waits = 0;
    int refusedBelow90 = 0;
    int admitted = 0;
    SplittableRandom r = new SplittableRandom(3);
    Deque<Integer> queue = new ArrayDeque<>();
    for (int i = 0; i < 200; i++) {
      queue.add(i);
    }
    while (!queue.isEmpty()) {
      // admit what fits, then one running request ends
      while (!queue.isEmpty()) {
        Ledger.Outcome o = Ledger.reserve(s, 300, terms, w, T0);
        if (o instanceof Ledger.Outcome.Admit a) {
          s = a.next();
          running.add(a.cost());
          queue.poll();
          admitted++;
        } else if (o instanceof Ledger.Outcome.Exhausted) {
          if (s.spent() < 0.9 * terms.limit()) {
            refusedBelow90++;
          }
          queue.poll();
        } else {
          waits++;
          break;
        }
      }
      if (!running.isEmpty()) {
        s = Ledger.reconcile(s, running.poll(), 200 + r.nextInt(101), terms);
      }
    }
    while (!running.isEmpty()) {
      s = Ledger.reconcile(s, running.poll(), 200 + r.nextInt(101), terms);
    }

    assertThat(refusedBelow90).isZero();
    assertThat(waits).isPositive();
    assertThat(admitted).isBetween(80, 125);
    assertThat(s.reserved()).isZero();
    assertThat(s.spent())
        .isLessThanOrEqualTo(terms.limit()); // actual <= reserved here: no overspend
    assertThat(s.spent()).isGreaterThan((long) (0.97 * terms.limit()));
  }

  @Test
  void reconcile_everyEndPath_returnsTheReservationExactlyOnce() {
    Terms terms = plain(10_000);
    Period.Window w = MONTH.at(T0);
    Ledger.State s = Ledger.State.FRESH;
    long[] actual = {450, 120, 0, 500}; // completed, cancelled part-way, upstream error, end unseen
    for (long a : actual) {
      Ledger.Outcome.Admit ad = (Ledger.Outcome.Admit) Ledger.reserve(s, 500, terms, w, T0);
      s = Ledger.reconcile(ad.next(), ad.cost(), a, terms);
    }
    assertThat(s.reserved()).isZero();
    assertThat(s.spent()).isEqualTo(450 + 120 + 0 + 500);
  }

  @Test
  void overrun_countsWhatWasSpent_andTheNextRequestIsRefusedOnSpendAlone() {
    Terms terms = plain(1000);
    Period.Window w = MONTH.at(T0);
    Ledger.Outcome.Admit a =
        (Ledger.Outcome.Admit) Ledger.reserve(Ledger.State.FRESH, 300, terms, w, T0);
    Ledger.State s = Ledger.reconcile(a.next(), 300, 990, terms);

    Ledger.Outcome next = Ledger.reserve(s, 20, terms, w, T0);

    assertThat(next).isInstanceOf(Ledger.Outcome.Exhausted.class);
    assertThat(((Ledger.Outcome.Exhausted) next).renews())
        .isEqualTo(Instant.parse("2027-01-01T00:00:00Z"));
    assertThat(Ledger.reserve(s, 10, terms, w, T0)).isInstanceOf(Ledger.Outcome.Admit.class);
  }

  @Test
  void thresholds_announcedOnceEach_atTheFirstReservationReachingThem() {
    Terms terms = new Terms(1000, java.util.List.of(0.8, 0.95), 0);
    Period.Window w = MONTH.at(T0);
    Ledger.State s = Ledger.State.FRESH;
    int[] announced = new int[2];
    for (int i = 0; i < 99; i++) {
      Ledger.Outcome o = Ledger.reserve(s, 10, terms, w, T0);
      Ledger.Outcome.Admit a = (Ledger.Outcome.Admit) o;
      if (a.announce() >= 0) {
        announced[a.announce()]++;
        assertThat(s.spent() + s.reserved() + 10).isIn(800L, 950L);
      }
      s = Ledger.reconcile(a.next(), 10, 10, terms);
    }
    assertThat(announced).containsExactly(1, 1);
    assertThat(s.announced()).isEqualTo(1);
  }

  /**
   * A tenant offering 3x its budget's rate over a compressed month (30 "days" of 1 h): served to
   * the end of the period, smoothly, and within 2 % of its budget.
   */
  @ParameterizedTest
  @ValueSource(longs = {1, 2, 3})
  void pacing_threeTimesTheRate_servedSmoothlyToTheEnd_withinTwoPercent(long seed) {
    Period.Window w = new Period.Window("m", T0, T0.plus(Duration.ofHours(30)), false);
    long budget = 3_000_000;
    Terms terms = new Terms(budget, NO_THRESHOLDS, 6_000);
    SplittableRandom r = new SplittableRandom(seed);
    long periodMillis = w.length().toMillis();
    double meanCost = 300;
    double offeredPerMilli = 3 * budget / meanCost / periodMillis; // requests per ms
    long step = (long) Math.ceil(1 / offeredPerMilli);
    Ledger.State s = Ledger.State.FRESH;
    long[] spentByTenth = new long[10];
    for (long t = 0; t < periodMillis; t += step) {
      Instant now = T0.plusMillis(t);
      long cost = 200 + r.nextInt(201);
      Ledger.Outcome o = Ledger.reserve(s, cost, terms, w, now);
      if (o instanceof Ledger.Outcome.Admit a) {
        s = Ledger.reconcile(a.next(), cost, cost - r.nextInt(50), terms);
      } else if (o instanceof Ledger.Outcome.Wait x) {
        s = x.next();
      } else {
        s = ((Ledger.Outcome.Exhausted) o).next();
      }
      spentByTenth[(int) (t * 10 / periodMillis)] = s.spent();
    }
    assertThat(s.spent()).isBetween((long) (0.98 * budget), budget);
    long before = 0;
    for (long cumulative : spentByTenth) { // each tenth of the period spends about a tenth
      assertThat(cumulative - before).isBetween((long) (0.07 * budget), (long) (0.13 * budget));
      before = cumulative;
    }
  }

  @Test
  void pacing_waitsSayWhenThePaceHasRoom() {
    Period.Window w = new Period.Window("m", T0, T0.plus(Duration.ofSeconds(1000)), false);
    Terms terms = new Terms(1000, NO_THRESHOLDS, 10);
    Ledger.Outcome first = Ledger.reserve(Ledger.State.FRESH, 10, terms, w, T0);
    Ledger.State s = ((Ledger.Outcome.Admit) first).next();

    Ledger.Outcome second = Ledger.reserve(s, 10, terms, w, T0);

    assertThat(second).isInstanceOf(Ledger.Outcome.Wait.class);
    Ledger.Outcome.Wait wait = (Ledger.Outcome.Wait) second;
    assertThat(wait.pacing()).isTrue();
    // 990 left over 1000 s: ~1 unit/s, 10 units in ~10.1 s
    assertThat(wait.waitMillis()).isBetween(9_000L, 11_000L);
    Instant later = T0.plusMillis(wait.waitMillis());
    assertThat(Ledger.reserve(wait.next(), 10, terms, w, later))
        .isInstanceOf(Ledger.Outcome.Admit.class);
  }
}
