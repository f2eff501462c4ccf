package io.sluice.core.queue;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.stream.IntStream;
import org.jspecify.annotations.Nullable;

/**
 * Chooses which waiting request of one pool starts next, across its class queues.
 *
 * <p>Each class has a rank (0 = highest priority), a reserved share of the pool's capacity and a
 * borrow flag. The caller (the admission controller) owns capacity accounting and exposes it
 * through a {@link PoolLedger}: three reads and one commit. With {@code reserve_k =
 * floor(reservedShare_k * capacity)}, {@code headroom_k = reserve_k - inFlight_k} and {@code free =
 * capacity - inFlight}:
 *
 * <ol>
 *   <li><b>Reserved.</b> In rank order, a class whose head item fits {@code min(headroom_k, free)}
 *       starts it in {@link Lane#RESERVED}.
 *   <li><b>Borrowed.</b> When no class can start within its reserve, idle capacity is lent in rank
 *       order to classes with {@code borrow = true}: the head fits if {@code work <= free -
 *       protected_k}, where {@code protected_k} is the sum over the <i>other</i> classes j that
 *       have waiting work of {@code max(0, min(headroom_j, queuedWork_j))}. Borrowing therefore
 *       never takes capacity that a waiting class below its reserve is entitled to: as soon as a
 *       release frees enough for that class's head, the next drain starts it (it reaches its
 *       reserve "within one release"). Lending stops at the first borrowing class whose head does
 *       not fit, so a lower rank never overtakes a waiting higher rank (large items do not starve).
 *   <li>After every start, both steps are tried again from the top.
 * </ol>
 *
 * <p><b>Request slots.</b> When the pool also caps concurrent requests, every rule above holds on
 * that dimension too, through {@link PoolLedger#freeRequests()} and {@link
 * PoolLedger#requestHeadroom(int)}: a RESERVED start needs a request slot within the class's
 * reserve of them, and a BORROWED start leaves the slots that waiting classes below their request
 * reserve are entitled to ({@code Σ max(0, min(requestHeadroom_j, depth_j))}).
 *
 * <p><b>Equal ranks.</b> "In rank order" never means list order: among classes of the same rank,
 * both steps take them by the arrival of their queue heads (earliest {@code enqueuedAt}, then the
 * lower item id), so the order of classes in the policy file does not decide who is served. Each
 * class still keeps its reserve first (step 1); what is lent goes first come, first served.
 *
 * <p>A class with {@code borrow = false} never exceeds its reserve. Inside a class the order is the
 * class queue's (tenant-fair, EDF within tenant; see {@link TenantFairQueue}); the scheduler only
 * looks at each queue's head, so it never skips a tenant's head to start a smaller item.
 *
 * <p><b>Concurrency.</b> Not thread-safe; call it with the pool's lock held or from its serializing
 * executor, the same one that owns the ledger. No timers, no clock: time is an argument.
 */
public final class ClassScheduler<T> {

  /** Which capacity a start is charged to (for accounting and metrics). */
  public enum Lane {
    /** Within the class's reserved share. */
    RESERVED,
    /** Beyond it, using idle capacity lent by other classes. */
    BORROWED
  }

  /**
   * One class of the pool.
   *
   * @param name class name (for logs)
   * @param rank 0 = highest priority; classes of equal rank are served by arrival of their queue
   *     heads (first come, first served across them), never by list order
   * @param reservedShare fraction [0, 1] of the pool capacity guaranteed to the class
   * @param borrow whether the class may use idle capacity beyond its reserve
   * @param queue its waiting room
   */
  public record QueueClass<T>(
      String name, int rank, double reservedShare, boolean borrow, TenantFairQueue<T> queue) {
    public QueueClass {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(queue, "queue");
      if (rank < 0) {
        throw new IllegalArgumentException("rank: " + rank + " (expected: >= 0)");
      }
      if (!(reservedShare >= 0 && reservedShare <= 1)) {
        throw new IllegalArgumentException(
            "reservedShare: " + reservedShare + " (expected: >= 0 and <= 1)");
      }
    }
  }

  /**
   * The admission controller's view of one pool. Class indexes are positions in the list given to
   * the scheduler's constructor.
   */
  public interface PoolLedger<T> {
    /** Pool capacity in work units in flight. */
    long capacityWorkUnits();

    /** Work units in flight in the pool (all classes). */
    long inFlightWorkUnits();

    /** Work units in flight for one class. */
    long inFlightWorkUnits(int classIndex);

    /**
     * Takes the permit for {@code item} (charged to {@code lane}) and answers it CONTINUE. Called
     * only after the scheduler's capacity checks passed; return false to refuse for another reason
     * (for example a request-count cap), which leaves the item queued.
     */
    boolean admit(int classIndex, QueuedItem<T> item, Lane lane);

    /**
     * The work {@code item} would start with now, at most its queued work (a queued request may ask
     * for less by the time it starts: its output reserve re-estimated); what the capacity checks
     * fit. The default: its queued work.
     */
    default long workNow(int classIndex, QueuedItem<T> item) {
      return item.workUnits();
    }

    /**
     * Request slots the pool may still start: its request cap less the requests in flight; {@code
     * Long.MAX_VALUE} when it caps no requests (the default).
     */
    default long freeRequests() {
      return Long.MAX_VALUE;
    }

    /**
     * Request slots class {@code classIndex} may still start within its reserved share of the
     * request cap (may be negative when it borrowed); {@code Long.MAX_VALUE} when the pool caps no
     * requests (the default).
     */
    default long requestHeadroom(int classIndex) {
      return Long.MAX_VALUE;
    }
  }

  /** An item started by {@link #drain}. */
  public record Admitted<T>(int classIndex, QueuedItem<T> item, Lane lane) {}

  /** An item that expired while waiting: answer 503 {@code queue_timeout}. */
  public record Expired<T>(int classIndex, QueuedItem<T> item) {}

  /** Result of {@link #drain}. */
  public record Drain<T>(List<Admitted<T>> admitted, List<Expired<T>> expired) {
    public Drain {
      admitted = List.copyOf(admitted);
      expired = List.copyOf(expired);
    }
  }

  private final List<QueueClass<T>> classes;
  private final int[] order;

  /** {@code order[groupStart[g] .. groupStart[g + 1])} are the classes of the g-th rank. */
  private final int[] groupStart;

  /** Scratch for {@link #startOne}: classes already tried in the current step. */
  private final boolean[] tried;

  public ClassScheduler(List<QueueClass<T>> classes) {
    this.classes = List.copyOf(classes);
    if (this.classes.isEmpty()) {
      throw new IllegalArgumentException("classes: [] (expected: at least one class)");
    }
    double sum = this.classes.stream().mapToDouble(QueueClass::reservedShare).sum();
    if (sum > 1 + 1e-9) {
      throw new IllegalArgumentException("reservedShare: sum " + sum + " (expected: <= 1)");
    }
    this.order =
        IntStream.range(0, this.classes.size())
            .boxed()
            .sorted(Comparator.comparingInt((Integer i) -> this.classes.get(i).rank()))
            .mapToInt(Integer::intValue)
            .toArray();
    int groups = 0;
    int[] starts = new int[order.length + 1];
    for (int i = 0; i < order.length; i++) {
      if (i == 0 || this.classes.get(order[i]).rank() != this.classes.get(order[i - 1]).rank()) {
        starts[groups++] = i;
      }
    }
    starts[groups] = order.length;
    this.groupStart = java.util.Arrays.copyOf(starts, groups + 1);
    this.tried = new boolean[this.classes.size()];
  }

  public int classCount() {
    return classes.size();
  }

  public QueueClass<T> queueClass(int classIndex) {
    return classes.get(classIndex);
  }

  /**
   * True when any class of rank {@code <= rank} (equal or higher priority) has waiting items. Rule
   * 2: a new request starts at once only if this is false for its class. Call {@link #expire(long)}
   * first so expired items do not count.
   */
  public boolean hasWaitingAtOrAbove(int rank) {
    for (int i = 0; i < classes.size(); i++) { // indexed: no iterator per decision
      QueueClass<T> c = classes.get(i);
      if (c.rank() <= rank && !c.queue().isEmpty()) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether a new request of class {@code classIndex} with {@code workUnits} may start now without
   * queueing, and in which lane: empty if a class of equal or higher priority is waiting or the
   * capacity rules above do not allow it. Does not take the permit.
   */
  public Optional<Lane> startLane(int classIndex, long workUnits, PoolLedger<T> ledger) {
    QueueClass<T> c = classes.get(classIndex);
    if (hasWaitingAtOrAbove(c.rank())) {
      return Optional.empty();
    }
    return Optional.ofNullable(lane(classIndex, workUnits, ledger));
  }

  /**
   * Whether a new request of class {@code classIndex} would be started by the reserved step (1) the
   * moment it were queued: its own class has nothing waiting and {@code workUnits} fit the class's
   * reserve (work units and request slots) and what is free. Step 1 does not wait for other
   * classes' heads, so such a request starts at once even when classes of equal or higher rank
   * wait; after a {@link #drain} none of their heads fits its own reserve, so none would have gone
   * first. Does not take the permit.
   */
  public boolean startsInReserve(int classIndex, long workUnits, PoolLedger<T> ledger) {
    return classes.get(classIndex).queue().isEmpty() && fitsReserved(classIndex, workUnits, ledger);
  }

  /** Removes expired items of every class (for the caller's timer). */
  public List<Expired<T>> expire(long nowNanos) {
    List<Expired<T>> expired = new ArrayList<>();
    for (int k = 0; k < classes.size(); k++) {
      for (QueuedItem<T> item : classes.get(k).queue().expire(nowNanos)) {
        expired.add(new Expired<>(k, item));
      }
    }
    return expired;
  }

  /** Earliest expiry across all class queues, for one timer per pool. */
  public OptionalLong nextExpiryNanos() {
    OptionalLong next = OptionalLong.empty();
    for (QueueClass<T> c : classes) {
      OptionalLong n = c.queue().nextExpiryNanos();
      if (n.isPresent() && (next.isEmpty() || n.getAsLong() - next.getAsLong() < 0)) {
        next = n;
      }
    }
    return next;
  }

  /**
   * Expires what is due, then keeps starting waiting items while the ledger has room, by the rules
   * in the class comment. Call it whenever capacity frees (release) or an item is queued.
   */
  public Drain<T> drain(long nowNanos, PoolLedger<T> ledger) {
    List<Expired<T>> expired = expire(nowNanos);
    List<Admitted<T>> admitted = new ArrayList<>();
    while (startOne(nowNanos, ledger, admitted)) {
      // keep going until nothing more fits
    }
    return new Drain<>(admitted, expired);
  }

  private boolean startOne(long nowNanos, PoolLedger<T> ledger, List<Admitted<T>> admitted) {
    // 1. reserved shares, by rank; equal ranks by arrival of their heads
    for (int g = 0; g < groupStart.length - 1; g++) {
      int from = groupStart[g];
      int to = groupStart[g + 1];
      clearTried(from, to);
      for (int k = earliestUntried(from, to, false); k >= 0; k = earliestUntried(from, to, false)) {
        tried[k] = true;
        QueuedItem<T> head = waitingHead(k);
        if (fitsReserved(k, workNow(k, head, ledger), ledger)
            && start(k, head, Lane.RESERVED, nowNanos, ledger, admitted)) {
          return true;
        }
      }
    }
    // 2. lend idle capacity, by rank and, at equal rank, by arrival of the heads: the first
    // borrower in that order whose head does not fit stops lending, so nobody of lower rank or
    // later arrival overtakes it (large items do not starve)
    for (int g = 0; g < groupStart.length - 1; g++) {
      int from = groupStart[g];
      int to = groupStart[g + 1];
      clearTried(from, to);
      int k = earliestUntried(from, to, true);
      if (k < 0) {
        continue;
      }
      QueuedItem<T> head = waitingHead(k);
      return fitsBorrowed(k, workNow(k, head, ledger), ledger)
          && start(k, head, Lane.BORROWED, nowNanos, ledger, admitted);
    }
    return false;
  }

  private void clearTried(int from, int to) {
    for (int i = from; i < to; i++) {
      tried[order[i]] = false;
    }
  }

  /**
   * The class among {@code order[from..to)} (one rank) whose head arrived first and that was not
   * tried yet (ties: the lower item id, i.e. the earlier ticket); only borrowers when {@code
   * borrowersOnly}; -1 if none has a head.
   */
  private int earliestUntried(int from, int to, boolean borrowersOnly) {
    int best = -1;
    QueuedItem<T> bestHead = null;
    for (int i = from; i < to; i++) {
      int k = order[i];
      if (tried[k] || (borrowersOnly && !classes.get(k).borrow())) {
        continue;
      }
      QueuedItem<T> head = head(k);
      if (head != null && (bestHead == null || arrivedBefore(head, bestHead))) {
        best = k;
        bestHead = head;
      }
    }
    return best;
  }

  private static boolean arrivedBefore(QueuedItem<?> a, QueuedItem<?> b) {
    long d = a.enqueuedAtNanos() - b.enqueuedAtNanos();
    return d < 0 || (d == 0 && a.id() < b.id());
  }

  /** The head of class {@code k}'s queue, or null when it is empty. */
  private @Nullable QueuedItem<T> head(int k) {
    return classes.get(k).queue().peek().orElse(null);
  }

  /** The head of class {@code k}'s queue, which {@link #earliestUntried} found waiting. */
  private QueuedItem<T> waitingHead(int k) {
    return classes.get(k).queue().peek().orElseThrow();
  }

  private boolean start(
      int k,
      QueuedItem<T> head,
      Lane lane,
      long nowNanos,
      PoolLedger<T> ledger,
      List<Admitted<T>> admitted) {
    if (!ledger.admit(k, head, lane)) {
      return false;
    }
    Poll<T> poll = classes.get(k).queue().poll(nowNanos);
    // expire(now) already ran with the same now, so the head is what poll returns
    if (poll.item() != head || !poll.expired().isEmpty()) {
      throw new IllegalStateException("queue head changed during drain of class " + k);
    }
    admitted.add(new Admitted<>(k, head, lane));
    return true;
  }

  /** The head's work as it would start now: never above what it queued with. */
  private static <T> long workNow(int k, QueuedItem<T> head, PoolLedger<T> ledger) {
    return Math.min(head.workUnits(), ledger.workNow(k, head));
  }

  private @Nullable Lane lane(int k, long work, PoolLedger<T> ledger) {
    if (fitsReserved(k, work, ledger)) {
      return Lane.RESERVED;
    }
    if (classes.get(k).borrow() && fitsBorrowed(k, work, ledger)) {
      return Lane.BORROWED;
    }
    return null;
  }

  private boolean fitsReserved(int k, long work, PoolLedger<T> ledger) {
    return work <= headroom(k, ledger)
        && work <= free(ledger)
        && ledger.requestHeadroom(k) >= 1
        && ledger.freeRequests() >= 1;
  }

  private boolean fitsBorrowed(int k, long work, PoolLedger<T> ledger) {
    return work <= free(ledger) - protectedFor(k, ledger)
        && ledger.freeRequests() - protectedRequestsFor(k, ledger) >= 1;
  }

  /** Request slots the other waiting classes below their request reserve are entitled to. */
  private long protectedRequestsFor(int k, PoolLedger<T> ledger) {
    long sum = 0;
    for (int j = 0; j < classes.size(); j++) {
      TenantFairQueue<T> q = classes.get(j).queue();
      if (j != k && !q.isEmpty()) {
        sum += Math.max(0, Math.min(ledger.requestHeadroom(j), q.depth()));
      }
    }
    return sum;
  }

  /** Capacity the other waiting classes below their reserve are entitled to. */
  private long protectedFor(int k, PoolLedger<T> ledger) {
    long sum = 0;
    for (int j = 0; j < classes.size(); j++) {
      if (j == k) {
        continue;
      }
      TenantFairQueue<T> q = classes.get(j).queue();
      if (!q.isEmpty()) {
        sum += Math.max(0, Math.min(headroom(j, ledger), q.queuedWork()));
      }
    }
    return sum;
  }

  /** {@code reserve_k - inFlight_k}; may be negative when the class borrowed. */
  public long headroom(int k, PoolLedger<T> ledger) {
    return reserve(k, ledger) - ledger.inFlightWorkUnits(k);
  }

  /** {@code floor(reservedShare_k * capacity)}. */
  public long reserve(int k, PoolLedger<T> ledger) {
    return (long) Math.floor(classes.get(k).reservedShare() * (double) ledger.capacityWorkUnits());
  }

  private static long free(PoolLedger<?> ledger) {
    return ledger.capacityWorkUnits() - ledger.inFlightWorkUnits();
  }
}
