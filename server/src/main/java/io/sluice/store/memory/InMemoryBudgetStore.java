package io.sluice.store.memory;

import io.sluice.core.budget.BudgetStore;
import io.sluice.core.budget.Ledger;
import io.sluice.core.budget.Period;
import io.sluice.core.budget.Terms;
import java.time.Instant;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link BudgetStore} of one replica: each budget key's state in one map, bounded by {@code
 * maxEntries} (the least recently used key goes first: its spend is forgotten), one lock making
 * each call one atomic step, as the Redis script is. A calendar window's state starts afresh when
 * the window changes; a rolling window keeps its spend per slice and sums the last ones.
 */
public final class InMemoryBudgetStore implements BudgetStore {
  private final Object lock = new Object();
  private final LinkedHashMap<String, Entry> entries = new LinkedHashMap<>(64, 0.75f, true);
  private volatile int maxEntries;

  public InMemoryBudgetStore(int maxEntries) {
    this.maxEntries = Math.max(1, maxEntries);
  }

  /** Follows the policy's bound (the least recently used keys go first). */
  public void resize(int maxEntries) {
    this.maxEntries = Math.max(1, maxEntries);
    synchronized (lock) {
      trim();
    }
  }

  /** The number of keys held (tests). */
  public int size() {
    synchronized (lock) {
      return entries.size();
    }
  }

  private static final class Entry {
    String window = "";
    long spent; // calendar: the window's spend
    long reserved;
    double pace;
    long paceAt;
    int announced = -1;
    final TreeMap<Long, Long> slices = new TreeMap<>(); // rolling: spend by slice index
  }

  @Override
  public CompletionStage<Ledger.Outcome> reserve(
      String key, Period period, Terms terms, long cost, Instant now) {
    synchronized (lock) {
      Entry e = entry(key);
      Period.Window w = period.at(now);
      Ledger.State s = state(e, period, w, terms, now);
      Ledger.Outcome o = Ledger.reserve(s, cost, terms, w, now);
      write(e, next(o));
      return CompletableFuture.completedFuture(o);
    }
  }

  @Override
  public CompletionStage<Integer> settle(
      String key,
      Period period,
      String windowId,
      Terms terms,
      long reserved,
      long actual,
      Instant now) {
    synchronized (lock) {
      Entry e = entry(key);
      Period.Window w = period.at(now);
      Ledger.State s = state(e, period, w, terms, now);
      // a calendar window that is over: the spend counts in the current one, nothing reserved here
      long held = period instanceof Period.Rolling || w.id().equals(windowId) ? reserved : 0;
      Ledger.State next = Ledger.reconcile(s, held, actual, terms);
      if (period instanceof Period.Rolling r) {
        e.slices.merge(r.sliceIndex(now), actual, Math::addExact);
      } else {
        e.spent = next.spent();
      }
      write(e, next);
      return CompletableFuture.completedFuture(
          next.announced() > s.announced() ? next.announced() : -1);
    }
  }

  @Override
  public CompletionStage<Ledger.State> read(String key, Period period, Terms terms, Instant now) {
    synchronized (lock) {
      Entry e = entries.get(key);
      if (e == null) {
        return CompletableFuture.completedFuture(Ledger.State.FRESH);
      }
      return CompletableFuture.completedFuture(state(e, period, period.at(now), terms, now));
    }
  }

  private Entry entry(String key) {
    Entry e = entries.get(key);
    if (e == null) {
      e = new Entry();
      entries.put(key, e);
      trim();
    }
    return e;
  }

  private void trim() {
    Iterator<Map.Entry<String, Entry>> it = entries.entrySet().iterator();
    while (entries.size() > maxEntries && it.hasNext()) {
      it.next();
      it.remove();
    }
  }

  /** The entry's state in window {@code w}: a new calendar window starts fresh. */
  private static Ledger.State state(
      Entry e, Period period, Period.Window w, Terms terms, Instant now) {
    if (period instanceof Period.Rolling r) {
      long oldest = r.sliceIndex(now) - r.slices() + 1;
      e.slices.headMap(oldest).clear();
      long spent = 0;
      for (long v : e.slices.values()) {
        spent = saturatedAdd(spent, v);
      }
      e.spent = spent;
      e.window = w.id();
      // a threshold is announced again once the rolling spend fell below it
      e.announced = Math.min(e.announced, terms.thresholdReached(spent + e.reserved));
    } else if (!w.id().equals(e.window)) {
      e.window = w.id();
      e.spent = 0;
      e.reserved = 0;
      e.pace = 0;
      e.paceAt = 0;
      e.announced = -1;
    }
    return new Ledger.State(e.spent, e.reserved, e.pace, e.paceAt, e.announced);
  }

  /** The state an outcome leaves. */
  static Ledger.State next(Ledger.Outcome o) {
    if (o instanceof Ledger.Outcome.Admit a) {
      return a.next();
    }
    if (o instanceof Ledger.Outcome.Wait w) {
      return w.next();
    }
    return ((Ledger.Outcome.Exhausted) o).next();
  }

  private static void write(Entry e, Ledger.State s) {
    e.reserved = s.reserved();
    e.pace = s.pace();
    e.paceAt = s.paceAtMillis();
    e.announced = s.announced();
  }

  private static long saturatedAdd(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }
}
