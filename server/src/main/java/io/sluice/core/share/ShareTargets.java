package io.sluice.core.share;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * One renewal's arithmetic for one pool: this replica's targets from its own class demand and its
 * peers' last reported ones ({@link ShareAllocator}), and the peers' class loads that the pool's
 * class rules count. Pure functions; {@link ShareCoordinator} keeps the state.
 */
final class ShareTargets {
  private ShareTargets() {}

  /**
   * This replica's targets and what went with them.
   *
   * @param idle by class, the part of the class's guarantee placed on this replica that it did not
   *     want
   * @param received its target took remainders of blocked peers
   * @param gave it gave its remainder to a blocked peer
   */
  record Targets(long work, int requests, Map<String, Load> idle, boolean received, boolean gave) {}

  /**
   * This replica's targets {work, requests} by the allocation rule over it and its peers, class by
   * class ({@link ShareAllocator#allocateByClass}); a peer's class not configured here (a rollout)
   * counts as a class with no guarantee that may borrow the whole pool.
   */
  static Targets targets(
      String replica,
      List<ShareStore.Peer> peers,
      List<ClassDemand> classLoads,
      long capWork,
      int capRequests,
      double floorFraction,
      List<ClassLimits> limits) {
    TreeMap<String, List<ClassDemand>> byId = new TreeMap<>();
    for (ShareStore.Peer peer : peers) {
      // a peer that reports no class loads (a version before them, during a rollout) counts
      // with its total demand, as a class with no guarantee
      byId.put(
          peer.replica(),
          peer.classes().isEmpty() && (peer.demandWork() > 0 || peer.demandRequests() > 0)
              ? List.of(new ClassDemand("", peer.demandWork(), peer.demandRequests(), 0, 0, 0))
              : peer.classes());
    }
    byId.put(replica, classLoads);
    int m = limits.size();
    Map<String, Integer> column = new java.util.HashMap<>();
    for (int k = 0; k < m; k++) {
      column.put(limits.get(k).name(), k);
    }
    long[] gw = new long[m + 1];
    long[] rw = new long[m + 1];
    long[] gr = new long[m + 1];
    long[] rr = new long[m + 1];
    for (int k = 0; k < m; k++) {
      ClassLimits l = limits.get(k);
      gw[k] = l.guaranteedWork();
      rw[k] = l.reachWork();
      gr[k] = l.guaranteedRequests();
      rr[k] = l.reachRequests();
    }
    rw[m] = capWork; // classes unknown here: no guarantee, may borrow everything
    rr[m] = capRequests;
    int n = byId.size();
    long[][] dw = new long[n][m + 1];
    long[][] dr = new long[n][m + 1];
    // in flight by replica, and by class across the replicas (for the remainders gathered)
    long[] useW = new long[n];
    long[] useR = new long[n];
    long[] classUse = new long[m + 1];
    int me = 0;
    int i = 0;
    for (Map.Entry<String, List<ClassDemand>> e : byId.entrySet()) {
      if (e.getKey().equals(replica)) {
        me = i;
      }
      for (ClassDemand c : e.getValue()) {
        int k = column.getOrDefault(c.name(), m);
        dw[i][k] += Math.max(0, c.demandWork());
        dr[i][k] += Math.max(0, c.demandRequests());
        useW[i] += Math.max(0, c.inFlightWork());
        useR[i] += Math.max(0, c.inFlightRequests());
        classUse[k] += Math.max(0, c.inFlightWork());
      }
      i++;
    }
    // rounded down: in a small pool an idle replica keeps nothing and its first request waits
    // for (or is refused until) the next rebalance
    ShareAllocator.Allocation aw =
        ShareAllocator.allocateByClass(capWork, dw, gw, rw, floorFraction);
    ShareAllocator.Allocation ar =
        capRequests > 0
            ? ShareAllocator.allocateByClass(capRequests, dr, gr, rr, floorFraction)
            : null;
    // the remainders that blocked replicas cannot use, gathered where a waiting head then fits
    // the heads the pool's class rules would admit, on the class loads summed above
    long[] headW = new long[n];
    i = 0;
    for (List<ClassDemand> loads : byId.values()) {
      for (ClassDemand c : loads) {
        int k = column.getOrDefault(c.name(), m);
        if (c.headWork() > 0 && classAdmits(k, c.headWork(), classUse, gw, capWork)) {
          headW[i] = headW[i] == 0 ? c.headWork() : Math.min(headW[i], c.headWork());
        }
      }
      i++;
    }
    ShareAllocator.Targets t =
        ShareAllocator.consolidate(
            new ShareAllocator.Dimension(aw.targets(), useW, headW),
            ar == null ? null : new ShareAllocator.Dimension(ar.targets(), useR, headW));
    Map<String, Load> idle = new java.util.HashMap<>();
    for (int k = 0; k < m; k++) {
      long w = aw.idle()[me][k];
      int r = ar == null ? 0 : (int) ar.idle()[me][k];
      if (w > 0 || r > 0) {
        idle.put(limits.get(k).name(), new Load(w, r));
      }
    }
    boolean received = t.work()[me] > aw.targets()[me] || t.requests()[me] > ar(ar, me);
    boolean gave = !received && (t.work()[me] < aw.targets()[me] || t.requests()[me] < ar(ar, me));
    return new Targets(t.work()[me], (int) t.requests()[me], idle, received, gave);
  }

  private static long ar(ShareAllocator.@Nullable Allocation a, int me) {
    return a == null ? 0 : a.targets()[me];
  }

  /**
   * Whether the pool's class rules, on the replicas' last reported work in flight, would let a
   * request of {@code work} in class {@code k} start (its class and the others' guarantees).
   */
  private static boolean classAdmits(
      int k, long work, long[] classUse, long[] guaranteed, long capWork) {
    long need = classUse[k] + work;
    for (int j = 0; j < classUse.length; j++) {
      if (j != k) {
        need += Math.max(classUse[j], guaranteed[j]);
      }
    }
    return need <= capWork;
  }

  /** The peers' work and requests in flight by class, summed (their class rules' load). */
  static Map<String, Load> peerLoads(List<ShareStore.Peer> peers) {
    Map<String, long[]> sum = new java.util.HashMap<>();
    for (ShareStore.Peer peer : peers) {
      for (ClassDemand c : peer.classes()) {
        long[] a = sum.computeIfAbsent(c.name(), x -> new long[2]);
        a[0] += Math.max(0, c.inFlightWork());
        a[1] += Math.max(0, c.inFlightRequests());
      }
    }
    Map<String, Load> out = new java.util.HashMap<>();
    for (Map.Entry<String, long[]> e : sum.entrySet()) {
      out.put(
          e.getKey(),
          new Load(e.getValue()[0], (int) Math.min(Integer.MAX_VALUE, e.getValue()[1])));
    }
    return out;
  }
}
