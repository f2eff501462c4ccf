package io.sluice.core.budget;

import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * What this replica could not tell the shared store while it did not answer, written to the store
 * once it answers again, so that the period's total is right afterwards: the spend of requests let
 * through without a reservation (failure mode {@code open}) or reserved on the local share ({@code
 * local}), and the settles of store reservations that failed.
 *
 * <p>By reservation id ({@link BudgetStore.Hold}): a call that timed out may still have run in the
 * store. A reserve that timed out is followed by the settle of its id, its reserve's fate unknown
 * (the store takes back what the id holds, if the reserve ran, and counts the spend once); a settle
 * that timed out is sent again under its id (the store ignores it if the first one ran). So nothing
 * leaks until the window's end and nothing counts twice.
 *
 * <p>When: at the next store call that answers (traffic), on an idle timer while anything is owed
 * ({@link #flushWhileOwed}: a replica that sees no request after an outage still writes what it
 * owes), and at drain ({@link #drain}).
 *
 * <p>Bounded: at most {@code maxEntries} reservations are owed (a budget's owner is a tenant, a
 * client's choice); past that the spend is dropped and counted ({@link BudgetEvents#writeBack}).
 * The reservations owed are counted per budget ({@link BudgetEvents#owed}). Kept across a hot
 * reload: the feature hands the next snapshot's book the same write-back for the same store ({@link
 * BudgetBook#writeBack()}).
 *
 * <p>Concurrency: a concurrent map of immutable entries; a flush takes each entry out before
 * writing it and adds it back when the write fails; one flush at a time.
 */
public final class WriteBack {
  /** What is owed for one reservation: its hold to settle, the units spent. */
  record Owed(BudgetPolicy.Applied applied, String key, BudgetStore.Hold hold, long actual) {
    Owed plus(Owed o) {
      BudgetStore.Hold h = hold;
      return new Owed(
          applied,
          key,
          new BudgetStore.Hold(
              h.id(), h.windowId(), h.units(), h.answered() && o.hold().answered()),
          actual + o.actual);
    }
  }

  /** Where and how often the idle timer writes ({@link #flushWhileOwed}). */
  private record Idle(BudgetStore store, Clock clock, Delay delay, long everyMillis) {}

  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  private final ConcurrentHashMap<String, Owed> owed = new ConcurrentHashMap<>();
  private final AtomicBoolean flushing = new AtomicBoolean();
  private final AtomicBoolean ticking = new AtomicBoolean(); // the idle timer is armed
  private volatile int maxEntries;
  private final BudgetEvents events;
  private volatile @Nullable Idle idle;
  private volatile boolean closed;
  private volatile CompletableFuture<Void> current = DONE; // the flush running, or done

  /**
   * @param maxEntries the most reservations owed at a time ({@code budgets.maxEntries})
   * @param events told of each write (written or dropped) and of what is owed
   */
  public WriteBack(int maxEntries, BudgetEvents events) {
    this.maxEntries = Math.max(1, maxEntries);
    this.events = events;
  }

  /** Follows a reloaded policy's bound (what is owed already stays owed). */
  public void resize(int maxEntries) {
    this.maxEntries = Math.max(1, maxEntries);
  }

  /**
   * Writes what is owed to {@code store} on {@code delay}'s timer, every {@code everyMillis}, while
   * anything is owed (no timer is armed while nothing is): first one owed write (so that a store
   * still down gets one call a tick, not one per reservation owed), then, once it answered, the
   * rest. Until {@link #drain}.
   */
  public void flushWhileOwed(BudgetStore store, Clock clock, Delay delay, long everyMillis) {
    idle = new Idle(store, clock, delay, Math.max(1, everyMillis));
    arm();
  }

  /** Owes the settle of {@code hold} on {@code key}, {@code actual} units spent. */
  void owe(String key, BudgetPolicy.Applied a, BudgetStore.Hold hold, long actual) {
    Owed o = new Owed(a, key, hold, Math.max(0, actual));
    String k = key + '\n' + hold.id();
    if (owed.size() >= maxEntries && !owed.containsKey(k)) {
      events.writeBack(a, o.actual(), false);
      return;
    }
    if (add(k, o)) {
      events.owed(a, 1);
    }
    arm();
  }

  /** Adds {@code o} under {@code k}: true when it is a new entry, false merged into one. */
  private boolean add(String k, Owed o) {
    boolean[] added = {false};
    owed.compute(
        k,
        (x, old) -> {
          added[0] = old == null;
          return old == null ? o : old.plus(o);
        });
    return added[0];
  }

  /** Whether anything is owed. */
  public boolean isEmpty() {
    return owed.isEmpty();
  }

  /** The number of reservations owed. */
  public int size() {
    return owed.size();
  }

  /** Writes what is owed to {@code store} (it answered again); a failed write stays owed. */
  CompletableFuture<Void> flush(BudgetStore store, Instant now) {
    if (owed.isEmpty() || !flushing.compareAndSet(false, true)) {
      return current;
    }
    List<String> keys = new ArrayList<>(owed.keySet()); // those owed again are not retried now
    List<CompletableFuture<Boolean>> writes = new ArrayList<>(keys.size());
    CompletableFuture<Void> all;
    try {
      for (String k : keys) {
        Owed o = owed.remove(k);
        if (o != null) {
          writes.add(write(store, k, o, now));
        }
      }
    } finally {
      all =
          CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new))
              .handle(
                  (v, err) -> {
                    flushing.set(false); // before anything waiting on it runs
                    return (Void) null;
                  });
      current = all;
    }
    return all;
  }

  /** One owed write: true written; false, owed again (the store did not answer). */
  private CompletableFuture<Boolean> write(BudgetStore store, String k, Owed o, Instant now) {
    Budget b = o.applied().budget();
    return store
        .settle(o.key(), b.period(), b.terms(), o.hold(), o.actual(), now)
        .toCompletableFuture()
        .handle(
            (announce, err) -> {
              if (err != null) {
                if (!add(k, o)) { // owed again meanwhile: the two are one entry now
                  events.owed(o.applied(), -1);
                }
                arm();
                return false;
              }
              events.owed(o.applied(), -1);
              events.writeBack(o.applied(), o.actual(), true);
              if (announce != null && announce >= 0) {
                events.crossed(o.applied(), b.terms().thresholds().get(announce));
              }
              return true;
            });
  }

  /** Arms the idle timer if it is set, something is owed and it is not armed yet. */
  private void arm() {
    Idle i = idle;
    if (i == null || closed || owed.isEmpty() || !ticking.compareAndSet(false, true)) {
      return;
    }
    var unused = i.delay().after(i.everyMillis()).whenComplete((v, err) -> tick(i));
  }

  /** The idle timer fired: one owed write, then the rest once the store answered it. */
  private void tick(Idle i) {
    CompletableFuture<Void> done = closed ? DONE : probe(i.store(), i.clock().instant());
    var unused =
        done.whenComplete(
            (v, err) -> {
              ticking.set(false);
              arm(); // again while anything is owed
            });
  }

  private CompletableFuture<Void> probe(BudgetStore store, Instant now) {
    if (owed.isEmpty() || !flushing.compareAndSet(false, true)) {
      return DONE;
    }
    Iterator<String> keys = owed.keySet().iterator();
    String k = keys.hasNext() ? keys.next() : "";
    Owed o = k.isEmpty() ? null : owed.remove(k);
    if (o == null) {
      flushing.set(false);
      return DONE;
    }
    CompletableFuture<Void> probed =
        write(store, k, o, now)
            .thenCompose(
                written -> {
                  flushing.set(false);
                  return written ? flush(store, now) : DONE;
                });
    current = probed;
    return probed;
  }

  /**
   * The process ends: the idle timer stops and what is owed is written now to the store of {@link
   * #flushWhileOwed} (the flush running, if any, first; nothing when it was not set). Completes
   * once the writes answered (a failed one stays owed: lost with the process, counted in {@link
   * BudgetEvents#owed} until then).
   */
  public CompletableFuture<Void> drain() {
    closed = true;
    Idle i = idle;
    if (i == null) {
      return DONE;
    }
    return current
        .handle((v, err) -> (Void) null)
        .thenCompose(v -> flush(i.store(), i.clock().instant()));
  }
}
