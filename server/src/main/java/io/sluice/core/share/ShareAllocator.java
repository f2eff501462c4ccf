package io.sluice.core.share;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import org.jspecify.annotations.Nullable;

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
 *   <li>what no one wants is split evenly (headroom for the next burst wherever it lands); by class
 *       ({@link #allocateByClass}) the units that do not divide evenly rotate over the parts, so
 *       idle replicas end within one unit of each other.
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
    return allocate(capacity, demand, floor, new int[1]);
  }

  /**
   * {@link #allocate}, the units of the even split that do not divide evenly going one each to the
   * replicas from index {@code start[0]} on (wrapping); {@code start[0]} is then moved past them.
   * Parts allocated one after the other with one {@code start} leave each replica within one unit
   * of the others in total, where starting every part at index 0 gives the lowest ids every
   * remainder (5 + 40 + 5 slots over 3 idle replicas: 18, 17, 15).
   */
  private static long[] allocate(long capacity, long[] demand, long floor, int[] start) {
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
    long extra = spare % n;
    for (int i = 0; i < n; i++) {
      long even = spare / n + (Math.floorMod(i - start[0], n) < extra ? 1 : 0);
      target[i] = base + fill[i] + even;
    }
    start[0] = (int) ((start[0] + extra) % n);
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
   *   <li>the rest, {@code F = C - Σ G_k}, by {@link #allocate} over what each replica wants beyond
   *       its guaranteed parts, {@code e_i = Σ_k max(0, d_ik - g_ik)}, where a class's wants are
   *       first cut to the part of {@code F} it can ever hold ({@code reach_k - G_k}: demand its
   *       class rules would refuse anyway is not given share);
   *   <li>{@code target_i = Σ_k g_ik + f_i}.
   * </ol>
   *
   * The part of {@code g_ik} that replica {@code i} does not want, {@code idle_ik = max(0, g_ik -
   * d_ik)}, is class {@code k}'s idle guarantee placed there: the replica keeps it for class {@code
   * k} (other classes may not use it), as one pool keeps a class's idle guarantee. {@code Σ
   * target_i <= C} always. With no guarantees and every class able to borrow the whole pool, the
   * targets are {@link #allocate}'s over the replicas' total demands.
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
    int[] start = new int[1]; // the even split's odd units rotate over the parts
    long[] excess = new long[n];
    long[][] classExcess = new long[m][n];
    for (int k = 0; k < m; k++) {
      long g = Math.max(0, Math.min(guaranteed[k], capacity - guaranteedTotal));
      guaranteedTotal += g;
      long[] column = new long[n];
      for (int i = 0; i < n; i++) {
        column[i] = Math.max(0, demand[i][k]);
      }
      long[] parts = g > 0 ? allocate(g, column, floorOf(floorFraction, g), start) : new long[n];
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
      long[] cut =
          canHold < rest && wanted > canHold ? waterFill(classExcess[k], canHold) : classExcess[k];
      for (int i = 0; i < n; i++) {
        excess[i] = saturatedAdd(excess[i], cut[i]);
      }
    }
    long[] free = allocate(rest, excess, floorOf(floorFraction, rest), start);
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

  /**
   * Gathers the pieces of the targets that replicas with a waiting request cannot use, so that some
   * of them can start theirs. Each replica counts against its own share, so at saturation each
   * holds a remainder smaller than the request at the head of its queue, in work units or in
   * request slots: with {@code n} replicas, {@code n} such pieces stand idle where one pool would
   * have one. A replica is <i>blocked</i> when a request waits there ({@code head_i > 0}), it holds
   * no more than its targets, and the head does not fit its remainders ({@code r_i = target_i -
   * inUse_i < head_i} in work, or no request slot left). The blocked replicas, by their shortfall
   * (work, then slots, then id), become recipients while the remainders of the others cover every
   * selected shortfall in both dimensions; each recipient gets its shortfall, taken from the other
   * blocked replicas' remainders in id order (they keep the rest). Every other replica keeps its
   * targets. The sums are unchanged, and no target falls below its in-use part.
   *
   * @param work targets, in use and the head's work, in work units
   * @param requests targets and in use in request slots (the head needs one); null when the pool
   *     caps no requests
   */
  public static Targets consolidate(Dimension work, @Nullable Dimension requests) {
    int n = work.targets().length;
    long[] outW = work.targets().clone();
    long[] outR = requests == null ? new long[n] : requests.targets().clone();
    long[] restW = new long[n];
    long[] restR = new long[n];
    long[] shortW = new long[n];
    long[] shortR = new long[n];
    List<Integer> blocked = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      long head = work.head()[i];
      restW[i] = Math.max(0, work.targets()[i] - Math.max(0, work.inUse()[i]));
      shortW[i] = Math.max(0, head - restW[i]);
      boolean holds = work.inUse()[i] <= work.targets()[i];
      if (requests != null) {
        restR[i] = Math.max(0, requests.targets()[i] - Math.max(0, requests.inUse()[i]));
        shortR[i] = Math.max(0, 1 - restR[i]);
        holds = holds && requests.inUse()[i] <= requests.targets()[i];
      }
      if (head > 0 && holds && (shortW[i] > 0 || shortR[i] > 0)) {
        blocked.add(i);
      }
    }
    if (blocked.size() < 2) {
      return new Targets(outW, outR);
    }
    blocked.sort(
        Comparator.comparingLong((Integer i) -> shortW[i])
            .thenComparingLong(i -> shortR[i])
            .thenComparing(i -> i));
    boolean[] chosen = new boolean[n];
    long needW = 0;
    long needR = 0;
    long availW = 0;
    long availR = 0;
    for (int i : blocked) {
      availW += restW[i];
      availR += restR[i];
    }
    for (int j : blocked) {
      // j's own remainders stop being available to the others once it is a recipient
      if (needW + shortW[j] <= availW - restW[j] && needR + shortR[j] <= availR - restR[j]) {
        chosen[j] = true;
        needW += shortW[j];
        needR += shortR[j];
        availW -= restW[j];
        availR -= restR[j];
      }
    }
    for (int i = 0; i < n; i++) {
      if (!chosen[i] && blocked.contains(i)) {
        long giveW = Math.min(restW[i], needW);
        long giveR = Math.min(restR[i], needR);
        outW[i] -= giveW;
        outR[i] -= giveR;
        needW -= giveW;
        needR -= giveR;
      }
    }
    for (int j : blocked) {
      if (chosen[j]) {
        outW[j] += shortW[j];
        outR[j] += shortR[j];
      }
    }
    return new Targets(outW, outR);
  }

  /**
   * One dimension of the replicas' targets for {@link #consolidate}.
   *
   * @param targets by replica
   * @param inUse what each holds in flight (as last reported)
   * @param head the work of the request at the head of each replica's queue (0: none waits); read
   *     from the work dimension only
   */
  @SuppressWarnings("ArrayRecordComponent") // plain arrays, read once
  public record Dimension(long[] targets, long[] inUse, long[] head) {}

  /** Targets after {@link #consolidate}: work units and request slots, by replica. */
  @SuppressWarnings("ArrayRecordComponent") // plain result arrays, read once by the caller
  public record Targets(long[] work, long[] requests) {}

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
