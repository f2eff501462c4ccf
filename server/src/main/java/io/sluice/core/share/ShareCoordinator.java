package io.sluice.core.share;

import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.time.Ticker;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Keeps this replica's share of every pool (docs/decisions/0008-replica-shares.md). Each {@link
 * #tick} (every {@code renewInterval}, from the bootstrap's timer) reads each pool's demand,
 * computes this replica's target with {@link ShareAllocator} from its own demand and the peers'
 * last reported ones, and sends one exchange per pool to the {@link ShareStore}; the grant it
 * answers becomes the pool's local limit ({@link SharedPool#applyShare}). The admission path never
 * waits on the store: it admits against the last applied share.
 *
 * <p>When the store fails or does not answer, the last share is kept for the pool's {@code
 * keepShareFor}; after that the pool falls back to {@code capacity / expectedReplicas} or refuses,
 * as configured, until an exchange succeeds again. Before its first grant a pool holds nothing (the
 * bootstrap waits for the first exchange before it reports ready).
 *
 * <p>Thread-safe: a pool's state is guarded by its own monitor; one exchange per pool is in flight
 * at a time; answers may complete on any thread.
 */
public final class ShareCoordinator {
  /** Where a pool's limit comes from now. */
  public enum Mode {
    /** No grant yet (starting). */
    WAITING,
    /** A lease renewed within the last {@code keepShareFor}. */
    LEASED,
    /** The store failed; the last grant is still used. */
    KEPT,
    /** The store has been unreachable longer than {@code keepShareFor}: capacity / expected. */
    FALLBACK,
    /** The store has been unreachable longer than {@code keepShareFor}: nothing new admitted. */
    REFUSING;

    /** The metric label. */
    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * One pool's share at one instant (for metrics, /readyz and /debug/queues).
   *
   * @param grantedWork work units this replica may hold (its limit now)
   * @param grantedRequests request slots this replica may hold (0 when the pool caps none)
   * @param demandWork what it last reported wanting (in flight + waiting + refused)
   * @param nanosSinceGrant time since the last successful exchange (-1: none yet)
   * @param peers other live replicas at the last exchange
   * @param targetWork what it last asked for (the allocation rule's target, remainders gathered)
   * @param received renewals in which its target took remainders of blocked peers
   * @param gave renewals in which it gave its remainder to a blocked peer
   * @param classes by class: the peers' work and requests in flight as last reported, and the
   *     class's idle guarantee kept on this replica
   */
  public record Status(
      String pool,
      Mode mode,
      long grantedWork,
      int grantedRequests,
      long demandWork,
      int demandRequests,
      long nanosSinceGrant,
      int peers,
      long renewals,
      long failures,
      long rebalances,
      String lastError,
      long targetWork,
      int targetRequests,
      long received,
      long gave,
      Map<String, ClassView> classes) {
    public Status {
      classes = Map.copyOf(classes);
    }
  }

  /**
   * One class's side of a replica's share.
   *
   * @param peersWork the other replicas' work of the class in flight, as last reported
   * @param idleWork the class's guarantee placed on this replica that nothing here wanted
   */
  public record ClassView(long peersWork, int peersRequests, long idleWork, int idleRequests) {}

  private final String replica;
  private final String supersedes;
  private final String namespace;
  private final ShareStore store;
  private final Ticker ticker;
  private volatile ReplicaPolicy policy;
  private final Map<String, PoolShare> shares = new ConcurrentHashMap<>();

  /**
   * @param namespace the store's key namespace of this deployment ({@code quotas.keyPrefix})
   */
  public ShareCoordinator(
      String replica, String namespace, ReplicaPolicy policy, ShareStore store, Ticker ticker) {
    this(replica, "", namespace, policy, store, ticker);
  }

  /**
   * @param supersedes the lease id prefix of this replica's earlier incarnations (its stable name
   *     and the separator), whose leases its first exchange of each pool drops ({@link
   *     ShareStore#supersede}); empty for none
   * @param namespace the store's key namespace of this deployment ({@code quotas.keyPrefix})
   */
  public ShareCoordinator(
      String replica,
      String supersedes,
      String namespace,
      ReplicaPolicy policy,
      ShareStore store,
      Ticker ticker) {
    this.replica = replica;
    this.supersedes = supersedes;
    this.namespace = namespace;
    this.policy = policy;
    this.store = store;
    this.ticker = ticker;
  }

  public String replica() {
    return replica;
  }

  /** Leases of earlier incarnations dropped at start, over every pool. */
  public long superseded() {
    long n = 0;
    for (PoolShare s : shares.values()) {
      n += s.superseded;
    }
    return n;
  }

  public ReplicaPolicy policy() {
    return policy;
  }

  /** A reload: new lease settings and pool modes apply from the next tick. */
  public void reconfigure(ReplicaPolicy next) {
    this.policy = next;
  }

  /**
   * One round over {@code pools} (every pool of the current policy): renew, rebalance, apply. A
   * pool that is no longer configured is dropped and its lease given up. Returns a stage that
   * completes when every exchange sent in this round has been answered or failed.
   */
  public CompletionStage<Void> tick(Collection<? extends SharedPool> pools) {
    long now = ticker.nanos();
    Set<String> live = new HashSet<>();
    List<CompletableFuture<Void>> sent = new ArrayList<>();
    for (SharedPool pool : pools) {
      String name = pool.policy().name();
      live.add(name);
      PoolShare s = shares.computeIfAbsent(name, n -> new PoolShare(n, now));
      CompletableFuture<Void> f = s.round(pool, now);
      if (f != null) {
        sent.add(f);
      }
    }
    for (String name : List.copyOf(shares.keySet())) {
      if (!live.contains(name)) {
        shares.remove(name);
        var unused = store.leave(namespace, name, replica);
      }
    }
    return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
  }

  /** Gives up every lease (shutdown, after the drain). */
  public CompletionStage<Void> leaveAll() {
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (String name : shares.keySet()) {
      all.add(store.leave(namespace, name, replica).toCompletableFuture().exceptionally(e -> null));
    }
    return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new));
  }

  /** Every pool's share now, by pool name. */
  public Map<String, Status> statuses() {
    long now = ticker.nanos();
    Map<String, Status> out = new TreeMap<>();
    for (PoolShare s : shares.values()) {
      out.put(s.pool, s.status(now));
    }
    return out;
  }

  /** Whether every pool has had at least one grant (or applied its store-down mode). */
  public boolean settled() {
    for (PoolShare s : shares.values()) {
      if (s.status(ticker.nanos()).mode() == Mode.WAITING) {
        return false;
      }
    }
    return true;
  }

  /** One pool's lease. */
  private final class PoolShare {
    final String pool;
    final long createdNanos;
    Mode mode = Mode.WAITING;
    long grantedWork;
    int grantedRequests;
    long demandWork;
    int demandRequests;
    long lastGrantNanos;
    boolean granted;
    boolean started;
    boolean pending;
    List<ShareStore.Peer> peers = List.of();
    List<ClassDemand> classLoads = List.of();
    Map<String, Load> idleParts = Map.of();
    boolean onProbation;
    long probationUntilNanos;
    long probationWork;
    int probationRequests;
    long renewals;
    long failures;
    long rebalances;
    String lastError = "";
    long targetWork;
    int targetRequests;
    long received;
    long gave;
    Map<String, Load> peerClassLoads = Map.of();
    boolean predecessorsDropped;
    long superseded;

    PoolShare(String pool, long createdNanos) {
      this.pool = pool;
      this.createdNanos = createdNanos;
    }

    synchronized @Nullable CompletableFuture<Void> round(SharedPool state, long now) {
      ReplicaPolicy.PoolMode mode = policy.mode(pool);
      if (!started) {
        started = true;
        state.applyShare(0, 0, null, now); // holds nothing until the store grants it a share
      }
      checkAge(state, mode, now);
      if (pending) {
        return null; // one exchange at a time; the store's own timeout ends a slow one
      }
      PoolPolicy p = state.policy();
      Demand d = state.demand();
      demandWork = d.demandWork();
      demandRequests = d.demandRequests();
      List<ClassDemand> mine = d.classes();
      classLoads = mine;
      int capRequests = Math.max(0, p.maxRequests());
      long[] target =
          targets(p.capacityWorkUnits(), capRequests, mode.floor(), state.classLimits());
      targetWork = target[0];
      targetRequests = (int) target[1];
      ShareStore.Exchange ex =
          new ShareStore.Exchange(
              namespace,
              pool,
              replica,
              policy.leaseTtl().toMillis(),
              p.capacityWorkUnits(),
              capRequests,
              target[0],
              (int) target[1],
              d.workInFlight(),
              d.requestsInFlight(),
              demandWork,
              demandRequests,
              mine);
      pending = true;
      CompletionStage<ShareStore.Grant> answer;
      try {
        if (!predecessorsDropped && !supersedes.isEmpty()) {
          // before the first grant: the shares of this replica's dead incarnations go back to the
          // pool at once, not when their leases expire; a failure here is only that delay
          answer =
              store
                  .supersede(namespace, pool, replica, supersedes)
                  .handle((n, e) -> dropped(n, e))
                  .thenCompose(v -> store.exchange(ex));
        } else {
          answer = store.exchange(ex);
        }
      } catch (RuntimeException e) {
        answer = CompletableFuture.failedFuture(e);
      }
      return answer
          .toCompletableFuture()
          .handle(
              (g, e) -> {
                answered(state, g, e, ticker.nanos());
                return (Void) null;
              });
    }

    private synchronized @Nullable Void dropped(@Nullable Integer n, @Nullable Throwable e) {
      if (e == null) {
        predecessorsDropped = true;
        superseded += n == null ? 0 : n;
      }
      return null;
    }

    /**
     * This replica's targets {work, requests} by the allocation rule over it and its peers, class
     * by class ({@link ShareAllocator#allocateByClass}); a peer's class not configured here (a
     * rollout) counts as a class with no guarantee that may borrow the whole pool.
     */
    private long[] targets(
        long capWork, int capRequests, double floorFraction, List<ClassLimits> limits) {
      TreeMap<String, List<ClassDemand>> byId = new TreeMap<>();
      for (ShareStore.Peer peer : peers) {
        // a peer that reports no class loads (a version before them, during a rollout) counts
        // with its total demand, as a class with no guarantee
        byId.put(
            peer.replica(),
            peer.classes().isEmpty() && (peer.demandWork() > 0 || peer.demandRequests() > 0)
                ? List.of(
                    new ClassDemand(
                        "", peer.demandWork(), peer.demandRequests(), 0, 0, 0))
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
      idleParts = idle;
      if (t.work()[me] > aw.targets()[me] || t.requests()[me] > ar(ar, me)) {
        received++;
      } else if (t.work()[me] < aw.targets()[me] || t.requests()[me] < ar(ar, me)) {
        gave++;
      }
      return new long[] {t.work()[me], t.requests()[me]};
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
    private Map<String, Load> peerLoads() {
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
            new Load(
                e.getValue()[0], (int) Math.min(Integer.MAX_VALUE, e.getValue()[1])));
      }
      return out;
    }

    private synchronized void answered(
        SharedPool state, ShareStore.@Nullable Grant g, @Nullable Throwable e, long now) {
      pending = false;
      if (g != null && e == null) {
        if (!granted || g.work() != grantedWork || g.requests() != grantedRequests) {
          rebalances++;
        }
        if (mode == Mode.FALLBACK || mode == Mode.REFUSING) {
          // Back from a store outage: the other replicas' leases may have expired meanwhile, and
          // the work they hold (admitted on their fallback share, or still draining) reaches the
          // store only with their next renewal. Until they have had the time to renew, stay
          // within the share of the outage, so that the first replica back does not take the
          // whole pool on top of work the store cannot see yet.
          onProbation = true;
          probationUntilNanos = now + 2 * policy.renewInterval().toNanos();
          probationWork = grantedWork;
          probationRequests = grantedRequests;
        }
        granted = true;
        grantedWork = g.work();
        grantedRequests = g.requests();
        onProbation = onProbation && now - probationUntilNanos < 0;
        if (onProbation) {
          grantedWork = Math.min(grantedWork, probationWork);
          grantedRequests = Math.min(grantedRequests, probationRequests);
        }
        peers = g.peers();
        lastGrantNanos = now;
        renewals++;
        mode = Mode.LEASED;
        peerClassLoads = peerLoads();
        state.applyShare(
            grantedWork,
            grantedRequests,
            new ClassShares(peerClassLoads, idleParts),
            now);
        return;
      }
      failures++;
      Throwable cause = e;
      while (cause instanceof java.util.concurrent.CompletionException
          && cause.getCause() != null) {
        cause = cause.getCause();
      }
      lastError = cause == null ? "no answer" : String.valueOf(cause.getMessage());
      if (mode == Mode.LEASED) {
        mode = Mode.KEPT;
      }
      checkAge(state, policy.mode(pool), now);
    }

    /** Past {@code keepShareFor} without a grant: the store-down mode applies. */
    private void checkAge(SharedPool state, ReplicaPolicy.PoolMode m, long now) {
      if (mode == Mode.FALLBACK || mode == Mode.REFUSING) {
        return;
      }
      long since = granted ? now - lastGrantNanos : now - createdNanos;
      if (mode == Mode.LEASED && since <= m.keepShareFor().toNanos()) {
        return;
      }
      if (since <= m.keepShareFor().toNanos()) {
        return; // KEPT or WAITING, still within the keep time
      }
      PoolPolicy p = state.policy();
      if (m.storeDown() == ReplicaPolicy.StoreDown.REFUSE) {
        mode = Mode.REFUSING;
        grantedWork = 0;
        grantedRequests = 0;
      } else {
        mode = Mode.FALLBACK;
        int expected = Math.max(1, m.expectedReplicas());
        grantedWork = p.capacityWorkUnits() / expected;
        grantedRequests = Math.max(0, p.maxRequests()) / expected;
      }
      // the peers' loads are unknown now: class rules scaled to the outage share
      state.applyShare(grantedWork, grantedRequests, null, now);
    }

    synchronized Status status(long now) {
      return new Status(
          pool,
          mode,
          grantedWork,
          grantedRequests,
          demandWork,
          demandRequests,
          granted ? now - lastGrantNanos : -1,
          peers.size(),
          renewals,
          failures,
          rebalances,
          lastError,
          targetWork,
          targetRequests,
          received,
          gave,
          classViews());
    }

    private Map<String, ClassView> classViews() {
      Map<String, ClassView> out = new TreeMap<>();
      if (mode != Mode.LEASED && mode != Mode.KEPT) {
        return out; // class rules scaled to the share: no peers' loads, no idle parts
      }
      Set<String> names = new HashSet<>(peerClassLoads.keySet());
      names.addAll(idleParts.keySet());
      for (String name : names) {
        Load peer = peerClassLoads.getOrDefault(name, new Load(0, 0));
        Load idle = idleParts.getOrDefault(name, new Load(0, 0));
        out.put(name, new ClassView(peer.work(), peer.requests(), idle.work(), idle.requests()));
      }
      return out;
    }
  }
}
