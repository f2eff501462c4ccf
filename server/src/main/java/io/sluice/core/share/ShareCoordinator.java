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
 * <p><b>The pool's bound at every instant.</b> The store counts each replica as holding {@code
 * max(grant, what it reported in use)} from the moment it runs the exchange, and grants the others
 * only what no one is counted as holding. So what a replica may admit must never exceed what the
 * store counts for it, also while an exchange is on the wire (sent, run, answer not yet applied).
 * Each round therefore, before it sends: lowers a leased limit to {@code min(limit, target)} (a
 * shrink the store is about to record takes effect here first), then reads what is in flight, and
 * reports in use as {@code max(in flight, the limit)}: the most this replica can have in flight
 * until the answer applies (a store-down share included: the store then counts it whole). A replica
 * grows only when the answer applies, out of room the store found free. (A grant is never below
 * that limit while the lease is live: the store still counts it from the previous round.)
 *
 * <p>When the store fails or does not answer, the last share is kept for the pool's {@code
 * keepShareFor}; after that the pool falls back to {@code capacity / expectedReplicas} or refuses,
 * as configured, until an exchange succeeds again. The keep time counts from when the last answered
 * exchange was sent (its lease started later, on the store) and ends at least one renewal before
 * the lease can expire ({@code min(keepShareFor, leaseTtl - renewInterval)}), so a replica the
 * store no longer answers stops admitting on its share before the others can take it. The pool
 * enforces that end itself, on its own clock, whenever something may start ({@link
 * SharedPool#fenceShare}): a replica whose rounds stall (a stuck timer, a GC pause) is fenced too.
 * Before its first grant a pool holds nothing: the bootstrap has the admission controller start
 * every shared pool at a share of 0 ({@code AdmissionController.holdForShares}) and waits for the
 * first exchange before it reports ready.
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
   * @param nanosSinceGrant time since the last answered exchange was sent (-1: none yet)
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
      n += s.tally.superseded;
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

  /** What happened to one pool's lease (for {@link Status}). */
  private static final class Tally {
    long renewals;
    long failures;
    long rebalances;
    long received; // renewals whose target took remainders of blocked peers
    long gave; // renewals that gave its remainder to a blocked peer
    long superseded; // leases of earlier incarnations dropped
  }

  /** One pool's lease. */
  private final class PoolShare {
    final String pool;
    final long createdNanos;
    Mode mode = Mode.WAITING;
    // the limit the pool admits on now (the last grant, or lower while a shrink is on the wire)
    long grantedWork;
    int grantedRequests;
    @Nullable ClassShares grantedClasses;
    // the store's last grant, null before the first (a changed grant is a rebalance)
    ShareStore.@Nullable Grant leased;
    // what it last reported (in flight, waiting, refused; by class): the demand it exchanged
    Demand demand = new Demand(0, 0, 0, 0, 0, 0, 0, 0, 0, List.of());
    long lastGrantNanos;
    boolean started;
    boolean pending;
    List<ShareStore.Peer> peers = List.of();
    Map<String, Load> idleParts = Map.of();
    final Probation probation = new Probation();
    final Tally tally = new Tally();
    String lastError = "";
    Load asked = new Load(0, 0); // what it last asked for (the allocation rule's target)
    Map<String, Load> peerClassLoads = Map.of();
    boolean predecessorsDropped;
    @Nullable SharedPool lastState; // the pool its last round drove (the fence's mode in status)

    PoolShare(String pool, long createdNanos) {
      this.pool = pool;
      this.createdNanos = createdNanos;
    }

    synchronized @Nullable CompletableFuture<Void> round(SharedPool state, long now) {
      ReplicaPolicy.PoolMode mode = policy.mode(pool);
      lastState = state;
      if (!started) {
        started = true;
        apply(state, 0, 0, null, now); // holds nothing until the store grants it a share
      }
      checkAge(state, mode, now);
      if (pending) {
        return null; // one exchange at a time; the store's own timeout ends a slow one
      }
      PoolPolicy p = state.policy();
      Demand d = state.demand();
      demand = d;
      List<ClassDemand> mine = d.classes();
      int capRequests = Math.max(0, p.maxRequests());
      ShareTargets.Targets target =
          ShareTargets.targets(
              replica,
              peers,
              mine,
              p.capacityWorkUnits(),
              capRequests,
              mode.floor(),
              state.classLimits());
      idleParts = target.idle();
      tally.received += target.received() ? 1 : 0;
      tally.gave += target.gave() ? 1 : 0;
      asked = new Load(target.work(), target.requests());
      // the store records the shrink of a leased share to the target when it runs this exchange:
      // it applies here first (a store-down share stays as it is: the store did not grant it);
      // in use is what may be in flight until the answer applies
      boolean leased = this.mode == Mode.LEASED || this.mode == Mode.KEPT;
      if (leased && (asked.work() < grantedWork || asked.requests() < grantedRequests)) {
        apply(
            state,
            Math.min(grantedWork, asked.work()),
            Math.min(grantedRequests, asked.requests()),
            grantedClasses,
            now);
      }
      Load used = state.inFlight();
      ShareStore.Exchange ex =
          new ShareStore.Exchange(
              namespace,
              pool,
              replica,
              policy.leaseTtl().toMillis(),
              p.capacityWorkUnits(),
              capRequests,
              asked.work(),
              asked.requests(),
              Math.max(used.work(), grantedWork),
              Math.max(used.requests(), grantedRequests),
              d.demandWork(),
              d.demandRequests(),
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
                answered(state, g, e, now, ticker.nanos());
                return (Void) null;
              });
    }

    private synchronized @Nullable Void dropped(@Nullable Integer n, @Nullable Throwable e) {
      if (e == null) {
        predecessorsDropped = true;
        tally.superseded += n == null ? 0 : n;
      }
      return null;
    }

    /**
     * The answer to the exchange sent at {@code sentNanos}: its grant applies at {@code now}, and
     * the keep time counts from {@code sentNanos} (the lease it renewed started after it).
     */
    private synchronized void answered(
        SharedPool state,
        ShareStore.@Nullable Grant g,
        @Nullable Throwable e,
        long sentNanos,
        long now) {
      pending = false;
      if (g != null && e == null) {
        ShareStore.Grant last = leased;
        if (last == null || g.work() != last.work() || g.requests() != last.requests()) {
          tally.rebalances++;
        }
        leased = g;
        if (mode == Mode.FALLBACK || mode == Mode.REFUSING) {
          // back from a store outage: within the share of the outage until the other replicas
          // have had the time to renew ({@link Probation})
          probation.start(now + 2 * policy.renewInterval().toNanos(), grantedWork, grantedRequests);
        }
        long work = g.work();
        int requests = g.requests();
        if (probation.holds(now)) {
          work = Math.min(work, probation.work());
          requests = Math.min(requests, probation.requests());
        }
        peers = g.peers();
        lastGrantNanos = sentNanos;
        tally.renewals++;
        mode = Mode.LEASED;
        peerClassLoads = ShareTargets.peerLoads(peers);
        apply(state, work, requests, new ClassShares(peerClassLoads, idleParts), now);
        return;
      }
      tally.failures++;
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

    /** The pool admits on {@code work} and {@code requests} from now (its limit). */
    private void apply(
        SharedPool state, long work, int requests, @Nullable ClassShares classes, long now) {
      grantedWork = work;
      grantedRequests = requests;
      grantedClasses = classes;
      SharedPool.Fence fence = null;
      if (leased != null && (mode == Mode.LEASED || mode == Mode.KEPT)) {
        // the self-fence: past the keep time the pool itself drops to its store-down share, also
        // when no round runs to see it (checkAge does the same when one does)
        ReplicaPolicy.PoolMode m = policy.mode(pool);
        Load down = m.storeDownShare(state.policy());
        long at = lastGrantNanos + policy.keepNanos(m) + 1;
        fence = new SharedPool.Fence(at, down.work(), down.requests());
      }
      state.applyShare(work, requests, classes, fence, now);
    }

    /**
     * Past the keep time without a grant: the store-down mode applies. The keep time is {@code
     * keepShareFor}, but at most {@code leaseTtl - renewInterval}: rounds check it, so it ends
     * before the lease the last answered exchange renewed can expire on the store.
     */
    private void checkAge(SharedPool state, ReplicaPolicy.PoolMode m, long now) {
      if (mode == Mode.FALLBACK || mode == Mode.REFUSING) {
        return;
      }
      long since = leased != null ? now - lastGrantNanos : now - createdNanos;
      if (since <= policy.keepNanos(m)) {
        return; // LEASED, KEPT or WAITING, still within the keep time
      }
      // the peers' loads are unknown now: class rules scaled to the outage share
      mode = m.storeDown() == ReplicaPolicy.StoreDown.REFUSE ? Mode.REFUSING : Mode.FALLBACK;
      Load down = m.storeDownShare(state.policy());
      apply(state, down.work(), down.requests(), null, now);
    }

    synchronized Status status(long now) {
      if (lastState != null) {
        checkAge(lastState, policy.mode(pool), now); // past the fence: as the pool admits now
      }
      return new Status(
          pool,
          mode,
          grantedWork,
          grantedRequests,
          demand.demandWork(),
          demand.demandRequests(),
          leased != null ? now - lastGrantNanos : -1,
          peers.size(),
          tally.renewals,
          tally.failures,
          tally.rebalances,
          lastError,
          asked.work(),
          asked.requests(),
          tally.received,
          tally.gave,
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
