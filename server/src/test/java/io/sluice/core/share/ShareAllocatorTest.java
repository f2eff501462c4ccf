package io.sluice.core.share;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The allocation rule: bounded by the pool, floors kept, water-filled, deterministic. */
class ShareAllocatorTest {

  static LongStream seeds() {
    return LongStream.range(0, 400);
  }

  /** Random pools, replica counts (including more replicas than units), demands and floors. */
  @ParameterizedTest
  @MethodSource("seeds")
  void property_boundedFairAndComplete(long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    long capacity = r.nextInt(4) == 0 ? r.nextInt(0, 5) : r.nextLong(1, 1_000_000);
    int n = r.nextInt(1, 13);
    long[] demand = new long[n];
    for (int i = 0; i < n; i++) {
      demand[i] =
          switch (r.nextInt(4)) {
            case 0 -> 0;
            case 1 -> r.nextLong(0, Math.max(1, capacity / n + 1));
            case 2 -> r.nextLong(0, capacity * 2 + 2);
            default -> r.nextLong(0, Long.MAX_VALUE / 16); // huge wants never overflow
          };
    }
    long floor = r.nextInt(3) == 0 ? 0 : r.nextLong(0, Math.max(1, capacity / 4 + 1));
    long[] t = ShareAllocator.allocate(capacity, demand, floor);
    long base = Math.min(floor, capacity / n);

    assertThat(Arrays.stream(t).sum()).as("every unit is placed, none twice").isEqualTo(capacity);
    for (int i = 0; i < n; i++) {
      assertThat(t[i]).as("floor kept by replica %d", i).isGreaterThanOrEqualTo(base);
    }
    // water-filling: while a replica is short of its want, no one holds more than it wants, and
    // no one holds more than one unit above the short one (the level, plus rounding)
    for (int i = 0; i < n; i++) {
      if (t[i] < demand[i]) {
        for (int j = 0; j < n; j++) {
          assertThat(t[j])
              .as("replica %d over its want while %d is short", j, i)
              .isLessThanOrEqualTo(Math.max(demand[j], base));
          assertThat(t[j])
              .as("replica %d above the level while %d is short", j, i)
              .isLessThanOrEqualTo(t[i] + 1);
        }
      }
    }
    // equal wants, equal parts (up to one unit)
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        if (demand[i] == demand[j]) {
          assertThat(Math.abs(t[i] - t[j])).isLessThanOrEqualTo(1);
        }
      }
    }
    // deterministic: every replica computes the same targets
    assertThat(ShareAllocator.allocate(capacity, demand.clone(), floor)).isEqualTo(t);
  }

  @Test
  void oneBusyReplicaGetsAllButTheFloors() {
    assertThat(ShareAllocator.allocate(100, new long[] {500, 0, 0}, 2)).containsExactly(96, 2, 2);
  }

  @Test
  void idleReplicasSplitThePoolEvenly() {
    assertThat(ShareAllocator.allocate(10, new long[] {0, 0, 0}, 1)).containsExactly(4, 3, 3);
  }

  @Test
  void shortDemandIsServedWholeAndTheRestWaterFills() {
    // replica 0 wants 3 of 10: it gets them; 1 and 2 want more than the rest: 7 split 4/3 over
    // the floors of 1
    long[] t = ShareAllocator.allocate(10, new long[] {3, 9, 9}, 1);
    assertThat(t).containsExactly(3, 4, 3);
  }

  @Test
  void moreReplicasThanSlots_floorsShrinkToWhatThePoolHas() {
    long[] t = ShareAllocator.allocate(2, new long[] {5, 5, 5, 5}, 1);
    assertThat(Arrays.stream(t).sum()).isEqualTo(2);
    assertThat(t).containsExactly(1, 1, 0, 0);
  }

  /**
   * By class: every unit placed, none twice; each class's guarantee goes where its demand is (its
   * parts are {@link ShareAllocator#allocate}'s over that class's demands), the idle parts are the
   * parts nobody there wants; with no guarantees and every class able to hold the pool, the targets
   * are the plain rule's over the replicas' total demands.
   */
  @ParameterizedTest
  @MethodSource("seeds")
  void property_byClass_boundedAndGuaranteesFollowDemand(long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    long capacity = r.nextInt(5) == 0 ? r.nextInt(0, 5) : r.nextLong(1, 1_000_000);
    int n = r.nextInt(1, 8);
    int m = r.nextInt(1, 4);
    boolean plain = r.nextInt(3) == 0;
    long[] guaranteed = new long[m];
    long[] reach = new long[m];
    long left = capacity;
    for (int k = 0; k < m; k++) {
      guaranteed[k] = plain ? 0 : r.nextLong(0, left + 1);
      left -= guaranteed[k];
    }
    long sumG = capacity - left;
    for (int k = 0; k < m; k++) {
      reach[k] = plain ? capacity : r.nextLong(guaranteed[k], capacity - sumG + guaranteed[k] + 1);
    }
    long[][] demand = new long[n][m];
    long[] total = new long[n];
    for (int i = 0; i < n; i++) {
      for (int k = 0; k < m; k++) {
        demand[i][k] = r.nextInt(3) == 0 ? 0 : r.nextLong(0, capacity + 2);
        total[i] += demand[i][k];
      }
    }
    double floor = r.nextInt(2) == 0 ? 0 : 0.02 * r.nextInt(0, 6);
    ShareAllocator.Allocation a =
        ShareAllocator.allocateByClass(capacity, demand, guaranteed, reach, floor);
    long[] t = a.targets();
    assertThat(Arrays.stream(t).sum()).as("every unit placed, none twice").isEqualTo(capacity);
    for (int k = 0; k < m; k++) {
      if (guaranteed[k] == 0) {
        continue;
      }
      long[] column = new long[n];
      for (int i = 0; i < n; i++) {
        column[i] = demand[i][k];
      }
      long[] parts =
          ShareAllocator.allocate(
              guaranteed[k], column, (long) Math.floor(floor * (double) guaranteed[k]));
      for (int i = 0; i < n; i++) {
        assertThat(a.idle()[i][k])
            .as("seed %d: idle part of class %d on replica %d", seed, k, i)
            .isEqualTo(Math.max(0, parts[i] - demand[i][k]));
        assertThat(t[i]).isGreaterThanOrEqualTo(parts[i]);
      }
    }
    if (plain) {
      assertThat(t)
          .as("seed %d: no guarantees: the plain rule over total demands", seed)
          .containsExactly(
              ShareAllocator.allocate(
                  capacity, total, (long) Math.floor(floor * (double) capacity)));
    }
  }

  /**
   * Interactive (70 of 100 guaranteed) wanted only on replica 0, batch (30) only on replica 1: each
   * guarantee goes where its class is wanted, nothing is idle.
   */
  @Test
  void byClass_eachGuaranteeGoesWhereItsClassIsWanted() {
    ShareAllocator.Allocation a =
        ShareAllocator.allocateByClass(
            100,
            new long[][] {{500, 0}, {0, 500}, {0, 0}},
            new long[] {70, 30},
            new long[] {70, 30},
            0);
    assertThat(a.targets()).containsExactly(70, 30, 0);
    assertThat(a.idle()[2]).containsExactly(0, 0);
  }

  /**
   * Nobody wants batch: its 30 is spread evenly and kept there for batch (idle); interactive's
   * wants beyond its guarantee cannot take it.
   */
  @Test
  void byClass_anUnwantedGuaranteeIsSpreadAndKeptIdle() {
    ShareAllocator.Allocation a =
        ShareAllocator.allocateByClass(
            100, new long[][] {{500, 0}, {500, 0}}, new long[] {70, 30}, new long[] {70, 30}, 0);
    assertThat(a.targets()).containsExactly(50, 50);
    assertThat(a.idle()[0]).containsExactly(0, 15);
    assertThat(a.idle()[1]).containsExactly(0, 15);
  }

  /**
   * Three saturated replicas with 3520 each, 3200, 3000 and 3100 in flight and heads of 660, 700
   * and 500 waiting: each remainder (320, 520, 420) is smaller than its head. Gathered, they start
   * two heads: replica 2 (short 80) and replica 1 (short 180) receive, replica 0 gives 260 of its
   * 320 and keeps 60.
   */
  @Test
  void consolidate_gathersTheRemaindersBlockedReplicasCannotUse() {
    long[] t =
        consolidate(new long[] {3520, 3520, 3520}, new long[] {3200, 3000, 3100}, 660, 700, 500);
    assertThat(t).containsExactly(3260, 3700, 3600);
    assertThat(Arrays.stream(t).sum()).isEqualTo(3 * 3520);
  }

  /** Work targets after consolidation, with no request cap. */
  private static long[] consolidate(long[] targets, long[] use, long... head) {
    return ShareAllocator.consolidate(new ShareAllocator.Dimension(targets, use, head), null)
        .work();
  }

  /**
   * Two replicas of 8 slots and 1000 work units each: replica 0 has all 8 slots busy (800 work, 200
   * left), replica 1 has 3 slots free but only 100 work left; each has a head of 150 waiting.
   * Neither can start it; replica 0 (short a slot, no work) receives a slot from replica 1 and
   * starts its head, replica 1 keeps its work.
   */
  @Test
  void consolidate_movesASlotFromAReplicaShortOfWorkToOneShortOfSlots() {
    ShareAllocator.Targets t =
        ShareAllocator.consolidate(
            new ShareAllocator.Dimension(
                new long[] {1000, 1000}, new long[] {800, 900}, new long[] {150, 150}),
            new ShareAllocator.Dimension(
                new long[] {8, 8}, new long[] {8, 5}, new long[] {150, 150}));
    assertThat(t.requests()).containsExactly(9, 7);
    assertThat(t.work()).containsExactly(1000, 1000);
  }

  /** Nothing waiting, a head that fits, or a single blocked replica: the targets stay. */
  @Test
  void consolidate_changesNothingWithoutTwoBlockedReplicas() {
    long[] targets = {50, 50};
    assertThat(consolidate(targets, new long[] {40, 40}, 0, 0)).containsExactly(50, 50);
    assertThat(consolidate(targets, new long[] {40, 40}, 10, 30))
        .as("replica 0's head fits its own remainder")
        .containsExactly(50, 50);
  }

  /** Random inputs: the sum is kept, no target falls below what is in use or its own target... */
  @ParameterizedTest
  @MethodSource("seeds")
  void property_consolidate_keepsTheSumAndTheWorkInUse(long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    int n = r.nextInt(1, 8);
    long[] targets = new long[n];
    long[] use = new long[n];
    long[] head = new long[n];
    for (int i = 0; i < n; i++) {
      targets[i] = r.nextLong(0, 5000);
      use[i] = r.nextInt(4) == 0 ? r.nextLong(0, 8000) : r.nextLong(0, targets[i] + 1);
      head[i] = r.nextInt(3) == 0 ? 0 : r.nextLong(1, 1500);
    }
    long[] t =
        ShareAllocator.consolidate(new ShareAllocator.Dimension(targets, use, head), null).work();
    assertThat(Arrays.stream(t).sum()).isEqualTo(Arrays.stream(targets).sum());
    int started = 0;
    for (int i = 0; i < n; i++) {
      assertThat(t[i])
          .as("seed %d: replica %d keeps what it holds in flight or its target", seed, i)
          .isGreaterThanOrEqualTo(Math.min(targets[i], use[i]));
      if (t[i] > targets[i]) {
        assertThat(t[i] - Math.max(0, use[i])).as("a recipient's head fits").isEqualTo(head[i]);
        started++;
      }
      if (t[i] < targets[i]) {
        assertThat(head[i]).as("only a blocked replica gives").isPositive();
        assertThat(targets[i] - Math.max(0, use[i])).isLessThan(head[i]);
      }
    }
    assertThat(started).isLessThan(Math.max(1, n));
  }
}
