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
}
