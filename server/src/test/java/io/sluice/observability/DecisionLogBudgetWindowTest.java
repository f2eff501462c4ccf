package io.sluice.observability;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The budget's window, compared with the one it replaced (a second number by {@code floorDiv} per
 * take, a count added to past its bound): the same answers and dropped counts at the edges of the
 * clock's range, at second boundaries, across negative times and with the clock set back; an
 * unbounded kind reads no clock; and threads taking at once in one second take exactly its bound.
 */
class DecisionLogBudgetWindowTest {
  private static final long SECOND = 1_000_000_000L;

  /** The previous budget, single-threaded: the second by division, the count reset on a change. */
  private static final class Reference {
    private long second = Long.MIN_VALUE;
    private long used;
    long dropped;

    boolean take(int max, long now) {
      if (max <= 0) {
        return true;
      }
      long s = Math.floorDiv(now, SECOND);
      if (s != second) {
        second = s;
        used = 0;
      }
      if (++used <= max) {
        return true;
      }
      dropped++;
      return false;
    }
  }

  /** Times around second boundaries, negative ones, the clock's ends, and steps back. */
  private static List<Long> edgyTimes() {
    List<Long> t = new ArrayList<>();
    long[] bases = {
      0,
      -1,
      -SECOND,
      -SECOND - 1,
      7 * SECOND,
      Long.MIN_VALUE,
      Long.MIN_VALUE + 1,
      Long.MIN_VALUE + SECOND,
      Long.MAX_VALUE,
      Long.MAX_VALUE - SECOND,
      Long.MAX_VALUE - 86_400 * SECOND, // FakeTicker's default start
      Math.floorDiv(Long.MIN_VALUE, SECOND) * -SECOND // a boundary far from zero
    };
    for (long b : bases) {
      for (long d : new long[] {-SECOND, -2, -1, 0, 1, 2, SECOND - 1, SECOND, SECOND + 1}) {
        for (int repeat = 0; repeat < 3; repeat++) { // a few takes at each time
          t.add(b + d); // wraps at the ends, as a clock near them would not; still a time
        }
      }
    }
    SplittableRandom r = new SplittableRandom(42);
    long now = -3 * SECOND;
    for (int i = 0; i < 20_000; i++) {
      now += r.nextLong(-SECOND / 4, SECOND / 2); // mostly forward, sometimes back
      t.add(now);
    }
    return t;
  }

  @Test
  void sameAnswersAndDroppedCountsAsTheDivisionPerTake_overEdgyTimes() {
    for (int max : new int[] {1, 2, 3, 10}) {
      List<Long> times = edgyTimes();
      long[] clock = {0};
      DecisionLogBudget budget = new DecisionLogBudget(() -> clock[0]);
      Reference admitted = new Reference();
      Reference refused = new Reference();
      for (int i = 0; i < times.size(); i++) {
        clock[0] = times.get(i);
        boolean rejected = i % 3 == 0;
        boolean expected = (rejected ? refused : admitted).take(max, clock[0]);
        assertThat(budget.take(rejected, max))
            .as("take %d at %d (max %d, rejected %s)", i, clock[0], max, rejected)
            .isEqualTo(expected);
      }
      assertThat(budget.dropped(false)).isEqualTo(admitted.dropped);
      assertThat(budget.dropped(true)).isEqualTo(refused.dropped);
    }
  }

  @Test
  void theSecondsAreTheClocks_onNegativeTimesAndAtItsLowEnd() {
    long[] clock = {-1};
    DecisionLogBudget budget = new DecisionLogBudget(() -> clock[0]);
    assertThat(budget.take(false, 1)).isTrue();
    clock[0] = -SECOND; // [-1 s, 0): the same second as -1 ns
    assertThat(budget.take(false, 1)).isFalse();
    clock[0] = 0; // the next second
    assertThat(budget.take(false, 1)).isTrue();
    clock[0] = Long.MIN_VALUE; // its second starts before the clock's range
    assertThat(budget.take(false, 1)).isTrue();
    clock[0] = Long.MIN_VALUE - Math.floorMod(Long.MIN_VALUE, SECOND) + SECOND - 1; // wraps back
    assertThat(budget.take(false, 1)).as("still that second").isFalse();
    clock[0]++;
    assertThat(budget.take(false, 1)).as("the next").isTrue();
    assertThat(budget.dropped(false)).isEqualTo(2);
  }

  @Test
  void anUnboundedKind_readsNoClock() {
    AtomicInteger reads = new AtomicInteger();
    DecisionLogBudget budget = new DecisionLogBudget(() -> 1_000L * reads.incrementAndGet());
    for (int i = 0; i < 100; i++) {
      assertThat(budget.take(i % 2 == 0, 0)).isTrue();
    }
    assertThat(reads.get()).isZero();
    assertThat(budget.take(false, 5)).isTrue();
    assertThat(reads.get()).isEqualTo(1); // a bounded kind reads it once per take
  }

  @Test
  void threadsTakingAtOnceInOneSecond_takeExactlyItsBound_andCountEveryDrop() throws Exception {
    DecisionLogBudget budget = new DecisionLogBudget(() -> 5 * SECOND + 17);
    int threads = 4;
    int each = 20_000;
    AtomicInteger taken = new AtomicInteger();
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> ts = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread th =
          new Thread(
              () -> {
                try {
                  start.await();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  return;
                }
                for (int i = 0; i < each; i++) {
                  if (budget.take(false, 100)) {
                    taken.incrementAndGet();
                  }
                }
              });
      th.start();
      ts.add(th);
    }
    start.countDown();
    for (Thread th : ts) {
      th.join();
    }
    assertThat(taken.get()).isEqualTo(100);
    assertThat(budget.dropped(false)).isEqualTo(threads * each - 100L);
    assertThat(budget.dropped(true)).isZero();
  }
}
