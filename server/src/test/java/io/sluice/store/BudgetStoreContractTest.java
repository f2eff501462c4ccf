package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.budget.BudgetStore;
import io.sluice.core.budget.Ledger;
import io.sluice.core.budget.Period;
import io.sluice.core.budget.Terms;
import io.sluice.store.memory.InMemoryBudgetStore;
import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What every {@link BudgetStore} does, seen from two replicas: the {@link Ledger} rule applied
 * atomically per key, the same answers as the in-process reference for a random sequence of
 * reservations and settles (pacing, thresholds, window changes included), a calendar window
 * starting afresh, a rolling one dropping its oldest slice.
 */
public abstract class BudgetStoreContractTest {
  protected abstract BudgetStore replicaA();

  protected abstract BudgetStore replicaB();

  protected abstract String prefix();

  static final Instant T0 = Instant.parse("2026-12-05T10:00:00Z");
  static final Period DAY = new Period.Calendar(Period.Unit.DAY, ZoneOffset.UTC, DayOfWeek.MONDAY);

  static <T> T get(java.util.concurrent.CompletionStage<T> s) throws Exception {
    return s.toCompletableFuture().get(5, TimeUnit.SECONDS);
  }

  private String key(String name) {
    return prefix() + "budget:{tenant:acme:" + name + "}";
  }

  @Test
  void reserveOnOneReplica_settleOnTheOther_sharedState() throws Exception {
    Terms t = new Terms(1000, List.of(0.5), 0);
    String k = key("shared");
    Ledger.Outcome o = get(replicaA().reserve(k, DAY, t, 600, T0));
    assertThat(o).isInstanceOf(Ledger.Outcome.Admit.class);
    assertThat(((Ledger.Outcome.Admit) o).announce()).isZero(); // 60 % reserved: 50 % reached
    assertThat(get(replicaB().reserve(k, DAY, t, 600, T0))).isInstanceOf(Ledger.Outcome.Wait.class);
    assertThat(get(replicaB().settle(k, DAY, DAY.at(T0).id(), t, 600, 700, T0))).isEqualTo(-1);
    Ledger.State s = get(replicaA().read(k, DAY, t, T0));
    assertThat(s.spent()).isEqualTo(700);
    assertThat(s.reserved()).isZero();
    assertThat(get(replicaA().reserve(k, DAY, t, 400, T0)))
        .isInstanceOf(Ledger.Outcome.Exhausted.class);
    Ledger.Outcome.Exhausted ex =
        (Ledger.Outcome.Exhausted) get(replicaA().reserve(k, DAY, t, 400, T0));
    assertThat(ex.renews()).isEqualTo(Instant.parse("2026-12-06T00:00:00Z"));
    // the next day starts afresh; a settle of yesterday's reservation counts today, holding nothing
    Instant tomorrow = Instant.parse("2026-12-06T00:00:01Z");
    assertThat(get(replicaB().read(k, DAY, t, tomorrow)).spent()).isZero();
    assertThat(get(replicaA().reserve(k, DAY, t, 400, tomorrow)))
        .isInstanceOf(Ledger.Outcome.Admit.class);
  }

  @Test
  void sameAnswersAsTheInProcessReference_forARandomSequence() throws Exception {
    SplittableRandom r = new SplittableRandom(35);
    Period rolling = new Period.Rolling(Duration.ofHours(1), 6);
    for (Period p : List.of(DAY, rolling)) {
      InMemoryBudgetStore ref = new InMemoryBudgetStore(100);
      Terms t = new Terms(5_000, List.of(0.5, 0.9), 300);
      String k = key("seq-" + (p == DAY ? "day" : "rolling"));
      Instant now = T0;
      java.util.ArrayDeque<long[]> running = new java.util.ArrayDeque<>();
      for (int i = 0; i < 300; i++) {
        now = now.plusMillis(r.nextLong(1, 120_000));
        BudgetStore s = r.nextBoolean() ? replicaA() : replicaB();
        if (!running.isEmpty() && r.nextInt(3) == 0) {
          long[] res = running.poll();
          long actual = r.nextLong(0, res[0] * 2 + 1);
          String w = p.at(Instant.ofEpochMilli(res[1])).id();
          assertThat(get(s.settle(k, p, w, t, res[0], actual, now)))
              .as("settle %s", i)
              .isEqualTo(get(ref.settle(k, p, w, t, res[0], actual, now)));
        } else {
          long cost = r.nextLong(0, 400);
          Ledger.Outcome got = get(s.reserve(k, p, t, cost, now));
          Ledger.Outcome want = get(ref.reserve(k, p, t, cost, now));
          assertThat(describe(got)).as("reserve %s", i).isEqualTo(describe(want));
          if (got instanceof Ledger.Outcome.Admit) {
            running.add(new long[] {cost, now.toEpochMilli()});
          }
        }
        Ledger.State a = get(s.read(k, p, t, now));
        Ledger.State b = get(ref.read(k, p, t, now));
        assertThat(new long[] {a.spent(), a.reserved(), a.announced()})
            .as("state %s", i)
            .containsExactly(b.spent(), b.reserved(), b.announced());
        assertThat(a.pace()).isCloseTo(b.pace(), org.assertj.core.data.Offset.offset(1e-6));
      }
    }
  }

  /**
   * Reservations by id: a reserve sent again holds nothing more and answers the same admission; a
   * settle sent again counts nothing more; a settle whose reserve timed out takes back what the id
   * holds if it ran, counts the spend once, and a reserve of that id arriving late holds nothing.
   */
  @Test
  void reservationIds_noLeakNoDoubleCount() throws Exception {
    Terms t = new Terms(1000, List.of(), 0);
    String k = key("ids");
    String w = DAY.at(T0).id();
    // a reserve sent twice (the first timed out on A after it ran; B sends it again)
    Ledger.Outcome first = get(replicaA().reserve(k, "r1", DAY, t, 300, T0));
    Ledger.Outcome again = get(replicaB().reserve(k, "r1", DAY, t, 300, T0));
    assertThat(describe(again)).isEqualTo("admit 300 700 -1");
    assertThat(describe(first)).isEqualTo("admit 300 700 -1");
    assertThat(get(replicaA().read(k, DAY, t, T0)).reserved()).isEqualTo(300);
    // its settle sent twice (the first ran, its answer lost): spent once, nothing held
    BudgetStore.Hold h1 = new BudgetStore.Hold("r1", w, 300, true);
    get(replicaA().settle(k, DAY, t, h1, 250, T0));
    assertThat(get(replicaB().settle(k, DAY, t, h1, 250, T0))).isEqualTo(-1);
    Ledger.State s = get(replicaA().read(k, DAY, t, T0));
    assertThat(new long[] {s.spent(), s.reserved()}).containsExactly(250, 0);
    // a reserve that timed out after it ran, settled by id with its fate unknown: taken back
    get(replicaA().reserve(k, "r2", DAY, t, 200, T0));
    BudgetStore.Hold h2 = new BudgetStore.Hold("r2", w, 0, false);
    get(replicaB().settle(k, DAY, t, h2, 40, T0));
    get(replicaB().settle(k, DAY, t, h2, 40, T0)); // the write-back sent again
    s = get(replicaA().read(k, DAY, t, T0));
    assertThat(new long[] {s.spent(), s.reserved()}).containsExactly(290, 0);
    // a reserve that timed out before it ran: settled first, then it runs late and holds nothing
    BudgetStore.Hold h3 = new BudgetStore.Hold("r3", w, 0, false);
    get(replicaB().settle(k, DAY, t, h3, 10, T0));
    assertThat(describe(get(replicaA().reserve(k, "r3", DAY, t, 500, T0))))
        .isEqualTo("admit 0 700 -1");
    get(replicaB().settle(k, DAY, t, h3, 10, T0));
    s = get(replicaA().read(k, DAY, t, T0));
    assertThat(new long[] {s.spent(), s.reserved()}).containsExactly(300, 0);
    // ids are kept per window: the next day the same id reserves afresh
    Instant tomorrow = Instant.parse("2026-12-06T00:00:01Z");
    assertThat(describe(get(replicaA().reserve(k, "r3", DAY, t, 100, tomorrow))))
        .isEqualTo("admit 100 900 -1");
  }

  @Test
  void shrink_byId_once_neverGrows_givesThePaceBack() throws Exception {
    Terms t = new Terms(1000, List.of(), 1000); // paced: a bucket of the whole limit
    String k = key("shrink");
    String w = DAY.at(T0).id();
    get(replicaA().reserve(k, "c1", DAY, t, 600, T0));
    BudgetStore.Hold h = new BudgetStore.Hold("c1", w, 600, true);
    // a cheaper run needs 100: 500 given back, once (sent again from the other replica: nothing)
    assertThat(get(replicaA().shrink(k, DAY, t, h, 100, T0))).isEqualTo(500L);
    assertThat(get(replicaB().shrink(k, DAY, t, h, 100, T0))).isZero();
    assertThat(get(replicaB().shrink(k, DAY, t, h, 300, T0))).as("never grows").isZero();
    Ledger.State s = get(replicaA().read(k, DAY, t, T0));
    assertThat(new long[] {s.spent(), s.reserved()}).containsExactly(0, 100);
    assertThat(s.pace()).as("the cut part back in the pace bucket").isEqualTo(900.0);
    // the room it gave back admits another at once; the settle takes back what the id holds
    assertThat(describe(get(replicaB().reserve(k, "c2", DAY, t, 800, T0))))
        .isEqualTo("admit 800 100 -1");
    get(replicaB().settle(k, DAY, t, h, 90, T0));
    s = get(replicaA().read(k, DAY, t, T0));
    assertThat(new long[] {s.spent(), s.reserved()}).containsExactly(90, 800);
    // settled, unknown, without an id, or of a window that is over: nothing
    assertThat(get(replicaA().shrink(k, DAY, t, h, 0, T0))).isZero();
    assertThat(get(replicaA().shrink(k, DAY, t, new BudgetStore.Hold("c9", w, 50, true), 0, T0)))
        .isZero();
    assertThat(get(replicaA().shrink(k, DAY, t, new BudgetStore.Hold(null, w, 800, true), 0, T0)))
        .isZero();
    Instant tomorrow = Instant.parse("2026-12-06T00:00:01Z");
    BudgetStore.Hold h2 = new BudgetStore.Hold("c2", w, 800, true);
    assertThat(get(replicaA().shrink(k, DAY, t, h2, 0, tomorrow))).isZero();
  }

  private static String describe(Ledger.Outcome o) {
    if (o instanceof Ledger.Outcome.Admit a) {
      return "admit " + a.cost() + " " + a.remaining() + " " + a.announce();
    }
    if (o instanceof Ledger.Outcome.Wait w) {
      return "wait " + w.pacing() + " " + w.waitMillis();
    }
    return "exhausted " + ((Ledger.Outcome.Exhausted) o).renews();
  }
}
