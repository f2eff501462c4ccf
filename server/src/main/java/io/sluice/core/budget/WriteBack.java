package io.sluice.core.budget;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

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
 * <p>Bounded: at most {@code maxEntries} reservations are owed (a budget's owner is a tenant, a
 * client's choice); past that the spend is dropped and counted ({@link BudgetEvents#writeBack}).
 * Kept across a hot reload: the feature hands the next snapshot's book the same write-back for the
 * same store ({@link BudgetBook#writeBack()}).
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

  private final ConcurrentHashMap<String, Owed> owed = new ConcurrentHashMap<>();
  private final AtomicBoolean flushing = new AtomicBoolean();
  private volatile int maxEntries;
  private final BudgetEvents events;

  /**
   * @param maxEntries the most reservations owed at a time ({@code budgets.maxEntries})
   * @param events told of each write (written or dropped)
   */
  public WriteBack(int maxEntries, BudgetEvents events) {
    this.maxEntries = Math.max(1, maxEntries);
    this.events = events;
  }

  /** Follows a reloaded policy's bound (what is owed already stays owed). */
  public void resize(int maxEntries) {
    this.maxEntries = Math.max(1, maxEntries);
  }

  /** Owes the settle of {@code hold} on {@code key}, {@code actual} units spent. */
  void owe(String key, BudgetPolicy.Applied a, BudgetStore.Hold hold, long actual) {
    Owed o = new Owed(a, key, hold, Math.max(0, actual));
    String k = key + '\n' + hold.id();
    if (owed.size() >= maxEntries && !owed.containsKey(k)) {
      events.writeBack(a, o.actual(), false);
      return;
    }
    owed.merge(k, o, Owed::plus);
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
  void flush(BudgetStore store, Instant now) {
    if (owed.isEmpty() || !flushing.compareAndSet(false, true)) {
      return;
    }
    List<CompletableFuture<?>> writes = new ArrayList<>();
    try {
      for (String k : owed.keySet()) {
        Owed o = owed.remove(k);
        if (o == null) {
          continue;
        }
        Budget b = o.applied().budget();
        writes.add(
            store
                .settle(o.key(), b.period(), b.terms(), o.hold(), o.actual(), now)
                .toCompletableFuture()
                .whenComplete(
                    (announce, err) -> {
                      if (err != null) {
                        owed.merge(k, o, Owed::plus);
                      } else {
                        events.writeBack(o.applied(), o.actual(), true);
                        if (announce != null && announce >= 0) {
                          events.crossed(o.applied(), b.terms().thresholds().get(announce));
                        }
                      }
                    }));
      }
    } finally {
      var unused =
          CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new))
              .whenComplete((v, err) -> flushing.set(false));
    }
  }
}
