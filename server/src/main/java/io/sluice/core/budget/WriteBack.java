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
 * local}), and the settles of store reservations that failed (their reservation is taken back then,
 * or it would hold the budget until the window ends).
 *
 * <p>Bounded: at most {@code maxEntries} budget windows are owed (a budget's owner is a tenant, a
 * client's choice); past that the spend is dropped and counted ({@link BudgetEvents#writeBack}).
 *
 * <p>Concurrency: a concurrent map of immutable sums; a flush takes each entry out before writing
 * it and adds it back when the write fails; one flush at a time.
 */
final class WriteBack {
  /** What is owed to one budget's window: reservations to take back, units spent. */
  record Owed(BudgetPolicy.Applied applied, String windowId, long reserved, long actual) {
    Owed plus(Owed o) {
      return new Owed(applied, windowId, reserved + o.reserved, actual + o.actual);
    }
  }

  private final ConcurrentHashMap<String, Owed> owed = new ConcurrentHashMap<>();
  private final AtomicBoolean flushing = new AtomicBoolean();
  private final int maxEntries;
  private final BudgetEvents events;

  WriteBack(int maxEntries, BudgetEvents events) {
    this.maxEntries = Math.max(1, maxEntries);
    this.events = events;
  }

  /** Owes {@code actual} spent and {@code reserved} to take back on {@code key}'s window. */
  void owe(String key, BudgetPolicy.Applied a, String windowId, long reserved, long actual) {
    if (reserved <= 0 && actual <= 0) {
      return;
    }
    Owed o = new Owed(a, windowId, Math.max(0, reserved), Math.max(0, actual));
    String k = key + '\n' + windowId;
    if (owed.size() >= maxEntries && !owed.containsKey(k)) {
      events.writeBack(a, o.actual(), false);
      return;
    }
    owed.merge(k, o, Owed::plus);
  }

  /** Whether anything is owed. */
  boolean isEmpty() {
    return owed.isEmpty();
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
        String key = k.substring(0, k.lastIndexOf('\n'));
        writes.add(
            store
                .settle(key, b.period(), o.windowId(), b.terms(), o.reserved(), o.actual(), now)
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
