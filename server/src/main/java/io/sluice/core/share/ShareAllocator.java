package io.sluice.core.share;

import java.util.Arrays;

/**
 * The allocation rule: how one dimension of a pool (work units, or request slots) is divided among
 * the live replicas. Every replica computes the same targets from the same reported demands (the
 * order is the replicas' ids, so even the rounding agrees); the store, not this rule, enforces that
 * grants never add up to more than the pool.
 *
 * <p>Water-filling above a floor, with capacity {@code C}, {@code n} replicas, demands {@code d_i}
 * and floor {@code f}:
 *
 * <ol>
 *   <li>every replica keeps {@code f' = min(f, floor(C / n))}, even idle, so its first request is
 *       admitted at once, without waiting for a rebalance;
 *   <li>the rest, {@code R = C - n f'}, fills the excess demands {@code e_i = max(0, d_i - f')}
 *       like water: a level {@code L} with {@code Σ min(e_i, L) = R}, so no replica gets more than
 *       it wants while another wants more than it gets, and equal wants get equal parts;
 *   <li>what no one wants is split evenly (headroom for the next burst wherever it lands).
 * </ol>
 *
 * {@code Σ target_i <= C} always; a replica with all the demand gets {@code C - (n - 1) f'}.
 */
public final class ShareAllocator {
  private ShareAllocator() {}

  /**
   * Targets for demands {@code demand} (in the replicas' id order) of a dimension of size {@code
   * capacity}, each replica keeping at least {@code floor} (less when there are too many replicas).
   */
  public static long[] allocate(long capacity, long[] demand, long floor) {
    int n = demand.length;
    long[] target = new long[n];
    if (n == 0 || capacity <= 0) {
      return target;
    }
    long base = Math.max(0, Math.min(floor, capacity / n));
    long rest = capacity - base * n;
    long[] excess = new long[n];
    long wanted = 0;
    for (int i = 0; i < n; i++) {
      excess[i] = Math.max(0, demand[i] - base);
      wanted = saturatedAdd(wanted, excess[i]);
    }
    long[] fill = wanted <= rest ? excess.clone() : waterFill(excess, rest);
    long spare = rest;
    for (int i = 0; i < n; i++) {
      spare -= fill[i];
    }
    for (int i = 0; i < n; i++) {
      long even = spare / n + (i < spare % n ? 1 : 0);
      target[i] = base + fill[i] + even;
    }
    return target;
  }

  /**
   * Parts of {@code total} to wants {@code want} (Σ want > total): min(want_i, L), remainder by
   * order.
   */
  private static long[] waterFill(long[] want, long total) {
    int n = want.length;
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Long.compare(want[a], want[b]));
    long[] out = new long[n];
    long left = total;
    int remaining = n;
    int k = 0;
    // satisfy the smallest wants whole while they are below the even split of what is left
    while (k < n && want[order[k]] <= left / remaining) {
      out[order[k]] = want[order[k]];
      left -= want[order[k]];
      remaining--;
      k++;
    }
    if (remaining > 0) {
      long level = left / remaining;
      long extra = left % remaining;
      // the rest all want more than the level: each gets it, the remainder one unit each by id
      int[] ids = new int[remaining];
      for (int j = 0; j < remaining; j++) {
        ids[j] = order[k + j];
      }
      Arrays.sort(ids);
      for (int id : ids) {
        out[id] = level + (extra > 0 ? 1 : 0);
        if (extra > 0) {
          extra--;
        }
      }
    }
    return out;
  }

  private static long saturatedAdd(long a, long b) {
    long r = a + b;
    return r < 0 ? Long.MAX_VALUE : r;
  }
}
