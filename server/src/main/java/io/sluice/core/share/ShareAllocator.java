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
   * Targets by class: the same rule, applied so that each class's guaranteed part of the pool goes
   * where that class's demand is, and the rest where the demand beyond those parts is.
   *
   * <ol>
   *   <li>each class {@code k} with a guaranteed part {@code G_k} of the pool: {@code g_ik =
   *       allocate(G_k, d_·k, floor × G_k)}, so the guarantee follows the class's demand (what no
   *       replica wants of it is split evenly: a burst anywhere finds some at once);
   *   <li>the rest, {@code F = C - Σ G_k}, by {@link #allocate} over what each replica wants
   *       beyond its guaranteed parts, {@code e_i = Σ_k max(0, d_ik - g_ik)}, where a class's
   *       wants are first cut to the part of {@code F} it can ever hold ({@code reach_k - G_k}:
   *       demand its class rules would refuse anyway is not given share);
   *   <li>{@code target_i = Σ_k g_ik + f_i}.
   * </ol>
   *
   * The part of {@code g_ik} that replica {@code i} does not want, {@code idle_ik = max(0, g_ik -
   * d_ik)}, is class {@code k}'s idle guarantee placed there: the replica keeps it for class
   * {@code k} (other classes may not use it), as one pool keeps a class's idle guarantee.
   * {@code Σ target_i <= C} always. With no guarantees and every class able to borrow the whole
   * pool, the targets are {@link #allocate}'s over the replicas' total demands.
   *
   * @param demand {@code demand[i][k]}: replica {@code i}'s demand of class {@code k}
   * @param guaranteed {@code G_k}, the class's guaranteed part of the pool ({@code Σ <= C})
   * @param reach the most class {@code k} can hold in the pool ({@code >= G_k})
   * @param floorFraction the floor, a fraction of each part
   */
  public static Allocation allocateByClass(
      long capacity, long[][] demand, long[] guaranteed, long[] reach, double floorFraction) {
    int n = demand.length;
    int m = guaranteed.length;
    long[] target = new long[n];
    long[][] idle = new long[n][m];
    if (n == 0 || capacity <= 0) {
      return new Allocation(target, idle);
    }
    long guaranteedTotal = 0;
    long[] excess = new long[n];
    long[][] classExcess = new long[m][n];
    for (int k = 0; k < m; k++) {
      long g = Math.max(0, Math.min(guaranteed[k], capacity - guaranteedTotal));
      guaranteedTotal += g;
      long[] column = new long[n];
      for (int i = 0; i < n; i++) {
        column[i] = Math.max(0, demand[i][k]);
      }
      long[] parts = g > 0 ? allocate(g, column, floorOf(floorFraction, g)) : new long[n];
      for (int i = 0; i < n; i++) {
        target[i] += parts[i];
        classExcess[k][i] = Math.max(0, column[i] - parts[i]);
        idle[i][k] = Math.max(0, parts[i] - column[i]);
      }
    }
    long rest = capacity - guaranteedTotal;
    for (int k = 0; k < m; k++) {
      long canHold = Math.max(0, Math.min(rest, reach[k] - Math.max(0, guaranteed[k])));
      long wanted = 0;
      for (int i = 0; i < n; i++) {
        wanted = saturatedAdd(wanted, classExcess[k][i]);
      }
      long[] cut = canHold < rest && wanted > canHold ? waterFill(classExcess[k], canHold) : classExcess[k];
      for (int i = 0; i < n; i++) {
        excess[i] = saturatedAdd(excess[i], cut[i]);
      }
    }
    long[] free = allocate(rest, excess, floorOf(floorFraction, rest));
    for (int i = 0; i < n; i++) {
      target[i] += free[i];
    }
    return new Allocation(target, idle);
  }

  /**
   * What {@link #allocateByClass} gives.
   *
   * @param targets by replica
   * @param idle {@code idle[i][k]}: class {@code k}'s guarantee placed on replica {@code i} that it
   *     does not want now (kept there for class {@code k})
   */
  @SuppressWarnings("ArrayRecordComponent") // plain result arrays, read once by the caller
  public record Allocation(long[] targets, long[][] idle) {}

  /** {@code floor(fraction × part)}: the floor of one part, rounded down. */
  private static long floorOf(double fraction, long part) {
    return (long) Math.floor(fraction * (double) part);
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
