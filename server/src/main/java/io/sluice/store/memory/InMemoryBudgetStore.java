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
import org.jspecify.annotations.Nullable;

/**
 * {@link BudgetStore} of one replica: each budget key's state in one map, bounded by {@code
 * maxEntries} (the least recently used key goes first: its spend is forgotten), one lock making
 * each call one atomic step, as the Redis script is. A calendar window's state starts afresh when
 * the window changes; a rolling window keeps its spend per slice and sums the last ones.
 * Reservation ids ({@link BudgetStore.Hold}) are kept per key, each until the window it was taken
 * in ends (a rolling one: its length after), as the Redis store's are.
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
    // reservation ids (ours, never a client's): units held, or SETTLED; oldest first
    final LinkedHashMap<String, long[]> ids = new LinkedHashMap<>();

    /** The id's {units, expires at ms}, dropping the ids expired at {@code now} first. */
    long @Nullable [] id(String id, Instant now) {
      Iterator<long[]> it = ids.values().iterator();
      while (it.hasNext() && it.next()[1] <= now.toEpochMilli()) {
        it.remove();
      }
      return ids.get(id);
    }
  }

  private static final long SETTLED = -1;
  private static final long GRACE_MILLIS = java.time.Duration.ofDays(1).toMillis();

  /** When an id taken in {@code w} expires: its window's end plus a day (rolling: its length). */
  private static long expiry(Period period, Period.Window w, Instant now) {
    return period instanceof Period.Rolling r
        ? now.toEpochMilli() + r.length().toMillis() + r.slice().toMillis()
        : w.end().toEpochMilli() + GRACE_MILLIS;
  }

  @Override
  public CompletionStage<Ledger.Outcome> reserve(
      String key, @Nullable String id, Period period, Terms terms, long cost, Instant now) {
    synchronized (lock) {
      Entry e = entry(key);
      Period.Window w = period.at(now);
      Ledger.State s = state(e, period, w, terms, now);
      String wid = id == null ? null : w.id() + '\n' + id; // ids are kept per window
      long[] known = wid == null ? null : e.id(wid, now);
      if (known != null) { // held: the same admission; settled: it holds nothing
        return CompletableFuture.completedFuture(
            new Ledger.Outcome.Admit(
                s, Math.max(0, known[0]), terms.limit() - s.spent() - s.reserved(), -1));
      }
      Ledger.Outcome o = Ledger.reserve(s, cost, terms, w, now);
      write(e, next(o));
      if (wid != null && o instanceof Ledger.Outcome.Admit a) {
        e.ids.put(wid, new long[] {a.cost(), expiry(period, w, now)});
      }
      return CompletableFuture.completedFuture(o);
    }
  }

  @Override
  public CompletionStage<Integer> settle(
      String key, Period period, Terms terms, Hold hold, long actual, Instant now) {
    synchronized (lock) {
      Entry e = entry(key);
      Period.Window w = period.at(now);
      Ledger.State s = state(e, period, w, terms, now);
      long reserved = hold.units();
      String id = hold.id() == null ? null : hold.windowId() + '\n' + hold.id();
      if (id != null) {
        long[] known = e.id(id, now);
        if ((known == null && hold.answered()) || (known != null && known[0] == SETTLED)) {
          return CompletableFuture.completedFuture(-1); // settled already
        }
        reserved = known == null ? 0 : known[0];
        if (hold.answered()) {
          e.ids.remove(id);
        } else {
          e.ids.remove(id); // re-inserted last: the newest expiry
          e.ids.put(id, new long[] {SETTLED, expiry(period, w, now)});
        }
      }
      // a calendar window that is over: the spend counts in the current one, nothing reserved here
      long held = period instanceof Period.Rolling || w.id().equals(hold.windowId()) ? reserved : 0;
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
  public CompletionStage<Long> shrink(
      String key, Period period, Terms terms, Hold hold, long units, Instant now) {
    synchronized (lock) {
      Entry e = hold.id() == null ? null : entries.get(key);
      if (e == null) {
        return CompletableFuture.completedFuture(0L);
      }
      Period.Window w = period.at(now);
      Ledger.State s = state(e, period, w, terms, now);
      long[] known = e.id(hold.windowId() + '\n' + hold.id(), now);
      long target = Math.max(0, units);
      if (known == null
          || known[0] <= target // SETTLED (-1) included
          || !(period instanceof Period.Rolling || w.id().equals(hold.windowId()))) {
        return CompletableFuture.completedFuture(0L);
      }
      long by = known[0] - target;
      known[0] = target;
      write(e, Ledger.shrink(s, by, terms));
      return CompletableFuture.completedFuture(by);
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
